//! The fast path of the command line: `hook …`, `scope check|current …`,
//! `stub …` and `deliver …` run on every tool call or MCP read, and clap's
//! command tree cost them a third of a hook's instructions (~95 µs on a CLI
//! read). So they are read here by hand, into the same types clap fills
//! ([`super::args`]), and the tests below hold both readers to the same
//! answers. Anything else, or anything these readers do not take, goes to
//! clap.

use super::args::{CallArg, LedgerArgs, ScopeCmd};
use crate::Host;
use std::path::PathBuf;

/// A `hook …` command line as [`hook_argv`] reads it.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct HookArgv {
    /// The first argument that names a host (any case); `None`: none did.
    pub(crate) host: Option<Host>,
    /// `--event NAME` or `--event=NAME` (the first one).
    pub(crate) event: Option<String>,
    /// Everything else: unknown flags (a newer config run by an older
    /// binary), extra words, a host name that is not one. Said on stderr;
    /// the event is still answered and recorded.
    pub(crate) ignored: Vec<String>,
}

/// Every command line whose first word (after any flags but help and
/// version) is `hook`, read the way clap reads `hook <host> [--event NAME]`
/// where clap would accept it, and leniently where clap would fail: the
/// first word that names a host is the host, `--event` is taken where it
/// stands, and the rest is ignored. `None` for other commands and for
/// `hook … --help` / `hook … -h` (before any `--`).
pub(crate) fn hook_argv(args: impl Iterator<Item = std::ffi::OsString>) -> Option<HookArgv> {
    let args: Vec<String> = args.map(|a| a.to_string_lossy().into_owned()).collect();
    let mut out = HookArgv::default();
    let lead = args.iter().take_while(|a| a.starts_with('-')).count();
    if args[..lead].iter().any(|a| matches!(a.as_str(), "-h" | "--help" | "-V" | "--version"))
        || args.get(lead).map(String::as_str) != Some("hook")
    {
        return None;
    }
    out.ignored.extend(args[..lead].iter().cloned());
    let rest = &args[lead + 1..];
    // `hook <host> --help` prints help (clap) and records nothing; a `-h`
    // after `--` is a word.
    if rest.iter().take_while(|a| *a != "--").any(|a| matches!(a.as_str(), "-h" | "--help")) {
        return None;
    }
    let (mut i, mut words_only) = (0, false);
    while i < rest.len() {
        let a = rest[i].as_str();
        let flag = !words_only && a.starts_with('-') && a != "-";
        if flag && a == "--" {
            words_only = true;
        } else if flag && a == "--event" && out.event.is_none() && i + 1 < rest.len() {
            i += 1;
            out.event = Some(rest[i].clone());
        } else if let Some(v) = a.strip_prefix("--event=").filter(|_| flag && out.event.is_none()) {
            out.event = Some(v.to_string());
        } else if let Some(h) = (!flag && out.host.is_none()).then(|| a.to_ascii_lowercase().parse().ok()).flatten() {
            out.host = Some(h);
        } else {
            out.ignored.push(a.to_string());
        }
        i += 1;
    }
    Some(out)
}

/// The options of a fast-path command (`--name value`, `--name=value`, and
/// `--flag` for names not in `valued`), read as clap reads them: `None` for
/// anything clap would read differently (a word that is not an option, a
/// flag given a value, a value that looks like an option other than `-`),
/// so that clap reads and reports it.
pub(crate) fn fast_opts<'a>(rest: &'a [String], valued: &[&str]) -> Option<Vec<(&'a str, Option<String>)>> {
    let mut out = Vec::with_capacity(rest.len());
    let mut i = 0;
    while i < rest.len() {
        let (name, inline) = match rest[i].split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v)),
            _ => (rest[i].as_str(), None),
        };
        if !name.starts_with("--") {
            return None;
        }
        let value = match (valued.contains(&name), inline) {
            (true, Some(v)) => Some(v.to_string()),
            (true, None) => {
                i += 1;
                let v = rest.get(i)?;
                if v.starts_with('-') && v != "-" {
                    return None;
                }
                Some(v.clone())
            }
            (false, Some(_)) => return None,
            (false, None) => None,
        };
        out.push((name, value));
        i += 1;
    }
    Some(out)
}

