//! The `leanctx` command line: [`run`] reads the arguments (the per-call
//! commands by hand in `fast.rs`, the rest with clap in `args.rs`), runs one
//! command (a file each) and returns the exit code.
//!
//! Exit codes: `hook` always 0 (fail open). `scope check`, `stub`: 0 stub
//! allowed, 1 withhold, 2 error. `scope current`: 0 caller known, 1
//! unknown, 2 error. `deliver`: 0 recorded, 1 not recorded, 2 error.
//! Everything else: 0 success, 1 failure, 2 usage error.

mod args;
mod error;
mod fast;
mod gate;
mod hook;
mod hooks;
mod input;
mod ledger;
mod panics;
mod scope;
mod stats;

use crate::Host;
use crate::identity::readpath::ReadPath;
use args::{Cli, Command, GateCmd, HooksCmd};
use clap::{CommandFactory, Parser};
use std::io::{self, Write};
use std::process::ExitCode;
use std::time::Instant;

/// Run the command this process was started with.
pub fn run() -> ExitCode {
    let started = Instant::now();
    // The hook runs on every tool call, and must answer whatever its
    // arguments: every `hook …` command line is read here, never by clap
    // (whose errors exit 2, which every host takes as "block"; its full
    // command tree was also a third of the hook's own instructions). Only a
    // `hook … --help` goes to clap.
    if let Some(argv) = fast::hook_argv(std::env::args_os().skip(1)) {
        return match argv.host {
            Some(host) => {
                if !argv.ignored.is_empty() {
                    eprintln!("leanctx hook {host}: ignoring arguments it does not know: {}", argv.ignored.join(" "));
                }
                hook::run_hook(host, argv.event, started)
            }
            None => hook::run_hook_without_host(&argv, started),
        };
    }
    // The CLI read path is per MCP call too: clap cost it ~95 µs (1.30x ->
    // 1.20x the floor, benches/hooks).
    if let Some(cmd) = fast::scope_args(std::env::args_os().skip(1)) {
        let json = cmd.json();
        return exit_as(scope::scope(cmd), json);
    }
    if let Some(cmd) = fast::ledger_args(std::env::args_os().skip(1)) {
        let json = cmd.args.json;
        return exit_as(ledger::ledger_cmd(cmd), json);
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // Help and version go to stdout (exit 0), usage errors to stderr
        // (exit 2); a failed write of either is reported, exit 2.
        Err(e) if e.use_stderr() => {
            eprint!("{}", e.render());
            return ExitCode::from(2);
        }
        Err(e) => return exit(print_out(&e.render().to_string()).map(|()| 0)),
    };
    match cli.command {
        Command::Hook { host, event } => hook::run_hook(host, event, started),
        Command::Scope(cmd) => {
            let json = cmd.json();
            exit_as(scope::scope(cmd), json)
        }
        Command::Stub { ledger, result } => {
            let json = ledger.json;
            exit_as(ledger::ledger_cmd(fast::LedgerCmd { deliver: false, args: ledger, result }), json)
        }
        Command::Deliver { ledger, result } => {
            let json = ledger.json;
            exit_as(ledger::ledger_cmd(fast::LedgerCmd { deliver: true, args: ledger, result: Some(result) }), json)
        }
        Command::Status { json } => {
            let s = crate::status::gather(&ReadPath::from_process());
            let text = if json {
                match to_json(&s) {
                    Ok(t) => t,
                    Err(e) => return exit(Err(e)),
                }
            } else {
                s.human()
            };
            exit(print_out(&text).map(|()| if s.healthy { 0 } else { 1 }))
        }
        Command::Stats(a) => {
            let json = a.json;
            exit_as(stats::stats(a), json)
        }
        Command::Serve => {
            panics::quiet_panics("leanctx serve");
            ExitCode::from(crate::serve::serve_stdio())
        }
        Command::Completions { shell } => {
            // Into memory first: clap_complete panics on a failed write.
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "leanctx", &mut script);
            exit(write_all(&mut io::stdout().lock(), &script, false).map(|()| 0))
        }
        Command::Gate(GateCmd::Check { host, tool, server, cwd, json }) => {
            exit_as(gate::gate_check(host, &tool, server.as_deref(), cwd, json), json)
        }
        Command::Hooks(HooksCmd::Install { hosts, all, opts, create, if_present }) => {
            let hosts = if all { Host::ALL.to_vec() } else { hosts };
            hooks::install_each(&hosts, opts, create, if_present || all, false)
        }
        Command::Hooks(HooksCmd::Uninstall { hosts, opts }) => hooks::install_each(&hosts, opts, false, false, true),
        Command::Hooks(HooksCmd::Status { host, project, json }) => hooks::status(host, project.as_deref(), json),
    }
}

/// Write `s` to stdout (with a line break if it lacks one) and flush. A
/// write that fails (a full disk, a closed pipe) is an error the command
/// reports, never a silent exit 0 or a panic (issue 25).
pub(crate) fn print_out(s: &str) -> Result<(), error::CliError> {
    write_all(&mut io::stdout().lock(), s.as_bytes(), !s.ends_with('\n'))
}

fn write_all(out: &mut dyn Write, bytes: &[u8], newline: bool) -> Result<(), error::CliError> {
    out.write_all(bytes)
        .and_then(|()| if newline { out.write_all(b"\n") } else { Ok(()) })
        .and_then(|()| out.flush())
        .map_err(|e| error::CliError::caused(format!("cannot write output: {e}"), e))
}

/// A report as JSON. Every path in a report serializes (lossily), so this
/// failing is a bug; it is an error, never a `{"error": …}` on stdout with
/// a success exit.
pub(crate) fn to_json<T: serde::Serialize>(v: &T) -> Result<String, error::CliError> {
    serde_json::to_string_pretty(v)
        .map_err(|e| error::CliError::caused(format!("cannot write the report as JSON: {e}"), e))
}

pub(crate) fn exit(r: Result<u8, error::CliError>) -> ExitCode {
    exit_as(r, false)
}

/// Exit 2 on an error, said on stderr and, for `--json`, on stdout as
/// `{"error": "..."}` too: a caller that reads only stdout sees why.
pub(crate) fn exit_as(r: Result<u8, error::CliError>, json: bool) -> ExitCode {
    match r {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("leanctx: {e}");
            if json && !e.is_output() {
                let _ = print_out(&serde_json::json!({ "error": e.to_string() }).to_string());
            }
            ExitCode::from(2)
        }
    }
}
