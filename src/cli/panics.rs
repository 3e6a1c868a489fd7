//! What a panic prints. std's default prints the panic's message, and a
//! formatted message can quote what the process was handling (a bad slice of
//! a line prints the line: a file's content, a prompt, a tool's input); a
//! host may keep its hooks' and servers' stderr in its logs. The long-lived
//! and per-call commands that catch their panics (`serve`, `hook`) print the
//! place in the source instead, and a plain literal message.

/// Replace the panic message for this process: `<who>: panic at <file:line:col>`.
pub(crate) fn quiet_panics(who: &'static str) {
    std::panic::set_hook(Box::new(move |info| {
        let place = info.location().map_or_else(|| "an unknown place".to_string(), |l| l.to_string());
        let what = match info.payload().downcast_ref::<&'static str>() {
            Some(literal) => format!(": {literal}"),
            None => " (its message is not shown: it may quote what was being handled)".to_string(),
        };
        eprintln!("{who}: panic at {place}{what}");
    }));
}
