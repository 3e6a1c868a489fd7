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
mod scope;
mod stats;

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
    // bare `hook --help` goes to clap.
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
        return exit(scope::scope(cmd));
    }
    if let Some(cmd) = fast::ledger_args(std::env::args_os().skip(1)) {
        return exit(ledger::ledger_cmd(cmd));
    }
    let cli = Cli::parse();
    match cli.command {
        Command::Hook { host, event } => hook::run_hook(host, event, started),
        Command::Scope(cmd) => exit(scope::scope(cmd)),
        Command::Stub { ledger, result } => {
            exit(ledger::ledger_cmd(fast::LedgerCmd { deliver: false, args: ledger, result }))
        }
        Command::Deliver { ledger, result } => {
            exit(ledger::ledger_cmd(fast::LedgerCmd { deliver: true, args: ledger, result: Some(result) }))
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
            print_out(&text);
            if s.healthy { ExitCode::SUCCESS } else { ExitCode::from(1) }
        }
        Command::Stats(a) => exit(stats::stats(a)),
        Command::Completions { shell } => {
            let mut out = io::stdout().lock();
            clap_complete::generate(shell, &mut Cli::command(), "leanctx", &mut out);
            let _ = out.flush();
            ExitCode::SUCCESS
        }
        Command::Gate(GateCmd::Check { host, tool, server, cwd, json }) => {
            exit(gate::gate_check(host, &tool, server.as_deref(), cwd, json))
        }
        Command::Hooks(HooksCmd::Install { hosts, opts, create, if_present }) => {
            hooks::install_each(&hosts, opts, create, if_present, false)
        }
        Command::Hooks(HooksCmd::Uninstall { hosts, opts }) => hooks::install_each(&hosts, opts, false, false, true),
        Command::Hooks(HooksCmd::Status { host, project, json }) => hooks::status(host, project.as_deref(), json),
    }
}

/// Print a line to stdout; a closed pipe is not an error.
pub(crate) fn print_out(s: &str) {
    let mut out = io::stdout().lock();
    let _ = out.write_all(s.as_bytes());
    if !s.ends_with('\n') {
        let _ = out.write_all(b"\n");
    }
    let _ = out.flush();
}

/// A report as JSON. Every path in a report serializes (lossily), so this
/// failing is a bug; it is an error, never a `{"error": …}` on stdout with
/// a success exit.
pub(crate) fn to_json<T: serde::Serialize>(v: &T) -> Result<String, error::CliError> {
    serde_json::to_string_pretty(v)
        .map_err(|e| error::CliError::caused(format!("cannot write the report as JSON: {e}"), e))
}

pub(crate) fn exit(r: Result<u8, error::CliError>) -> ExitCode {
    match r {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("leanctx: {e}");
            ExitCode::from(2)
        }
    }
}
