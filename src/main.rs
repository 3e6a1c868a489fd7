//! The `leanctx` binary: parse the command line, call the library, print.
//!
//! Exit codes: `hook` always 0 (fail open). `scope check`: 0 stub allowed,
//! 1 withhold, 2 error. `scope current`: 0 caller known, 1 unknown, 2 error.
//! Everything else: 0 success, 1 failure, 2 usage error.

// The entry point is ours, not std's runtime (see `main` below).
#![cfg_attr(not(test), no_main)]

use clap::{Args, CommandFactory, Parser, Subcommand};
use leanctx::hook::{self, HookContext};
use leanctx::hosts::HookEnv;
use leanctx::mcp_call::McpCall;
use leanctx::readpath::{ReadPath, StubQuery};
use leanctx::{Host, clock, gate, install, paths, status, stdin};
use std::io::{self, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(Parser)]
#[command(name = "leanctx", version, about = "Conversation identity and MCP gate for context-saving MCP servers")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Handle one hook event: payload on stdin, the host's answer on stdout. Always exits 0.
    Hook {
        /// The host that runs the hook: cursor, claude-code (claude), codex or codebuddy.
        host: Host,
        /// Override the payload's hook_event_name.
        #[arg(long)]
        event: Option<String>,
    },
    /// May the caller of this MCP call be served a stub for this version of
    /// this content? Exit 0: serve the stub; 1: deliver the content (and, with
    /// --result, its delivery is recorded); 2: error.
    Stub {
        #[command(flatten)]
        ledger: LedgerArgs,
        /// The MCP result the server returns if no stub is served, as JSON (a file, or - for stdin).
        #[arg(long, value_name = "FILE|-")]
        result: Option<PathBuf>,
    },
    /// Record that this result is being delivered to the caller of this MCP
    /// call. Exit 0: recorded; 1: not recorded (no exact caller; says why); 2: error.
    Deliver {
        #[command(flatten)]
        ledger: LedgerArgs,
        /// The MCP result the server returns, as JSON (a file, or - for stdin).
        #[arg(long, value_name = "FILE|-")]
        result: PathBuf,
    },
    /// Who is calling, and may they get a stub.
    #[command(subcommand)]
    Scope(ScopeCmd),
    /// Check that everything works: the data dir, the state, the hooks of
    /// every host, the gate's policy files. Names every problem with its fix.
    /// Exit 0: no problem; 1: a problem.
    #[command(visible_alias = "doctor")]
    Status {
        /// Print the same report as JSON (`problems`, `issues` with each fix, `healthy`).
        #[arg(long)]
        json: bool,
    },
    /// Explain what the MCP gate decides for a tool.
    #[command(subcommand)]
    Gate(GateCmd),
    /// Install, remove or inspect leanctx's entries in a host's hook config.
    #[command(subcommand)]
    Hooks(HooksCmd),
    /// Print a shell completion script (e.g. `leanctx completions bash > ~/.local/share/bash-completion/completions/leanctx`).
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
}

#[derive(Subcommand)]
enum ScopeCmd {
    /// Print the caller's scope (exit 0 known, 1 unknown).
    Current {
        /// Re-read now instead of the ~3 s cache (a CLI process has no cache to reuse anyway).
        #[arg(long)]
        fresh: bool,
        /// Print the caller, its source and the per-call resolution as JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        call: CallArg,
    },
    /// Decide a stub: exit 0 allow, 1 withhold, 2 error.
    Check {
        /// Scope the content was delivered to; omit for an unscoped delivery.
        #[arg(long)]
        delivered: Option<String>,
        /// Delivery time, unix milliseconds (enables the compaction check).
        #[arg(long = "at")]
        at: Option<u64>,
        /// Cold stub (entry from a persisted index).
        #[arg(long)]
        cold: bool,
        /// Print the decision, its reason and the caller as JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        call: CallArg,
    },
}

#[derive(Args)]
struct LedgerArgs {
    /// The MCP tools/call request being answered (or its params) as JSON: a file, or - for stdin.
    #[arg(long, value_name = "FILE|-")]
    call: PathBuf,
    /// The server's name for the content (a path); only its hash is kept.
    #[arg(long)]
    key: String,
    /// The content's version (a hash); only its hash is kept.
    #[arg(long)]
    version: String,
    /// Print the decision, reason, caller and the delivery it relied on as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct CallArg {
    /// The MCP tools/call request (or its params) as JSON: a file, or - for stdin.
    #[arg(long, value_name = "FILE|-")]
    call: Option<PathBuf>,
}

