//! What leanctx finds installed in a host's hook config: our entries,
//! whether they are current, which programs they run.

use super::spec::Spec;
use super::target::{self, Target};
use super::{command, entries, jsonfile, server, tomlfile};
use crate::base::host::Host;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

/// How a hook config file stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileState {
    Absent,
    NotInstalled,
    /// Our entries, current (installing again would change nothing).
    Installed,
    /// Our entries, but not as this binary would write them.
    Outdated,
    Unreadable,
}

impl FileState {
    pub fn as_str(self) -> &'static str {
        match self {
            FileState::Absent => "absent",
            FileState::NotInstalled => "not-installed",
            FileState::Installed => "installed",
            FileState::Outdated => "outdated",
            FileState::Unreadable => "unreadable",
        }
    }
}

#[derive(Debug, Serialize)]
pub struct FileReport {
    #[serde(serialize_with = "crate::base::paths::lossy::path")]
    pub path: PathBuf,
    pub scope: String,
    pub state: FileState,
    /// Events with an entry of ours.
    pub entries: usize,
    pub expected: usize,
    /// The binaries our entries run.
    pub programs: Vec<String>,
    pub error: Option<String>,
    pub modified_ms: Option<u64>,
}

/// Number of our entries in the host's user config (`None`: unreadable or absent).
pub fn user_entries(host: Host) -> Option<usize> {
    let t = target::resolve(host, None, false).ok()?;
    let text = super::fsio::read_config(&t.file).ok()??;
    let doc = jsonfile::parse(&text, target::accepts_comments(host)).ok()?;
    Some(entries::find(host, &doc.root.to_value()).len())
}

pub fn file_report(t: &Target) -> FileReport {
    let expected = Spec::for_host(t.host, "leanctx").entries.len();
    let mut r = FileReport {
        path: t.file.clone(),
        scope: t.describe_scope(),
        state: FileState::Absent,
        entries: 0,
        expected,
        programs: vec![],
        error: None,
        modified_ms: None,
    };
    r.modified_ms = std::fs::metadata(&t.file)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|m| m.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_millis() as u64);
    let doc = match read_doc(&t.file, None, target::accepts_comments(t.host)) {
        Ok(Some(d)) => d,
        Ok(None) => return r,
        Err(e) => {
            r.state = FileState::Unreadable;
            r.error = Some(e);
            return r;
        }
    };
    let found = entries::find(t.host, &doc.to_value());
    if found.is_empty() {
        r.state = FileState::NotInstalled;
        return r;
    }
    let mut events: Vec<&str> = found.iter().map(|f| f.event.as_str()).collect();
    events.dedup();
    r.entries = events.len();
    for f in &found {
        if !r.programs.contains(&f.program) {
            r.programs.push(f.program.clone());
        }
    }
    // Current = installing again with the same binary would change nothing.
    let spec = Spec::for_host(t.host, &command::shell_word(&found[0].program));
    let mut copy = doc.clone();
    let unchanged = entries::upsert(&mut copy, &spec).map(|c| c.is_empty()).unwrap_or(false);
    r.state = if unchanged { FileState::Installed } else { FileState::Outdated };
    r
}

/// How `leanctx serve` stands in a host's user MCP config.
#[derive(Clone, Debug, Serialize)]
pub struct ServerReport {
    #[serde(serialize_with = "crate::base::paths::lossy::path")]
    pub path: PathBuf,
    /// `installed`: registered as this binary would write it; `outdated`:
    /// registered, but not so (an older path, a field missing).
    pub state: FileState,
    /// The names our entries have in the host's table.
    pub names: Vec<String>,
    pub programs: Vec<String>,
    pub error: Option<String>,
    /// A real host here read this registration; else documentation only.
    pub verified: bool,
    /// The newest call to it the hooks recorded (set by `status`).
    pub last_call_ms: Option<u64>,
}