/// `scope check …` and `scope current …`, exactly as clap would read them;
/// `None` for anything else (an unknown or repeated argument, a value that
/// looks like a flag, help), which clap then reads and reports.
pub(crate) fn scope_args(mut args: impl Iterator<Item = std::ffi::OsString>) -> Option<ScopeCmd> {
    if args.next()? != "scope" {
        return None;
    }
    let check = match args.next()?.to_str()? {
        "check" => true,
        "current" => false,
        _ => return None,
    };
    let rest: Vec<String> = args.map(|a| a.into_string().ok()).collect::<Option<_>>()?;
    let (mut delivered, mut at, mut call) = (None, None, None);
    let (mut cold, mut json, mut fresh) = (false, false, false);
    for (name, value) in fast_opts(&rest, &["--delivered", "--at", "--call"])? {
        match name {
            "--delivered" if check && delivered.is_none() => delivered = value,
            "--at" if check && at.is_none() => at = Some(value?.parse::<u64>().ok()?),
            "--call" if call.is_none() => call = value.map(PathBuf::from),
            "--cold" if check && !cold => cold = true,
            "--fresh" if !check && !fresh => fresh = true,
            "--json" if !json => json = true,
            _ => return None,
        }
    }
    let call = CallArg { call };
    Some(if check {
        ScopeCmd::Check { delivered, at, cold, json, call }
    } else {
        ScopeCmd::Current { fresh, json, call }
    })
}

/// `stub …` or `deliver …`, read by hand as clap would read them (these run
/// on every MCP read); `None` for anything else, which clap then reads.
pub(crate) struct LedgerCmd {
    pub(crate) deliver: bool,
    pub(crate) args: LedgerArgs,
    pub(crate) result: Option<PathBuf>,
}

pub(crate) fn ledger_args(mut args: impl Iterator<Item = std::ffi::OsString>) -> Option<LedgerCmd> {
    let deliver = match args.next()?.to_str()? {
        "stub" => false,
        "deliver" => true,
        _ => return None,
    };
    let rest: Vec<String> = args.map(|a| a.into_string().ok()).collect::<Option<_>>()?;
    let (mut call, mut key, mut version, mut result, mut base, mut json) = (None, None, None, None, None, false);
    for (name, value) in fast_opts(&rest, &["--call", "--key", "--version", "--result", "--base"])? {
        match name {
            "--call" if call.is_none() => call = value.map(PathBuf::from),
            "--key" if key.is_none() => key = value,
            "--version" if version.is_none() => version = value,
            "--result" if result.is_none() => result = value.map(PathBuf::from),
            "--base" if base.is_none() => base = Some(value?),
            "--json" if !json => json = true,
            _ => return None,
        }
    }
    if deliver && result.is_none() {
        return None;
    }
    let args = LedgerArgs { call: call?, key: key?, version: version?, base, json };
    Some(LedgerCmd { deliver, args, result })
}

#[cfg(test)]
mod tests {
    use super::super::args::{Cli, Command};
    use super::*;
    use clap::Parser;

