//! `leanctx stub` and `leanctx deliver`: the delivery ledger from the CLI.

use super::args::CallArg;
use super::error::CliError;
use super::fast::LedgerCmd;
use super::input::{read_call, read_json_arg};
use super::{print_out, to_json};
use crate::identity::readpath::ReadPath;
use crate::state::ledger;

/// `stub` and `deliver`.
pub(crate) fn ledger_cmd(cmd: LedgerCmd) -> Result<u8, CliError> {
    let LedgerCmd { deliver, args, result, .. } = cmd;
    if args.call.as_os_str() == "-" && result.as_ref().is_some_and(|r| r.as_os_str() == "-") {
        return Err("--call and --result cannot both be read from stdin".into());
    }
    ledger::check_name("--key", &args.key)?;
    ledger::check_name("--version", &args.version)?;
    let call = read_call(&CallArg { call: Some(args.call.clone()) })?.expect("--call given");
    // An error result is a result, but delivers no content: nothing to record.
    let content = match &result {
        Some(path) => {
            let v = read_json_arg("--result", path, ledger::MAX_RESULT_BYTES)?;
            match ledger::sent_content(&v) {
                Ok(c) => Some(Ok(c)),
                Err(e @ ledger::InputError::ErrorResult) => Some(Err(e.to_string())),
                Err(e) => return Err(e.into()),
            }
        }
        None => None,
    };
    let not_recorded =
        |why: String| crate::identity::stub::Recorded { recorded: false, why: Some(why), call_ref: None };
    let rp = ReadPath::from_process_for_cli();
    if deliver {
        let rec = match content.expect("deliver takes --result") {
            Ok(content) => rp.deliver_with_base(&call, &args.key, &args.version, args.base.as_deref(), &content)?,
            Err(why) => not_recorded(why),
        };
        if args.json {
            print_out(&to_json(&rec)?)?;
        } else {
            match &rec.why {
                None => print_out("recorded")?,
                Some(why) => print_out(&format!("not-recorded: {why}"))?,
            }
        }
        crate::stats::flush();
        return Ok(if rec.recorded { 0 } else { 1 });
    }
    let sent = content.as_ref().and_then(|c| c.as_ref().ok());
    let mut ans = rp.stub_with_base(&call, &args.key, &args.version, args.base.as_deref(), sent)?;
    if let Some(Err(why)) = content
        && !ans.decision.allow
    {
        ans.recorded = Some(not_recorded(why));
    }
    if args.json {
        print_out(&to_json(&ans)?)?;
    } else {
        print_out(&plain(ans.decision.allow, ans.decision.reason.as_str(), ans.recorded.as_ref()))?;
    }
    // After the answer: the server need not wait for the stats.
    crate::stats::flush();
    Ok(if ans.decision.allow { 0 } else { 1 })
}

/// `stub`'s plain answer in README's words: `serve-stub <reason>`, or
/// `send-content <reason>` and whether the delivery was recorded.
fn plain(allow: bool, reason: &str, recorded: Option<&crate::identity::stub::Recorded>) -> String {
    match (allow, recorded) {
        (true, _) => format!("serve-stub {reason}"),
        (false, None) => format!("send-content {reason}"),
        (false, Some(r)) if r.recorded => format!("send-content {reason}; delivery recorded"),
        (false, Some(r)) => {
            format!("send-content {reason}; delivery not recorded: {}", r.why.as_deref().unwrap_or("no reason given"))
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::identity::stub::Recorded;

    #[test]
    fn stub_says_serve_or_send_and_whether_it_was_recorded() {
        let rec = |recorded: bool, why: Option<&str>| Recorded { recorded, why: why.map(String::from), call_ref: None };
        let table = [
            (true, None, "serve-stub confirmed-delivery"),
            (false, None, "send-content confirmed-delivery"),
            (false, Some(rec(true, None)), "send-content confirmed-delivery; delivery recorded"),
            (
                false,
                Some(rec(false, Some("no exact caller"))),
                "send-content confirmed-delivery; delivery not recorded: no exact caller",
            ),
        ];
        for (allow, r, want) in table {
            assert_eq!(super::plain(allow, "confirmed-delivery", r.as_ref()), want);
        }
    }
}
