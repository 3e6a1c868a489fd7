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
                print_out(&to_json(&res)?)?;
            } else {
                print_out(res.caller.scope.as_deref().unwrap_or("unknown"))?;
            }
            Ok(if res.caller.scope.is_some() { 0 } else { 1 })
        }
        ScopeCmd::Check { delivered, at, cold, json, call } => {
            if let Some(at) = at {
                check_at_ms(at)?;
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
                print_out(&to_json(&ans)?)?;
            } else {
                let verb = if ans.decision.allow { "allow" } else { "withhold" };
                print_out(&format!("{verb} {}", ans.decision.reason.as_str()))?;
            }
            Ok(if ans.decision.allow { 0 } else { 1 })
        }
    }
}

/// 10^12 ms is September 2001 and 10^14 ms the year 5138: outside that a
/// delivery time is seconds (read as milliseconds it is 1970, before every
/// compaction: "compacted" for ever) or microseconds or nanoseconds (after
/// every compaction: it would pass every check). Refused, exit 2.
pub(crate) fn check_at_ms(at: u64) -> Result<(), super::error::CliError> {
    match at {
        1_000_000_000_000..100_000_000_000_000 => Ok(()),
        100_000_000_000_000.. => {
            Err(format!("--at {at}: expected unix milliseconds; this looks like microseconds or nanoseconds").into())
        }
        _ => {
            Err(format!("--at {at}: expected unix milliseconds; this is before 2001 (seconds? multiply by 1000)")
                .into())
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn at_is_milliseconds_of_this_era() {
        for (at, ok) in [
            (1_795_979_857, false),   // seconds
            (999_999_999_999, false), // 2001, a millisecond short
            (1_000_000_000_000, true),
            (1_795_979_857_000, true), // milliseconds
            (99_999_999_999_999, true),
            (100_000_000_000_000, false), // microseconds from here on
            (1_795_979_857_000_000, false),
        ] {
            assert_eq!(super::check_at_ms(at).is_ok(), ok, "{at}");
        }
    }
}