    /// The hook's own reader reads exactly what clap reads where clap
    /// accepts the command line, and answers (never defers to clap, whose
    /// errors exit 2) where clap would not; only `hook … --help` is clap's.
    #[test]
    fn hook_argv_agrees_with_clap_and_always_answers() {
        let cases: &[&[&str]] = &[
            &["hook", "claude-code"],
            &["hook", "claude"],
            &["hook", "cursor", "--event", "beforeMCPExecution"],
            &["hook", "codex", "--event=PreToolUse"],
            &["hook", "codebuddy", "--event", ""],
            &["hook", "codex", "--event"],
            &["hook", "codex", "--event", "-x"],
            &["hook", "codex", "extra"],
            &["hook", "nosuchhost"],
            &["hook", "--event", "X", "codex"],
            &["hook", "--help"],
            &["hook", "-h"],
            &["hook"],
            &["hook", "codex", "--event=-x"],
            &["hook", "codex", "--event="],
            &["hook", "codex", "--event", "A", "--event", "B"],
            &["hook", "codex", "--timeout", "5"],
            &["hook", "--timeout=5", "cursor", "--event", "stop"],
            &["hook", "cursr"],
            &["hook", "cursor-agent", "--event", "x"],
            &["hook", "CODEX"],
            &["hook", "codex", "--help"],
            &["hook", "codex", "--", "--event"],
            &["--verbose", "hook", "claude"],
            &["hook", "codex", "-"],
        ];
        // Help anywhere before `--` is clap's (issue 25: `hook codex --help`
        // recorded the piped event instead of printing help).
        let help = [&["hook", "--help"][..], &["hook", "-h"][..], &["hook", "codex", "--help"][..]];
        for argv in cases {
            let ours = hook_argv(argv.iter().map(std::ffi::OsString::from));
            let clap = Cli::try_parse_from(std::iter::once("leanctx").chain(argv.iter().copied()));
            match (ours, clap) {
                (Some(a), Ok(Cli { command: Command::Hook { host, event } })) => {
                    assert_eq!(a, HookArgv { host: Some(host), event, ignored: vec![] }, "{argv:?}")
                }
                (Some(_), Ok(_)) => panic!("{argv:?}: clap reads another command"),
                (Some(_), Err(_)) => {}
                (None, _) => assert!(help.contains(argv), "{argv:?}: a hook command line left to clap"),
            }
        }
        let read = |argv: &[&str]| hook_argv(argv.iter().map(std::ffi::OsString::from)).unwrap();
        assert_eq!(read(&["hook", "claude-code"]).host, Some(Host::ClaudeCode));
        let a = read(&["hook", "--timeout=5", "cursor", "--event", "stop", "extra"]);
        assert_eq!(
            a,
            HookArgv {
                host: Some(Host::Cursor),
                event: Some("stop".into()),
                ignored: vec!["--timeout=5".into(), "extra".into()]
            }
        );
        let a = read(&["hook", "cursor-agent"]);
        assert_eq!((a.host, a.ignored), (None, vec!["cursor-agent".to_string()]));
        assert!(hook_argv(["hook", "codex", "--help"].iter().map(std::ffi::OsString::from)).is_none(), "help");
        assert_eq!(read(&["hook", "codex", "--", "--help"]).ignored, ["--help"], "after --, a word");
        assert!(hook_argv(["scope", "check"].iter().map(std::ffi::OsString::from)).is_none());
        assert!(hook_argv(["--version"].iter().map(std::ffi::OsString::from)).is_none());
        assert!(hook_argv(std::iter::empty()).is_none());
    }

    fn scope_fields(c: &ScopeCmd) -> String {
        match c {
            ScopeCmd::Current { fresh, json, call } => format!("current {fresh} {json} {:?}", call.call),
            ScopeCmd::Check { delivered, at, cold, json, call } => {
                format!("check {delivered:?} {at:?} {cold} {json} {:?}", call.call)
            }
        }
    }

