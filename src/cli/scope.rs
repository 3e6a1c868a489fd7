//! `leanctx scope current|check`: the read path from the CLI.

use super::args::ScopeCmd;
use super::input::read_call;
use super::{print_out, to_json};
use crate::identity::readpath::{ReadPath, StubQuery};

pub(crate) fn scope(cmd: ScopeCmd) -> Result<u8, super::error::CliError> {
    let rp = ReadPath::from_process_for_cli();
    match cmd {
        ScopeCmd::Current { fresh: _, json, call } => {
            let call = read_call(&call)?;
            let res = rp.resolve(call.as_ref(), rp.now());
            if json {
                print_out(&to_json(&res)?);
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
                )
                .into());
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
                print_out(&to_json(&ans)?);
            } else {
                let verb = if ans.decision.allow { "allow" } else { "withhold" };
                print_out(&format!("{verb} {}", ans.decision.reason.as_str()));
            }
            Ok(if ans.decision.allow { 0 } else { 1 })
        }
    }
}
