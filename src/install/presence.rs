//! Is a host really installed here? Its program on `PATH`, or a user config
//! dir with something in it. An empty config dir is not a host: `install.sh`
//! used to take a bare `~/.codebuddy` for CodeBuddy and install hooks that
//! could never fire (issue 25). The programs are data: `binaries` in
//! [`crate::hosts::profile`].

use crate::base::host::Host;
use std::path::{Path, PathBuf};

/// What the host's user config dir is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DirSeen {
    Missing,
    /// A file (or something else) where the dir goes.
    NotADir,
    Empty,
    /// Holds at least one entry.
    Used,
}

/// Whether the host is here, and the evidence (for people).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Presence {
    /// Its program is on `PATH`.
    Binary(PathBuf),
    /// Its config dir holds something.
    Config(PathBuf),
    /// Neither: why it is taken to be absent.
    Absent(String),
}

impl Presence {
    pub fn found(&self) -> bool {
        !matches!(self, Presence::Absent(_))
    }

    /// Why the host counts as found, or as not found.
    pub fn why(&self) -> String {
        match self {
            Presence::Binary(p) => format!("found {}", p.display()),
            Presence::Config(d) => format!("found its config in {}", d.display()),
            Presence::Absent(why) => why.clone(),
        }
    }
}

/// The pure rule: a program on PATH, else a config dir in use.
pub fn decide(host: Host, binary: Option<PathBuf>, dir: &Path, seen: DirSeen) -> Presence {
    let p = crate::hosts::profile::profile(host);
    if let Some(b) = binary {
        return Presence::Binary(b);
    }
    let programs = p.binaries.join(" or ");
    match seen {
        DirSeen::Used => Presence::Config(dir.to_path_buf()),
        DirSeen::Empty => Presence::Absent(format!("{programs} is not on PATH and {} is empty", dir.display())),
        DirSeen::NotADir => Presence::Absent(format!("{programs} is not on PATH and {} is not a dir", dir.display())),
        DirSeen::Missing => Presence::Absent(format!("{programs} is not on PATH and there is no {}", dir.display())),
    }
}

/// Look: `PATH` for the host's programs, and its user config dir `dir`.
pub fn detect(host: Host, dir: &Path) -> Presence {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let binary = crate::hosts::profile::profile(host).binaries.iter().find_map(|b| crate::fsx::find_on_path(b, &path));
    let seen = match std::fs::metadata(dir) {
        Err(_) => DirSeen::Missing,
        Ok(md) if !md.is_dir() => DirSeen::NotADir,
        // Unreadable: something is there; the install says what fails.
        Ok(_) => match std::fs::read_dir(dir).map(|mut d| d.next().is_none()) {
            Ok(true) => DirSeen::Empty,
            _ => DirSeen::Used,
        },
    };
    decide(host, binary, dir, seen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_or_a_used_config_dir_is_a_host_an_empty_dir_is_not() {
        let d = Path::new("/h/.codebuddy");
        let bin = || Some(PathBuf::from("/usr/bin/codebuddy"));
        let table = [
            (bin(), DirSeen::Missing, true, "found /usr/bin/codebuddy"),
            (bin(), DirSeen::Empty, true, "found /usr/bin/codebuddy"),
            (None, DirSeen::Used, true, "found its config in /h/.codebuddy"),
            (None, DirSeen::Empty, false, "codebuddy is not on PATH and /h/.codebuddy is empty"),
            (None, DirSeen::Missing, false, "codebuddy is not on PATH and there is no /h/.codebuddy"),
            (None, DirSeen::NotADir, false, "codebuddy is not on PATH and /h/.codebuddy is not a dir"),
        ];
        for (b, seen, found, why) in table {
            let p = decide(Host::CodeBuddy, b, d, seen);
            assert_eq!((p.found(), p.why().as_str()), (found, why), "{seen:?}");
        }
        let cursor = decide(Host::Cursor, None, Path::new("/h/.cursor"), DirSeen::Missing);
        assert!(cursor.why().starts_with("cursor or cursor-agent is not on PATH"), "{cursor:?}");
    }

    #[cfg(unix)]
    #[test]
    fn only_an_executable_file_on_path_counts() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let (a, b) = (t.path().join("a"), t.path().join("b"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(b.join("claude")).unwrap(); // a dir of that name
        std::fs::write(a.join("claude"), "").unwrap();
        let path = std::env::join_paths([&b, &a]).unwrap();
        assert_eq!(crate::fsx::find_on_path("claude", &path), None, "not executable");
        std::fs::set_permissions(a.join("claude"), std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(crate::fsx::find_on_path("claude", &path), Some(a.join("claude")));
    }
}
