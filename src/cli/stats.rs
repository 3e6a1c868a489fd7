//! `leanctx stats`: fold the log, then report.

use super::args::StatsArgs;
use super::error::CliError;
use super::{print_out, to_json};
use crate::base::{clock, paths};
use crate::stats::report::{self, Prices};
use crate::stats::store;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// How long `stats` waits for another fold before summing without one.
const FOLD_WAIT: Duration = Duration::from_millis(200);

pub(crate) fn stats(a: StatsArgs) -> Result<u8, CliError> {
    for (name, p) in [("--input-price", a.input_price), ("--cache-read-price", a.cache_read_price)] {
        if p.is_some_and(|p| !p.is_finite() || p < 0.0) {
            return Err(format!("{name}: expected a price of a million tokens, 0 or more").into());
        }
    }
    let now = clock::now_ms_env();
    let loaded = match paths::data_dir_path() {
        Ok(dir) => store::fold(&dir, now, true, Instant::now() + FOLD_WAIT),
        Err(e) => store::Loaded { problems: vec![format!("no data dir: {e}")], ..Default::default() },
    };
    let prices = Prices { input_per_mtok: a.input_price, cache_read_per_mtok: a.cache_read_price };
    let r = report::build(&loaded.agg, now / 86_400_000, a.since, a.by, prices, loaded.problems);
    if a.json {
        print_out(&to_json(&r)?)?;
    } else {
        let tty = std::io::stdout().is_terminal();
        let color = tty && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
        print_out(&crate::status::stats::human(&r, tty, color))?;
    }
    Ok(0)
}
