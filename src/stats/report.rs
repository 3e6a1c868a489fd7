//! What `leanctx stats` reports (pure): the figures of a range of days,
//! grouped one way, the withheld reasons ranked with what the user can do,
//! tokens estimated, optional cost. The `--json` form is this, serialized;
//! its fields are documented in the README ("leanctx stats").

use super::agg::{self, Aggregates, Day, Tally};
use serde::Serialize;
use std::collections::BTreeMap;

/// Tokens are estimated, not counted: bytes / 4, the usual rule of thumb for
/// code and English text with the hosts' BPE tokenizers (no tokenizer runs
/// here, and leanctx never sees the text it counts).
pub const BYTES_PER_TOKEN: u64 = 4;
const TOKEN_RULE: &str = "bytes / 4 (a rule of thumb for code and English; no tokenizer is run)";

/// `--since`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Since {
    /// The last `n` UTC days, today included.
    Days(u64),
    All,
}

impl Since {
    pub fn parse(s: &str) -> Result<Since, String> {
        let t = s.trim();
        if t == "all" {
            return Ok(Since::All);
        }
        match t.strip_suffix('d').and_then(|n| n.parse::<u64>().ok()) {
            Some(n) if (1..=agg::KEEP_DAYS).contains(&n) => Ok(Since::Days(n)),
            _ => Err(format!("--since {s:?}: expected Nd (1d to {}d, e.g. 7d, 30d) or all", agg::KEEP_DAYS)),
        }
    }

    fn label(self) -> String {
        match self {
            Since::Days(n) => format!("{n}d"),
            Since::All => "all".into(),
        }
    }
}

/// `--by`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum By {
    Day,
    Host,
    Session,
    File,
    Reason,
    Tool,
}

impl By {
    pub const ALL: [(&str, By); 6] = [
        ("day", By::Day),
        ("host", By::Host),
        ("session", By::Session),
        ("file", By::File),
        ("reason", By::Reason),
        ("tool", By::Tool),
    ];

    pub fn parse(s: &str) -> Result<By, String> {
        By::ALL
            .iter()
            .find(|(n, _)| *n == s.trim())
            .map(|(_, b)| *b)
            .ok_or_else(|| format!("--by {s:?}: expected one of {}", By::ALL.map(|(n, _)| n).join(", ")))
    }

    pub fn as_str(self) -> &'static str {
        By::ALL.iter().find(|(_, b)| *b == self).map_or("day", |(n, _)| n)
    }
}

/// Per-million-token prices the user gave (any currency).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Prices {
    pub input_per_mtok: Option<f64>,
    pub cache_read_per_mtok: Option<f64>,
}

/// Figures for a set of answers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Figures {
    pub reads: u64,
    pub whole: u64,
    pub stubs: u64,
    pub diffs: u64,
    pub withheld: u64,
    pub errors: u64,
    pub bytes_sent: u64,
    pub bytes_whole: u64,
    pub bytes_saved: u64,
    pub tokens_saved_est: u64,
}