#[derive(Subcommand)]
enum GateCmd {
    /// Show which policy rule decides for a tool, and the answer each host would get.
    Check {
        /// The host whose answer to show: cursor, claude-code, codex or codebuddy.
        #[arg(long)]
        host: Host,
        /// Tool name as the host spells it (mcp__server__tool, MCP:server:tool, tool).
        #[arg(long)]
        tool: String,
        /// The server the call is on, when the tool name does not say it (Cursor's mcp_server_name).
        #[arg(long)]
        server: Option<String>,
        /// Workspace dir whose .lean-ctx/gate.json applies (default: current dir).
        #[arg(long, value_name = "DIR")]
        cwd: Option<PathBuf>,
        /// Print the files, rules, verdict and answer as JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum HooksCmd {
    /// Add leanctx's hook entries to each host's config.
    Install {
        /// The hosts: cursor, claude-code (claude), codex, codebuddy; one or more.
        #[arg(required = true, num_args = 1.., value_name = "HOST")]
        hosts: Vec<Host>,
        #[command(flatten)]
        opts: InstallArgs,
        /// Create the host's user config dir if it does not exist.
        #[arg(long, conflicts_with = "if_present")]
        create: bool,
        /// Skip (exit 0) a host whose user config dir does not exist.
        #[arg(long)]
        if_present: bool,
    },
    /// Remove exactly leanctx's hook entries (and what that emptied).
    Uninstall {
        /// The hosts: cursor, claude-code (claude), codex, codebuddy; one or more.
        #[arg(required = true, num_args = 1.., value_name = "HOST")]
        hosts: Vec<Host>,
        #[command(flatten)]
        opts: InstallArgs,
    },
    /// Where each host's config is, whether our hooks are in it, and whether they fired.
    Status {
        /// Only this host: cursor, claude-code (claude), codex or codebuddy (default: all).
        host: Option<Host>,
        /// Show this project's files (default: the current dir's).
        #[arg(long, value_name = "DIR")]
        project: Option<PathBuf>,
        /// Print the same report as JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args)]
struct InstallArgs {
    /// Project scope: the project dir (default: user scope).
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,
    /// Claude Code / CodeBuddy: settings.local.json (with --project).
    #[arg(long)]
    local: bool,
    /// Print the change as a diff, write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Print what was done, per host, as JSON.
    #[arg(long)]
    json: bool,
}

#[cfg_attr(test, allow(dead_code))]
fn leanctx_main() -> ExitCode {
    let started = Instant::now();
    // The hook runs on every tool call, and must answer whatever its
    // arguments: every `hook …` command line is read here, never by clap
    // (whose errors exit 2, which every host takes as "block"; its full
    // command tree was also a third of the hook's own instructions). Only a
    // bare `hook --help` goes to clap.
    if let Some(argv) = hook_argv(std::env::args_os().skip(1)) {
        return match argv.host {
            Some(host) => {
                if !argv.ignored.is_empty() {
                    eprintln!("leanctx hook {host}: ignoring arguments it does not know: {}", argv.ignored.join(" "));
                }
                run_hook(host, argv.event, started)
            }
            None => run_hook_without_host(&argv, started),
        };
    }
    // The CLI read path is per MCP call too: clap cost it ~95 µs (1.30x ->
    // 1.20x the floor, benches/hooks).
    if let Some(cmd) = scope_args(std::env::args_os().skip(1)) {
        return exit(scope(cmd));
    }
    if let Some(cmd) = ledger_args(std::env::args_os().skip(1)) {
        return exit(ledger_cmd(cmd));
    }
    let cli = Cli::parse();
    match cli.command {
        Command::Hook { host, event } => run_hook(host, event, started),
        Command::Scope(cmd) => exit(scope(cmd)),
        Command::Stub { ledger, result } => exit(ledger_cmd(LedgerCmd { deliver: false, args: ledger, result })),
        Command::Deliver { ledger, result } => {
            exit(ledger_cmd(LedgerCmd { deliver: true, args: ledger, result: Some(result) }))
        }
        Command::Status { json } => {
            let s = status::gather(&ReadPath::from_process());
            let text = if json { to_json(&s) } else { s.human() };
            print_out(&text);
            if s.healthy { ExitCode::SUCCESS } else { ExitCode::from(1) }
        }
        Command::Completions { shell } => {
            let mut out = io::stdout().lock();
            clap_complete::generate(shell, &mut Cli::command(), "leanctx", &mut out);
            let _ = out.flush();
            ExitCode::SUCCESS
        }
        Command::Gate(GateCmd::Check { host, tool, server, cwd, json }) => {
            exit(gate_check(host, &tool, server.as_deref(), cwd, json))
        }
        Command::Hooks(HooksCmd::Install { hosts, opts, create, if_present }) => {
            install_each(&hosts, opts, create, if_present, false)
        }
        Command::Hooks(HooksCmd::Uninstall { hosts, opts }) => install_each(&hosts, opts, false, false, true),
        Command::Hooks(HooksCmd::Status { host, project, json }) => {
            let mut out = io::stdout().lock();
            match install::status(host, project.as_deref(), json, &mut out) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    let _ = out.flush();
                    eprintln!("leanctx: {e}");
                    ExitCode::from(1)
                }
            }
        }
    }
}

/// A `hook …` command line as [`hook_argv`] reads it.
#[derive(Debug, Default, PartialEq, Eq)]
struct HookArgv {
    /// The first argument that names a host (any case); `None`: none did.
    host: Option<Host>,
    /// `--event NAME` or `--event=NAME` (the first one).
    event: Option<String>,
    /// Everything else: unknown flags (a newer config run by an older
    /// binary), extra words, a host name that is not one. Said on stderr;
    /// the event is still answered and recorded.
    ignored: Vec<String>,
}

/// Every command line whose first word (after any flags but help and
/// version) is `hook`, read the way clap reads `hook <host> [--event NAME]`
/// where clap would accept it, and leniently where clap would fail: the
/// first word that names a host is the host, `--event` is taken where it
/// stands, and the rest is ignored. `None` for other commands and for a
/// bare `hook --help` / `hook -h`.
fn hook_argv(args: impl Iterator<Item = std::ffi::OsString>) -> Option<HookArgv> {
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
    if lead == 0 && rest.len() == 1 && matches!(rest[0].as_str(), "-h" | "--help") {
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

/// A hook whose host cannot be told: no answer can be in the right
/// dialect, and an empty stdout is "no opinion" for the Claude-style hosts.
/// Cursor wants JSON, so for it an empty stdout is no decision either way
/// (not verified against Cursor: what it does with a hook that answers
/// nothing is its own). So print nothing, drain stdin (the host's write
/// must not fail), say why on stderr, exit 0. A name that only looks like
/// a host (`cursor-agent`, `claud`) is not guessed at: a wrong dialect
/// could be read as a decision.
fn run_hook_without_host(argv: &HookArgv, started: Instant) -> ExitCode {
    let _ = stdin::read_bounded(stdin::MAX_PAYLOAD_BYTES, started + stdin::STDIN_DEADLINE);
    let words = if argv.ignored.is_empty() { "nothing".to_string() } else { argv.ignored.join(" ") };
    eprintln!(
        "leanctx hook: no host in the arguments ({words}); expected cursor, claude-code, codex or codebuddy; \
         answering nothing, not recording"
    );
    ExitCode::SUCCESS
}

/// The options of a fast-path command (`--name value`, `--name=value`, and
/// `--flag` for names not in `valued`), read as clap reads them: `None` for
/// anything clap would read differently (a word that is not an option, a
/// flag given a value, a value that looks like an option other than `-`),
/// so that clap reads and reports it.
fn fast_opts<'a>(rest: &'a [String], valued: &[&str]) -> Option<Vec<(&'a str, Option<String>)>> {
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
fn scope_args(mut args: impl Iterator<Item = std::ffi::OsString>) -> Option<ScopeCmd> {
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
struct LedgerCmd {
    deliver: bool,
    args: LedgerArgs,
    result: Option<PathBuf>,
}

fn ledger_args(mut args: impl Iterator<Item = std::ffi::OsString>) -> Option<LedgerCmd> {
    let deliver = match args.next()?.to_str()? {
        "stub" => false,
        "deliver" => true,
        _ => return None,
    };
    let rest: Vec<String> = args.map(|a| a.into_string().ok()).collect::<Option<_>>()?;
    let (mut call, mut key, mut version, mut result, mut json) = (None, None, None, None, false);
    for (name, value) in fast_opts(&rest, &["--call", "--key", "--version", "--result"])? {
        match name {
            "--call" if call.is_none() => call = value.map(PathBuf::from),
            "--key" if key.is_none() => key = value,
            "--version" if version.is_none() => version = value,
            "--result" if result.is_none() => result = value.map(PathBuf::from),
            "--json" if !json => json = true,
            _ => return None,
        }
    }
    if deliver && result.is_none() {
        return None;
    }
    let args = LedgerArgs { call: call?, key: key?, version: version?, json };
    Some(LedgerCmd { deliver, args, result })
}

type InstallFn = fn(Host, &install::InstallOptions, &mut dyn Write) -> Result<install::Report, install::InstallError>;

/// `hooks install|uninstall` for each host named (each once, in order): a
/// host that fails does not stop the others; exit 1 if any failed.
fn install_each(hosts: &[Host], a: InstallArgs, create: bool, if_present: bool, uninstalling: bool) -> ExitCode {
    let f: InstallFn = if uninstalling { install::uninstall } else { install::install };
    let opts = install::InstallOptions {
        project: a.project,
        local: a.local,
        dry_run: a.dry_run,
        create,
        if_present,
        overlap_noted: Default::default(),
    };
    let mut seen = Vec::new();
    let mut reports = Vec::new();
    let mut out = io::stdout().lock();
    let mut sink = io::sink();
    for &h in hosts {
        if seen.contains(&h) {
            continue;
        }
        seen.push(h);
        let w: &mut dyn Write = if a.json { &mut sink } else { &mut out };
        let rep = f(h, &opts, w).unwrap_or_else(|e| {
            if !a.json {
                let _ = out.flush();
                eprintln!("leanctx: {e}");
            }
            install::Report { host: Some(h), ok: false, dry_run: a.dry_run, error: Some(e.0), ..Default::default() }
        });
        reports.push(rep);
    }
    let removed = reports.iter().flat_map(|r| &r.files).any(|f| !f.removed.is_empty());
    if a.json {
        let _ = writeln!(out, "{}", to_json(&reports));
    } else if uninstalling && removed && !a.dry_run {
        let _ = writeln!(out, "{}", install::BINARY_STAYS);
    }
    let _ = out.flush();
    if reports.iter().all(|r| r.ok) { ExitCode::SUCCESS } else { ExitCode::from(1) }
}

/// The hook: never anything but exit 0 and a well-formed answer.
fn run_hook(host: Host, event: Option<String>, started: Instant) -> ExitCode {
    let fallback_event = event.clone().unwrap_or_default();
    let result = std::panic::catch_unwind(|| {
        let input = stdin::read_bounded(stdin::MAX_PAYLOAD_BYTES, started + stdin::STDIN_DEADLINE);
        let ctx = HookContext {
            host,
            event_override: event,
            env: HookEnv::from_process(),
            now_ms: clock::now_ms_env(),
            data_dir: paths::data_dir_path(),
        };
        hook::run(&ctx, input)
    });
    match result {
        Ok(outcome) => {
            for d in &outcome.diagnostics {
                eprintln!("leanctx hook {host}: {d}");
            }
            if let Some(s) = outcome.stdout {
                print_out(&s);
            }
        }
        Err(_) => {
            eprintln!("leanctx hook {host}: internal error; answering without recording");
            if let Some(s) = hook::fail_open_answer(host, &fallback_event) {
                print_out(&s);
            }
        }
    }
    ExitCode::SUCCESS
}

/// Print a line to stdout; a closed pipe is not an error.
fn print_out(s: &str) {
    let mut out = io::stdout().lock();
    let _ = out.write_all(s.as_bytes());
    if !s.ends_with('\n') {
        let _ = out.write_all(b"\n");
    }
    let _ = out.flush();
}

fn to_json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}

fn exit(r: Result<u8, String>) -> ExitCode {
    match r {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("leanctx: {e}");
            ExitCode::from(2)
        }
    }
}

/// Read a JSON argument from a file or stdin (`-`), at most `max` bytes.
fn read_json_arg(flag: &str, path: &std::path::Path, max: usize) -> Result<serde_json::Value, String> {
    let bytes = if path.as_os_str() == "-" {
        match stdin::read_bounded(max, Instant::now() + stdin::STDIN_DEADLINE) {
            stdin::Input::Complete(b) => b,
            stdin::Input::TimedOut(b) if serde_json::from_slice::<serde_json::Value>(&b).is_ok() => b,
            stdin::Input::TimedOut(_) => return Err(format!("{flag} -: stdin did not close in time")),
            stdin::Input::TooLarge { .. } => return Err(format!("{flag} -: larger than {max} bytes")),
            stdin::Input::Error(e) => return Err(format!("{flag} -: {e}")),
        }
    } else {
        let mut f = std::fs::File::open(path).map_err(|e| format!("{flag} {}: {e}", path.display()))?;
        let mut b = Vec::new();
        (&mut f).take(max as u64 + 1).read_to_end(&mut b).map_err(|e| format!("{flag} {}: {e}", path.display()))?;
        if b.len() > max {
            return Err(format!("{flag} {}: larger than {max} bytes", path.display()));
        }
        b
    };
    serde_json::from_slice(&bytes).map_err(|e| format!("{flag}: not JSON: {e}"))
}

/// Read an MCP call from a file or stdin (bounded like a hook payload).
fn read_call(arg: &CallArg) -> Result<Option<McpCall>, String> {
    let Some(path) = &arg.call else { return Ok(None) };
    let v = read_json_arg("--call", path, stdin::MAX_PAYLOAD_BYTES)?;
    McpCall::from_json(&v).map(Some).ok_or_else(|| "--call: no tool name (params.name) in the call".into())
}

/// `stub` and `deliver`.
fn ledger_cmd(cmd: LedgerCmd) -> Result<u8, String> {
    let LedgerCmd { deliver, args, result, .. } = cmd;
    if args.call.as_os_str() == "-" && result.as_ref().is_some_and(|r| r.as_os_str() == "-") {
        return Err("--call and --result cannot both be read from stdin".into());
    }
    leanctx::ledger::check_name("--key", &args.key).map_err(|e| e.to_string())?;
    leanctx::ledger::check_name("--version", &args.version).map_err(|e| e.to_string())?;
    let call = read_call(&CallArg { call: Some(args.call.clone()) })?.expect("--call given");
    // An error result is a result, but delivers no content: nothing to record.
    let content = match &result {
        Some(path) => {
            let v = read_json_arg("--result", path, leanctx::ledger::MAX_RESULT_BYTES)?;
            match leanctx::ledger::sent_content(&v) {
                Ok(c) => Some(Ok(c)),
                Err(e @ leanctx::ledger::InputError::ErrorResult) => Some(Err(e.to_string())),
                Err(e) => return Err(e.to_string()),
            }
        }
        None => None,
    };
    let not_recorded = |why: String| leanctx::stub::Recorded { recorded: false, why: Some(why), call_ref: None };
    let rp = ReadPath::from_process_for_cli();
    if deliver {
        let rec = match content.expect("deliver takes --result") {
            Ok(content) => rp.deliver(&call, &args.key, &args.version, &content).map_err(|e| e.to_string())?,
            Err(why) => not_recorded(why),
        };
        if args.json {
            print_out(&to_json(&rec));
        } else {
            match &rec.why {
                None => print_out("recorded"),
                Some(why) => print_out(&format!("not-recorded: {why}")),
            }
        }
        return Ok(if rec.recorded { 0 } else { 1 });
    }
    let sent = content.as_ref().and_then(|c| c.as_ref().ok());
    let mut ans = rp.stub(&call, &args.key, &args.version, sent).map_err(|e| e.to_string())?;
    if let Some(Err(why)) = content
        && !ans.decision.allow
    {
        ans.recorded = Some(not_recorded(why));
    }
    if args.json {
        print_out(&to_json(&ans));
    } else {
        let verb = if ans.decision.allow { "allow" } else { "withhold" };
        print_out(&format!("{verb} {}", ans.decision.reason.as_str()));
    }
    Ok(if ans.decision.allow { 0 } else { 1 })
}

fn scope(cmd: ScopeCmd) -> Result<u8, String> {
    let rp = ReadPath::from_process_for_cli();
    match cmd {
        ScopeCmd::Current { fresh: _, json, call } => {
            let call = read_call(&call)?;
            let res = rp.resolve(call.as_ref(), rp.now());
            if json {
                print_out(&to_json(&res));
            } else {
                print_out(res.caller.scope.as_deref().unwrap_or("unknown"));
            }
            Ok(if res.caller.scope.is_some() { 0 } else { 1 })
        }
        ScopeCmd::Check { delivered, at, cold, json, call } => {
            // 10^14 ms is the year 5138: a value this large is microseconds
            // or nanoseconds, and read as milliseconds it would pass every
            // compaction check. (Smaller times ahead of the clock are not
            // trusted by the decision itself.)
            if let Some(at) = at.filter(|t| *t >= 100_000_000_000_000) {
                return Err(format!(
                    "--at {at}: expected unix milliseconds; this looks like microseconds or nanoseconds"
                ));
            }
            let call = read_call(&call)?;
            let delivered = delivered.filter(|d| !d.is_empty());
            let ans = rp.decide(&StubQuery {
                delivered: delivered.as_deref(),
                delivered_at_ms: at,
                cold,
                call: call.as_ref(),
            });
            if json {
                print_out(&to_json(&ans));
            } else {
                let verb = if ans.decision.allow { "allow" } else { "withhold" };
                print_out(&format!("{verb} {}", ans.decision.reason.as_str()));
            }
            Ok(if ans.decision.allow { 0 } else { 1 })
        }
    }
}

fn gate_check(host: Host, tool: &str, server: Option<&str>, cwd: Option<PathBuf>, json: bool) -> Result<u8, String> {
    let cwd = match cwd {
        Some(c) => c,
        None => std::env::current_dir().map_err(|e| format!("current dir: {e}"))?,
    };
    let report = gate::explain(host, tool, server, paths::data_dir_path().ok().as_deref(), &cwd);
    print_out(&if json { to_json(&report) } else { report.human() });
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hook's own reader reads exactly what clap reads where clap
    /// accepts the command line, and answers (never defers to clap, whose
    /// errors exit 2) where clap would not; only a bare `hook --help` is
    /// clap's.
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
        let help = [&["hook", "--help"][..], &["hook", "-h"][..]];
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
        assert_eq!(read(&["hook", "codex", "--help"]).ignored, ["--help"]);
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
            &["stub"],
        ];
        let mut fast_paths = 0;
        for argv in cases {
            let fast = ledger_args(argv.iter().map(std::ffi::OsString::from));
            let clap = Cli::try_parse_from(std::iter::once("leanctx").chain(argv.iter().copied()));
            let fields = |deliver: bool, a: &LedgerArgs, r: &Option<PathBuf>| {
                format!("{deliver} {:?} {} {} {} {r:?}", a.call, a.key, a.version, a.json)
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

/// The process entry point, without std's runtime setup: a hook is a fresh
/// process on every tool call, and that setup (the main thread's stack guard,
/// read from /proc/self/maps through glibc's sscanf) was a quarter of a
/// hook's instructions (callgrind). What it gave that leanctx needs is done
/// here: standard fds that are closed are opened on /dev/null (else a state
/// file could take fd 1 and receive the answer), SIGPIPE is ignored (a
/// closed pipe is an error, not a death: ripgrep's rule), and stdout is
/// flushed before the exit code is returned.
#[cfg(not(test))]
#[unsafe(no_mangle)]
pub extern "C" fn main(_argc: std::ffi::c_int, _argv: *const *const std::ffi::c_char) -> std::ffi::c_int {
    leanctx::fsx::prepare_process();
    let code = leanctx_main();
    let _ = io::stdout().flush();
    let _ = io::stderr().flush();
    exit_code(code)
}

/// The numeric value of an [`ExitCode`] (it has no accessor): leanctx only
/// ever exits 0, 1 or 2.
#[cfg(not(test))]
fn exit_code(code: ExitCode) -> std::ffi::c_int {
    [0u8, 1, 2].into_iter().find(|&n| ExitCode::from(n) == code).map_or(1, std::ffi::c_int::from)
}