/// Whether `leanctx serve` is registered for `host` (user scope).
pub fn server_report(host: Host) -> ServerReport {
    let p = crate::hosts::profile::profile(host);
    let mut r = ServerReport {
        path: PathBuf::new(),
        state: FileState::Absent,
        names: vec![],
        programs: vec![],
        error: None,
        verified: p.server.verified,
        last_call_ms: None,
    };
    let path = match p.server_file(target::home) {
        Ok(f) => f,
        Err(e) => {
            r.state = FileState::Unreadable;
            r.error = Some(e);
            return r;
        }
    };
    r.path = path.clone();
    let doc = match read_doc(&path, Some(p.server.table), p.accepts_comments) {
        Ok(Some(d)) => d,
        Ok(None) => return r,
        Err(e) => {
            r.state = FileState::Unreadable;
            r.error = Some(e);
            return r;
        }
    };
    let v = doc.to_value();
    r.names = server::names(&v, host);
    r.programs = server::find(&v, host).into_iter().map(|f| f.program).collect();
    r.programs.dedup();
    r.state = match r.programs.first() {
        None => FileState::NotInstalled,
        Some(prog) => {
            let mut copy = doc.clone();
            let current = server::upsert(&mut copy, host, prog).is_ok_and(|c| c.is_empty());
            if current { FileState::Installed } else { FileState::Outdated }
        }
    };
    r
}

/// A host config read and parsed as the installer would (`Ok(None)`: no
/// such file): JSON, or TOML by its extension, then the whole file or
/// only `table` of it. The error names the file, and where a parse failed.
fn read_doc(path: &Path, table: Option<&str>, comments: bool) -> Result<Option<jsonfile::Node>, String> {
    let Some(text) = super::fsio::read_config(path).map_err(|e| e.to_string())? else { return Ok(None) };
    let read = if path.extension().is_some_and(|e| e == "toml") {
        tomlfile::parse(&text).map(|d| table.map_or_else(|| d.tree(), |t| d.tree_of(t)))
    } else {
        jsonfile::parse(&text, comments).map(|d| d.root)
    };
    read.map(Some).map_err(|e| format!("{}:{}:{}: {}", path.display(), e.pos.line, e.pos.col, e.msg))
}

/// Is `[features] hooks = false` (or `codex_hooks`) set in Codex's
/// config.toml, in any TOML spelling ([`tomlfile`])?
pub fn codex_hooks_disabled(codex_dir: &Path) -> bool {
    let Ok(Some(text)) = super::fsio::read_config(&codex_dir.join("config.toml")) else { return false };
    tomlfile::parse(&text).is_ok_and(|d| d.hooks_disabled())
}

/// A hook's or server's program: a path, or a bare name the shell finds on PATH.
pub fn program_exists(p: &str) -> bool {
    if is_path(p) {
        return Path::new(p).is_file();
    }
    std::env::var_os("PATH").is_some_and(|path| std::env::split_paths(&path).any(|d| d.join(p).is_file()))
}

/// Whether a program names a file rather than a command on PATH: it holds
/// a separator (`\` too on Windows, as the server entry's
/// `C:\…\leanctx.exe` does), or is absolute.
fn is_path(p: &str) -> bool {
    p.contains('/') || (cfg!(windows) && p.contains('\\')) || Path::new(p).is_absolute()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_with_a_separator_are_paths_never_looked_up_on_path() {
        assert!(is_path("/usr/bin/leanctx") && is_path("C:/tools/leanctx.exe") && is_path("./leanctx"));
        assert!(!is_path("leanctx") && !is_path("leanctx.exe"));
        assert_eq!(is_path(r"C:\tools\leanctx.exe"), cfg!(windows), "a file name on Unix");
        assert_eq!(is_path(r"tools\leanctx.exe"), cfg!(windows));
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("leanctx.exe");
        std::fs::write(&f, "").unwrap();
        assert!(program_exists(f.to_str().unwrap()));
        assert!(!program_exists(t.path().join("gone.exe").to_str().unwrap()));
    }

    #[test]
    fn codex_feature_flag_scan() {
        let t = tempfile::tempdir().unwrap();
        let w = |s: &str| std::fs::write(t.path().join("config.toml"), s).unwrap();
        assert!(!codex_hooks_disabled(t.path()));
        w("[features]\nhooks = true\n");
        assert!(!codex_hooks_disabled(t.path()));
        w("model = \"x\"\n[features]\nother = 1\nhooks = false # off\n");
        assert!(codex_hooks_disabled(t.path()));
        w("features.codex_hooks = false\n");
        assert!(codex_hooks_disabled(t.path()));
        w("features = { hooks = false }\n");
        assert!(codex_hooks_disabled(t.path()));
        w("[features]\nhooks = [false\n");
        assert!(!codex_hooks_disabled(t.path()), "unreadable: reported elsewhere, not guessed");
        w("[mcp_servers.x]\nhooks = false\n");
        assert!(!codex_hooks_disabled(t.path()));
    }
}