impl From<Tally> for Figures {
    fn from(t: Tally) -> Figures {
        Figures {
            reads: t.reads,
            whole: t.whole,
            stubs: t.stubs,
            diffs: t.diffs,
            withheld: t.withheld,
            errors: t.errors,
            bytes_sent: t.sent,
            bytes_whole: t.would,
            bytes_saved: t.saved,
            tokens_saved_est: t.saved / BYTES_PER_TOKEN,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    pub key: String,
    #[serde(flatten)]
    pub figures: Figures,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ReasonRow {
    pub reason: String,
    pub count: u64,
    pub bytes_sent: u64,
    pub what_to_do: &'static str,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cost {
    #[serde(flatten)]
    pub prices: Prices,
    /// The saved tokens at the input price: what sending them once would
    /// have cost.
    pub saved_at_input: Option<f64>,
    /// The saved tokens at the cache-read price: what every later turn
    /// that re-sent them from the prompt cache would have cost, per turn.
    pub saved_per_later_turn_at_cache_read: Option<f64>,
}

/// The report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    pub version: u32,
    pub since: String,
    /// First and last UTC day of the range (`from` null for `all`).
    pub from: Option<String>,
    pub to: String,
    pub totals: Figures,
    pub by: &'static str,
    pub rows: Vec<Row>,
    /// Withheld answers by reason, most frequent first.
    pub withheld: Vec<ReasonRow>,
    pub tokens_estimated_as: &'static str,
    pub cost: Option<Cost>,
    /// By file and by session only the last days are kept in detail.
    pub detail_days: u64,
    pub unreadable_lines: u64,
    /// Files that could not be read or written, and what that left out.
    pub problems: Vec<String>,
}

/// What a user can do about each withheld reason.
pub fn what_to_do(reason: &str) -> &'static str {
    match reason {
        "unrecorded-call" => {
            "the host's PreToolUse hook did not record this call: run `leanctx status` (hooks not firing; Codex runs new hooks only after you trust them in /hooks)"
        }
        "unknown-caller" => {
            "the call does not name its chat: install the hooks (`leanctx hooks install`), check `leanctx status`, and pass the whole tools/call request (`--call`)"
        }
        "ambiguous-call" => {
            "two chats made the same call at once (Cursor chats overlapping): nothing to fix; it passes when one chat works at a time"
        }
        "unconfirmed" => {
            "the host did not confirm the model got the content whole: its post-tool hook did not fire (`leanctx status`; Codex: trust hooks in /hooks), or the result was cut (Claude Code over 50,000 chars without `anthropic/maxResultSizeChars`; Codex over tool_output_token_limit), or it carried `structuredContent`, which is all the model gets (send the content alone)"
        }
        "result-changed" => {
            "the server answered the same file and version with another result (an outline, then the full text): the model holds the other one; nothing to fix"
        }
        "compacted" => "the chat was compacted after the delivery: the model no longer has the file; nothing to fix",
        "window-changed" => {
            "Codex started a new context window, or the Claude Code session is open in another process: the model there does not have the file; nothing to fix"
        }
        "withdrawn" => {
            "Claude Code took the result out of the model's context without a hook (an idle cut, the API's clearing, a rewind), as its transcript shows: nothing to fix"
        }
        "transcript-unavailable" => {
            "Claude Code's transcript could not be read to confirm the result is still in context (missing, not a file, not yet named by a hook), or the chat was silent for over an hour: nothing to fix unless it persists (`leanctx status`)"
        }
        "state-unavailable" => "leanctx's state could not be read: run `leanctx status` and fix what it lists",
        "subagent-active" => {
            "a Cursor subagent of the chat was running and its calls cannot be told from the chat's: nothing to fix"
        }
        "concurrent" => {
            "several chats were live and the caller was not named per call: use a host that names calls (Claude Code, Codex) or one chat at a time"
        }
        _ => "see the reason codes in the README (\"The delivery ledger\")",
    }
}

/// The report for `since`, grouped `by`, as of UTC day `today` (days since
/// the epoch).
pub fn build(a: &Aggregates, today: u64, since: Since, by: By, prices: Prices, problems: Vec<String>) -> Report {
    let first = match since {
        Since::Days(n) => Some(today + 1 - n.min(today + 1)),
        Since::All => None,
    };
    let days: Vec<(&String, &Day)> = a
        .days
        .iter()
        .filter(|(k, _)| agg::day_index(k).is_some_and(|i| first.is_none_or(|f| i >= f) && i <= today))
        .collect();
    let mut total = Tally::default();
    let mut groups: BTreeMap<String, Tally> = BTreeMap::new();
    let mut reasons: BTreeMap<String, Tally> = BTreeMap::new();
    for (k, d) in &days {
        total.merge(&d.total);
        for (r, t) in &d.reasons {
            reasons.entry(r.clone()).or_default().merge(t);
        }
        let part: Vec<(&String, &Tally)> = match by {
            By::Day => vec![(*k, &d.total)],
            By::Host => d.hosts.iter().collect(),
            By::Session => d.sessions.iter().collect(),
            By::File => d.files.iter().collect(),
            By::Reason => d.reasons.iter().collect(),
            By::Tool => d.via.iter().collect(),
        };
        for (g, t) in part {
            groups.entry(g.clone()).or_default().merge(t);
        }
    }
    if by == By::Day
        && let Since::Days(n) = since
    {
        // Every day of the range, so a chart shows the quiet days too.
        for i in (today + 1 - n.min(today + 1))..=today {
            groups.entry(agg::day_of(i * 86_400_000)).or_default();
        }
    }
    let mut rows: Vec<Row> = groups.into_iter().map(|(key, t)| Row { key, figures: t.into() }).collect();
    if by != By::Day {
        rows.sort_by(|x, y| {
            (y.figures.bytes_saved, y.figures.reads, &x.key).cmp(&(x.figures.bytes_saved, x.figures.reads, &y.key))
        });
    }
    let mut withheld: Vec<ReasonRow> = reasons
        .into_iter()
        .map(|(reason, t)| ReasonRow { what_to_do: what_to_do(&reason), reason, count: t.withheld, bytes_sent: t.sent })
        .collect();
    withheld.sort_by(|x, y| (y.count, &x.reason).cmp(&(x.count, &y.reason)));
    let totals = Figures::from(total);
    let tokens = totals.tokens_saved_est as f64;
    let cost = (prices.input_per_mtok.is_some() || prices.cache_read_per_mtok.is_some()).then(|| Cost {
        prices,
        saved_at_input: prices.input_per_mtok.map(|p| tokens * p / 1e6),
        saved_per_later_turn_at_cache_read: prices.cache_read_per_mtok.map(|p| tokens * p / 1e6),
    });
    Report {
        version: 1,
        since: since.label(),
        from: first.map(|f| agg::day_of(f * 86_400_000)),
        to: agg::day_of(today * 86_400_000),
        totals,
        by: by.as_str(),
        rows,
        withheld,
        tokens_estimated_as: TOKEN_RULE,
        cost,
        detail_days: agg::DETAIL_DAYS,
        unreadable_lines: a.unreadable_lines,
        problems,
    }
}

/// Bytes saved today and in the last 7 days (today included), for `status`.
pub fn saved_recent(a: &Aggregates, today: u64) -> (u64, u64) {
    let week = build(a, today, Since::Days(7), By::Day, Prices::default(), Vec::new());
    let today = week.rows.last().map_or(0, |r| r.figures.bytes_saved);
    (today, week.totals.bytes_saved)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::line::{Kind, Line, Via};

    fn add(a: &mut Aggregates, day: u64, file: &str, kind: Kind<'static>, whole: u64, sent: u64) {
        let saved = if matches!(kind, Kind::Stub | Kind::Diff) { whole.saturating_sub(sent) } else { 0 };
        let l = Line {
            t: day * 86_400_000 + 5,
            via: Via::Cli,
            host: Some(crate::Host::ClaudeCode),
            conv: Some("s1".into()),
            kind,
            file: file.into(),
            sent,
            whole,
            saved,
        };
        a.add(&l);
    }

    #[test]
    fn the_range_grouping_and_ranking() {
        let mut a = Aggregates::default();
        let today = 20_000;
        add(&mut a, today, "a", Kind::Stub, 1000, 100);
        add(&mut a, today - 3, "b", Kind::Diff, 800, 200);
        add(&mut a, today - 3, "b", Kind::Withheld("compacted"), 800, 800);
        add(&mut a, today - 3, "b", Kind::Withheld("unconfirmed"), 800, 800);
        add(&mut a, today - 2, "b", Kind::Withheld("unconfirmed"), 800, 800);
        add(&mut a, today - 10, "c", Kind::Stub, 5000, 10);
        let r = build(&a, today, Since::Days(7), By::Day, Prices::default(), vec![]);
        assert_eq!(r.rows.len(), 7, "every day of the range");
        assert_eq!((r.totals.reads, r.totals.bytes_saved, r.totals.tokens_saved_est), (5, 1500, 375));
        assert_eq!(r.withheld[0].reason, "unconfirmed");
        assert_eq!(r.withheld[0].count, 2);
        let r = build(&a, today, Since::All, By::File, Prices::default(), vec![]);
        assert_eq!(r.rows.iter().map(|r| r.key.as_str()).collect::<Vec<_>>(), ["c", "a", "b"]);
        assert_eq!(r.totals.bytes_saved, 1500 + 4990);
        let p = Prices { input_per_mtok: Some(3.0), cache_read_per_mtok: Some(0.3) };
        let c = build(&a, today, Since::Days(1), By::Host, p, vec![]).cost.unwrap();
        assert_eq!(c.saved_at_input, Some(225.0 * 3.0 / 1e6));
        assert_eq!(saved_recent(&a, today), (900, 1500));
    }

    #[test]
    fn options_parse_or_say_what_they_take() {
        assert_eq!(Since::parse("7d"), Ok(Since::Days(7)));
        assert_eq!(Since::parse("all"), Ok(Since::All));
        for bad in ["0d", "7", "-1d", "999d", "week"] {
            assert!(Since::parse(bad).unwrap_err().contains("expected"), "{bad}");
        }
        assert_eq!(By::parse("file"), Ok(By::File));
        assert!(By::parse("files").unwrap_err().contains("day, host, session, file, reason, tool"));
    }
}
