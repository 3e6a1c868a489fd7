//! The command line we write into a host's config, and how we recognise
//! one of ours again: by its program (a `leanctx` binary) and its
//! arguments (`hook <host>`), never by a substring of some path, so a
//! user's `/home/leanctx-fan/bin/mytool` is never taken for ours and our
//! entry is found again after the binary moved.

use crate::base::host::Host;
use std::path::{Path, PathBuf};

/// Env override for the binary written into hook commands (tests,
/// packagers whose install path differs from where `leanctx` runs now).
pub const BINARY_ENV: &str = "LEANCTX_HOOK_BINARY";

/// The file names a leanctx binary may have.
const PROGRAM_NAMES: [&str; 2] = ["leanctx", "leanctx.exe"];

/// The binary hooks will run: `$LEANCTX_HOOK_BINARY` verbatim (absolute,
/// named `leanctx`), else this executable, canonicalised.
pub fn hook_binary() -> Result<PathBuf, String> {
    match std::env::var_os(BINARY_ENV).filter(|v| !v.is_empty()) {
        Some(v) => {
            let p = PathBuf::from(v);
            if !p.is_absolute() {
                return Err(format!(
                    "{BINARY_ENV}={} is not an absolute path; hosts run hooks from other directories",
                    p.display()
                ));
            }
            check_program_name(&p)?;
            Ok(p)
        }
        None => {
            let exe = std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
            let exe = std::fs::canonicalize(&exe).unwrap_or(exe);
            check_program_name(&exe)?;
            Ok(exe)
        }
    }
}

/// Whether `program` (a path or a bare name, `/` or `\\` separated) names a
/// leanctx binary.
pub fn is_leanctx_program(program: &str) -> bool {
    let name = program.rsplit(['/', '\\']).next().unwrap_or(program);
    PROGRAM_NAMES.contains(&name)
}

/// Our entries are recognised by the program's file name, so a binary
/// under another name would be installed but never found again.
fn check_program_name(p: &Path) -> Result<(), String> {
    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if PROGRAM_NAMES.contains(&name) {
        Ok(())
    } else {
        Err(format!(
            "the hook binary {} is not named leanctx; install it as leanctx (or set {BINARY_ENV} to a path ending in /leanctx)",
            p.display()
        ))
    }
}

/// The binary as one shell word. POSIX single quotes: every host runs the
/// command through a POSIX-like shell (Claude `/bin/sh -c`, Codex and
/// CodeBuddy `$SHELL -c`, Cursor a shell string), and single quotes mean
/// the same in sh, bash, zsh and fish for any path without a backslash.
pub fn shell_word(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'/' | b'.' | b'_' | b'-' | b'+' | b',' | b':' | b'@'));
    if plain { s.to_string() } else { format!("'{}'", s.replace('\'', r"'\''")) }
}

/// The binary as the first word of the hook command this platform's hosts
/// run: [`shell_word`] on Unix, [`windows_word`] on Windows.
pub fn program_word(bin: &str) -> Result<String, String> {
    if cfg!(windows) {
        windows_word(bin, |p| crate::fsx::short_path(Path::new(p)).and_then(|s| s.to_str().map(str::to_string)))
    } else {
        Ok(shell_word(bin))
    }
}

/// The binary as the first word of a hook command on Windows, where one
/// string meets several shells: Git Bash (Claude Code, CodeBuddy),
/// PowerShell or `cmd /C` (Codex: the session's shell, else `%COMSPEC%`),
/// and whatever Cursor uses (docs/HOST-FACTS.md §6). No quoting means the same
/// in all of them (`'…'` is a string in PowerShell and nothing in cmd;
/// `"…"` followed by arguments is a PowerShell parse error), so the path
/// is written unquoted, with forward slashes (Git Bash eats unquoted
/// backslashes; the others accept `/`), and must need no quoting: a path
/// with a space or a shell character is replaced by its 8.3 short name
/// (`short`; `~` is plain mid-word in all three), and refused when it has
/// none. A `\\?\` prefix (what
/// `canonicalize` returns on Windows) is dropped.
pub fn windows_word(bin: &str, short: impl Fn(&str) -> Option<String>) -> Result<String, String> {
    let norm = |p: &str| native_path(p).replace('\\', "/");
    let plain = |p: &str| {
        !p.is_empty()
            && p.bytes().all(|b| {
                b.is_ascii_alphanumeric() || matches!(b, b'/' | b'.' | b'_' | b'-' | b'+' | b',' | b':' | b'@' | b'~')
            })
    };
    let p = norm(bin);
    if plain(&p) {
        return Ok(p);
    }
    match short(bin).map(|s| norm(&s)) {
        Some(s) if plain(&s) => Ok(s),
        _ => Err(format!(
            "the hook binary's path {bin} holds a space or a character a shell would read (no hook command \
             means the same to Git Bash, PowerShell and cmd then), and it has no 8.3 short name: install \
             leanctx under a plain path (installers\\install.ps1 -Prefix C:\\tools\\leanctx)"
        )),
    }
}