    /// The scope fast path reads exactly what clap reads, or defers to it.
    #[test]
    fn scope_fast_path_agrees_with_clap() {
        let cases: &[&[&str]] = &[
            &["scope", "check"],
            &["scope", "check", "--delivered", "abc", "--at", "12", "--json"],
            &["scope", "check", "--delivered=abc", "--at=12", "--cold", "--call", "-"],
            &["scope", "check", "--call", "/tmp/x.json", "--delivered", ""],
            &["scope", "check", "--delivered", "-x"],
            &["scope", "check", "--delivered=-x"],
            &["scope", "check", "--at", "-1"],
            &["scope", "check", "--at", "+5"],
            &["scope", "check", "--at", "x"],
            &["scope", "check", "--at", ""],
            &["scope", "check", "--json", "--json"],
            &["scope", "check", "--json=true"],
            &["scope", "check", "--delivered", "a", "--delivered", "b"],
            &["scope", "check", "--fresh"],
            &["scope", "check", "--delivered"],
            &["scope", "check", "extra"],
            &["scope", "check", "--"],
            &["scope", "check", "-h"],
            &["scope", "check", "--help"],
            &["scope", "current"],
            &["scope", "current", "--fresh", "--json", "--call", "-"],
            &["scope", "current", "--call=-"],
            &["scope", "current", "--call", "--json"],
            &["scope", "current", "--cold"],
            &["scope", "current", "--delivered", "a"],
            &["scope", "nope"],
            &["scope"],
            &["hook", "codex"],
        ];
        let mut fast_paths = 0;
        for argv in cases {
            let fast = scope_args(argv.iter().map(std::ffi::OsString::from));
            let clap = Cli::try_parse_from(std::iter::once("leanctx").chain(argv.iter().copied()));
            match (fast, clap) {
                (Some(f), Ok(Cli { command: Command::Scope(c) })) => {
                    assert_eq!(scope_fields(&f), scope_fields(&c), "{argv:?}");
                    fast_paths += 1;
                }
                (Some(f), other) => panic!("{argv:?}: fast path {}, clap ok: {}", scope_fields(&f), other.is_ok()),
                (None, _) => {}
            }
        }
        assert!(fast_paths >= 8, "{fast_paths}");
    }

    /// The stub/deliver fast path reads exactly what clap reads, or defers to it.
    #[test]
    fn ledger_fast_path_agrees_with_clap() {
        let cases: &[&[&str]] = &[
            &["stub", "--call", "-", "--key", "a.rs", "--version", "v1"],
            &["stub", "--call=c.json", "--key=a.rs", "--version=v1", "--result", "r.json", "--json"],
            &["stub", "--call", "-", "--key", "-x", "--version", "v"],
            &["stub", "--call", "-", "--key=-x", "--version", "v"],
            &["stub", "--call", "-", "--key", "a", "--version", "v", "--json", "--json"],
            &["stub", "--call", "-", "--key", "a", "--version", "v", "--json=1"],
            &["stub", "--call", "-", "--key", "a"],
            &["stub", "--call", "-", "--key", "a", "--version", "v", "extra"],
            &["stub", "--call", "-", "--key", "a", "--key", "b", "--version", "v"],
            &["deliver", "--call", "-", "--key", "a", "--version", "v", "--result", "-"],
            &["deliver", "--call", "-", "--key", "a", "--version", "v"],
            &["deliver", "--help"],
            &["deliver", "--call", "-", "--key", "a", "--version", "v2", "--base", "v1", "--result", "-"],
            &["stub", "--call", "-", "--key", "a", "--version", "v2", "--base=v1", "--result", "r"],
            &["stub", "--call", "-", "--key", "a", "--version", "v2", "--base", "v1", "--base", "v0"],
            &["stub", "--call", "-", "--key", "a", "--version", "v2", "--base"],
            &["stub"],
        ];
        let mut fast_paths = 0;
        for argv in cases {
            let fast = ledger_args(argv.iter().map(std::ffi::OsString::from));
            let clap = Cli::try_parse_from(std::iter::once("leanctx").chain(argv.iter().copied()));
            let fields = |deliver: bool, a: &LedgerArgs, r: &Option<PathBuf>| {
                format!("{deliver} {:?} {} {} {:?} {} {r:?}", a.call, a.key, a.version, a.base, a.json)
            };
            match (fast, clap) {
                (Some(f), Ok(Cli { command: Command::Stub { ledger, result } })) => {
                    assert_eq!(fields(f.deliver, &f.args, &f.result), fields(false, &ledger, &result), "{argv:?}");
                    fast_paths += 1;
                }
                (Some(f), Ok(Cli { command: Command::Deliver { ledger, result } })) => {
                    assert_eq!(fields(f.deliver, &f.args, &f.result), fields(true, &ledger, &Some(result)), "{argv:?}");
                    fast_paths += 1;
                }
                (Some(_), other) => panic!("{argv:?}: fast path took it, clap ok: {}", other.is_ok()),
                (None, _) => {}
            }
        }
        assert!(fast_paths >= 4, "{fast_paths}");
    }
}
