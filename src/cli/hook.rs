//! `leanctx hook <host>`: answer the host, whatever happens.

use super::fast::HookArgv;
use super::print_out;
use crate::Host;
use crate::base::{clock, paths};
use crate::hook::payload as stdin;
use crate::hook::{self, HookContext};
use crate::hosts::HookEnv;
use std::process::ExitCode;
use std::time::Instant;

/// A hook whose host cannot be told: no answer can be in the right
/// dialect, and an empty stdout is "no opinion" for the Claude-style hosts.
/// Cursor wants JSON, so for it an empty stdout is no decision either way
/// (not verified against Cursor: what it does with a hook that answers
/// nothing is its own). So print nothing, drain stdin (the host's write
/// must not fail), say why on stderr, exit 0. A name that only looks like
/// a host (`cursor-agent`, `claud`) is not guessed at: a wrong dialect
/// could be read as a decision.
pub(crate) fn run_hook_without_host(argv: &HookArgv, started: Instant) -> ExitCode {
    let _ = stdin::read_bounded(stdin::MAX_PAYLOAD_BYTES, started + stdin::STDIN_DEADLINE);
    let words = if argv.ignored.is_empty() { "nothing".to_string() } else { argv.ignored.join(" ") };
    eprintln!(
        "leanctx hook: no host in the arguments ({words}); expected cursor, claude-code, codex or codebuddy; \
         answering nothing, not recording"
    );
    ExitCode::SUCCESS
}

/// The hook: never anything but exit 0 and a well-formed answer.
pub(crate) fn run_hook(host: Host, event: Option<String>, started: Instant) -> ExitCode {
    let fallback_event = event.clone().unwrap_or_default();
    super::panics::quiet_panics("leanctx hook");
    let result = std::panic::catch_unwind(|| {
        let input = stdin::read_bounded(stdin::MAX_PAYLOAD_BYTES, started + stdin::STDIN_DEADLINE);
        test_panic(&input);
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
            if let Some(s) = outcome.stdout
                && let Err(e) = print_out(&s)
            {
                // The host closed its end: still exit 0 (fail open).
                eprintln!("leanctx hook {host}: {e}");
            }
        }
        Err(_) => {
            eprintln!("leanctx hook {host}: internal error; answering without recording");
            if let Some(s) = hook::fail_open_answer(host, &fallback_event) {
                let _ = print_out(&s);
            }
        }
    }
    ExitCode::SUCCESS
}

/// Tests only, and only in debug builds: `LEANCTX_HOOK_PANIC` set makes the
/// hook panic with a message that quotes its payload, so the tests can see
/// through the real binary that the answer still comes and the payload
/// stays off stderr. A release build has no such point.
#[cfg(debug_assertions)]
fn test_panic(input: &stdin::Input) {
    if std::env::var_os("LEANCTX_HOOK_PANIC").is_some()
        && let stdin::Input::Complete(b) = input
    {
        panic!("LEANCTX_HOOK_PANIC: {}", String::from_utf8_lossy(b));
    }
}

#[cfg(not(debug_assertions))]
#[inline(always)]
fn test_panic(_: &stdin::Input) {}