/// A Windows path as users and hosts write it: without the verbatim
/// prefix `canonicalize` gives (`\\?\C:\…` is `C:\…`, `\\?\UNC\srv\…` is
/// `\\srv\…`). Any other path is returned as it is.
pub fn native_path(p: &str) -> String {
    match p.strip_prefix(r"\\?\UNC\") {
        Some(rest) => format!(r"\\{rest}"),
        None => p.strip_prefix(r"\\?\").unwrap_or(p).to_string(),
    }
}

/// A command of ours, taken apart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ours {
    /// The program as written (after unquoting).
    pub program: String,
    pub host: Host,
}

/// Recognise `<…/leanctx> hook <host> [args…]`: the first simple command
/// of a shell string, after `VAR=value` assignments and `env`/`exec`/
/// `command` prefixes. Anything after a control operator is ignored.
pub fn parse_ours(cmd: &str) -> Option<Ours> {
    ours_from_words(&shell_words(cmd)?)
}

/// Claude's exec form: `command` is the program, `args` its arguments.
pub fn parse_ours_exec(program: &str, args: &[String]) -> Option<Ours> {
    let mut words = vec![program.to_string()];
    words.extend(args.iter().cloned());
    ours_from_words(&words)
}

fn ours_from_words(words: &[String]) -> Option<Ours> {
    let file_name = |w: &str| Path::new(w).file_name().and_then(|n| n.to_str()).map(str::to_string);
    let is_assignment = |w: &str| {
        w.find('=').is_some_and(|eq| {
            eq > 0
                && !w.as_bytes()[0].is_ascii_digit()
                && w[..eq].bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        })
    };
    let is_prefix = |w: &str| is_assignment(w) || matches!(file_name(w).as_deref(), Some("env" | "exec" | "command"));
    let i = words.iter().position(|w| !is_prefix(w))?;
    let program = &words[i];
    let base = file_name(program)?;
    if !PROGRAM_NAMES.contains(&base.as_str()) || words.get(i + 1).map(String::as_str) != Some("hook") {
        return None;
    }
    let host = words.get(i + 2)?.parse::<Host>().ok()?;
    Some(Ours { program: program.clone(), host })
}

/// The words of the first simple command of a POSIX shell string
/// ([`Extent::FirstCommand`](crate::base::shell::Extent::FirstCommand)).
pub fn shell_words(s: &str) -> Option<Vec<String>> {
    crate::base::shell::words(s, crate::base::shell::Extent::FirstCommand)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ours(cmd: &str) -> Option<Host> {
        parse_ours(cmd).map(|o| o.host)
    }

    #[test]
    fn recognises_our_program_and_arguments() {
        assert_eq!(ours("/usr/local/bin/leanctx hook claude-code"), Some(Host::ClaudeCode));
        assert_eq!(ours("leanctx hook codex"), Some(Host::Codex));
        assert_eq!(ours("'/home/a b/it'\\''s/leanctx' hook cursor"), Some(Host::Cursor));
        assert_eq!(ours("\"/opt/x y/leanctx\" hook codebuddy --event Stop"), Some(Host::CodeBuddy));
        assert_eq!(ours("LEAN_CTX_SCOPE=x env A=1 /bin/leanctx hook claude"), Some(Host::ClaudeCode));
        assert_eq!(ours("exec /bin/leanctx hook cursor"), Some(Host::Cursor));
        assert_eq!(ours("$HOME/.cargo/bin/leanctx hook codex || true"), Some(Host::Codex));
        assert_eq!(ours("C:/tools/leanctx.exe hook cursor"), Some(Host::Cursor));
    }

    #[test]
    fn a_path_containing_leanctx_is_not_ours() {
        assert_eq!(ours("/home/leanctx/bin/mytool hook claude-code"), None);
        assert_eq!(ours("/opt/leanctx-tools/run.sh leanctx hook claude-code"), None);
        assert_eq!(ours("lean-ctx hook observe"), None);
        assert_eq!(ours("/usr/bin/leanctx-old hook cursor"), None);
        assert_eq!(ours("echo leanctx hook cursor"), None);
        assert_eq!(ours("leanctx status"), None);
        assert_eq!(ours("leanctx hook"), None);
        assert_eq!(ours("leanctx hook vim"), None);
        assert_eq!(ours("cd /x && leanctx hook cursor"), None);
        assert_eq!(ours("'/bin/leanctx hook cursor"), None, "unbalanced quote");
        assert_eq!(ours(""), None);
    }

    #[test]
    fn exec_form_is_recognised_by_program() {
        let args = vec!["hook".to_string(), "claude-code".to_string()];
        assert_eq!(parse_ours_exec("/x y/leanctx", &args).map(|o| o.host), Some(Host::ClaudeCode));
        assert_eq!(parse_ours_exec("/x/leanctx-helper", &args), None);
    }

    #[test]
    fn windows_words_are_plain_forward_slash_paths_every_shell_reads_alike() {
        let none = |_: &str| None;
        let w = windows_word(r"C:\Users\me\.cargo\bin\leanctx.exe", none).unwrap();
        assert_eq!(w, "C:/Users/me/.cargo/bin/leanctx.exe");
        // Recognised again as ours, by the same parser as on Unix.
        assert_eq!(ours(&format!("{w} hook codex")), Some(Host::Codex));
        // What canonicalize returns on Windows.
        assert_eq!(windows_word(r"\\?\C:\tools\leanctx.exe", none).unwrap(), "C:/tools/leanctx.exe");
        assert_eq!(windows_word(r"\\?\UNC\srv\share\leanctx.exe", none).unwrap(), "//srv/share/leanctx.exe");
        // A space: the 8.3 short name, or a refusal that says what to do.
        let spaced = r"C:\Users\John Doe\.cargo\bin\leanctx.exe";
        let short = |_: &str| Some(r"C:\Users\JOHNDO~1\.cargo\bin\leanctx.exe".to_string());
        assert_eq!(windows_word(spaced, short).unwrap(), "C:/Users/JOHNDO~1/.cargo/bin/leanctx.exe");
        let e = windows_word(spaced, none).unwrap_err();
        assert!(e.contains("8.3") && e.contains("-Prefix"), "{e}");
        for bad in [r"C:\a&b\leanctx.exe", r"C:\it's\leanctx.exe", r"C:\%x%\leanctx.exe", r"C:\a$b\leanctx.exe"] {
            assert!(windows_word(bad, none).is_err(), "{bad}");
        }
    }

    #[test]
    fn native_paths_lose_only_the_verbatim_prefix() {
        assert_eq!(native_path(r"\\?\C:\tools\leanctx.exe"), r"C:\tools\leanctx.exe");
        assert_eq!(native_path(r"\\?\UNC\srv\share\leanctx.exe"), r"\\srv\share\leanctx.exe");
        assert_eq!(native_path(r"\\srv\share\leanctx.exe"), r"\\srv\share\leanctx.exe");
        assert_eq!(native_path("/usr/bin/leanctx"), "/usr/bin/leanctx");
    }

    #[test]
    fn shell_word_round_trips_through_our_parser() {
        for p in ["/usr/bin/leanctx", "/a b/leanctx", "/it's/leanctx", "/q\"d/$HOME/`x`/leanctx", "/t\tab/leanctx"] {
            let w = shell_word(p);
            let words = shell_words(&format!("{w} hook cursor")).unwrap();
            assert_eq!(words, vec![p.to_string(), "hook".into(), "cursor".into()], "{w}");
        }
        assert_eq!(shell_word("/usr/local/bin/leanctx"), "/usr/local/bin/leanctx");
        assert_eq!(shell_word("/a b/leanctx"), "'/a b/leanctx'");
    }
}
