//! Tool `read`: whole content first; a stub only where the ledger says the
//! caller holds this version, confirmed whole, in its window.

use super::bases::Bases;
use super::page::{self, ReadArgs};
use super::session::{Memory, Noted};
use super::workspace::Workspace;
use super::{exact_scope, tool_result};
use crate::identity::decision::Reason;
use crate::identity::mcp_call::McpCall;
use crate::identity::readpath::ReadPath;
use crate::identity::stub::LedgerAnswer;
use crate::state::ledger::Content;
use crate::stats::Kind as SKind;
use serde_json::Value;
use std::time::Instant;

/// What a read answered, for the tests and the server's own counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Content,
    Stub,
    Diff,
    Error,
}

/// The server's side of one read.
pub struct Reader<'a> {
    pub rp: &'a ReadPath,
    pub ws: &'a Workspace,
    /// The most bytes handed over in one piece ([`crate::hosts::profile::whole_delivery_limit`]).
    pub limit: u64,
    pub bases: &'a mut Bases,
    pub memory: &'a mut Memory,
}

/// A diff goes out only when at most this fraction of the file's size
/// (1/2): "clearly smaller", else the file whole.
const DIFF_AT_MOST_DIVISOR: usize = 2;
/// The most held ranges asked of the ledger for one read's cover.
const MAX_PIECES: usize = 64;

impl Reader<'_> {
    /// Answer `read` for the request `call` (its `_meta` names the caller).
    pub fn read(&mut self, call: &McpCall) -> (Kind, Value) {
        let err = |e: String, file: &str| {
            self.stat(None, file, SKind::Error, 0, 0);
            (Kind::Error, tool_result(e, true))
        };
        let args = match page::parse_args(&call.arguments) {
            Ok(a) => a,
            Err(e) => return err(e, ""),
        };
        let f = match self.ws.read(&args.path) {
            Ok(f) => f,
            Err(e) => return err(e.0, &args.path),
        };
        let ReadArgs { offset, limit, .. } = args;
        let p = match page::page(&f.text, offset, limit, usize::try_from(self.limit).unwrap_or(usize::MAX)) {
            Ok(p) => p,
            Err(e) => return err(e, &f.path.to_string_lossy()),
        };
        let version = format!("blake3:{}", blake3::hash(f.text.as_bytes()).to_hex());
        let whole_key = f.path.to_string_lossy().into_owned();
        let key = if p.whole { whole_key.clone() } else { format!("{whole_key}#L{}-{}", p.first, p.last) };
        // A range is covered by a held whole copy of this version too.
        // Only a confirmed delivery backs a stub: the legacy kill switch's
        // blanket allow (`scope-disabled`) would stub files never sent.
        let ask = |k: &str| self.rp.stub(call, k, &version, None).ok();
        let confirmed = |a: &LedgerAnswer| a.decision.reason == Reason::ConfirmedDelivery;
        let first = ask(&whole_key);
        let scope = first.as_ref().and_then(exact_scope);
        let stub = match &first {
            Some(a) if confirmed(a) => Some((a.clone(), 1)),
            _ if !p.whole => ask(&key).filter(confirmed).map(|a| (a, 1)),
            _ => None,
        };
        // Else every line asked for may lie in ranges held of this version.
        let stub = stub.or_else(|| self.held_in_pieces(call, scope.as_deref()?, &whole_key, &version, &p));
        if let Some((ans, pieces)) = stub {
            if p.whole {
                self.bases.put(&key, &version, &f.text);
            }
            let text = stub_text(&f.shown, &p, &version, &ans, pieces, self.rp.now());
            // What a plain read would have sent for this request: the
            // delivery backing the stub may be a diff (its length would
            // understate the saving), or the whole file for a range.
            let whole = if p.whole { f.text.len() } else { page::render(&f.shown, &f.text, &p).len() } as u64;
            self.stat(Some(&ans), &whole_key, SKind::Stub, text.len() as u64, whole);
            return (Kind::Stub, tool_result(text, false));
        }
        if p.whole {
            self.bases.put(&key, &version, &f.text);
            if let Some(diff) = self.diff(call, &key, &version, &f.shown, &f.text) {
                if let Some(s) = &scope {
                    let n = Noted {
                        key: &key,
                        file: &whole_key,
                        shown: &f.shown,
                        version: &version,
                        len: diff.len() as u64,
                        lines: None,
                    };
                    self.memory.note(s, &n);
                }
                self.stat(first.as_ref(), &whole_key, SKind::Diff, diff.len() as u64, f.text.len() as u64);
                return (Kind::Diff, tool_result(diff, false));
            }
        }
        let text = page::render(&f.shown, &f.text, &p);
        let content = Content::of_text(&text);
        // Recorded for the caller when the call names it exactly; a call
        // that does not is served all the same (it never gets a stub).
        let recorded = self.rp.deliver(call, &key, &version, &content);
        super::guard::test_panic("delivered", &args.path, &text);
        match recorded {
            Ok(r) if r.recorded => {
                if let Some(s) = &scope {
                    let lines = (!p.whole).then_some((p.first, p.last));
                    let n = Noted {
                        key: &key,
                        file: &whole_key,
                        shown: &f.shown,
                        version: &version,
                        len: content.len,
                        lines,
                    };
                    self.memory.note(s, &n);
                }
            }
            Ok(_) => {}
            Err(e) => eprintln!("leanctx serve: delivery of {} not recorded: {e}", f.shown),
        }
        // Whole where nothing could be stubbed; withheld (with the reason)
        // where something of this file was delivered but is not provably held.
        let kind = match first.as_ref().map(|a| a.decision.reason) {
            None | Some(Reason::NotDelivered | Reason::VersionChanged) => SKind::Whole,
            Some(r) => SKind::Withheld(r.as_str()),
        };
        self.stat(first.as_ref(), &whole_key, kind, content.len, content.len);
        (Kind::Content, tool_result(text, false))
    }

    /// The answer in the stats (`leanctx stats`): names and sizes only.
    fn stat(&self, ans: Option<&LedgerAnswer>, file: &str, kind: SKind<'_>, sent: u64, whole: u64) {
        let o = crate::stats::Outcome {
            via: crate::stats::Via::Serve,
            host: ans.and_then(|a| a.caller.host),
            conversation: ans.and_then(|a| a.caller.conversation.as_deref().or(a.caller.scope.as_deref())),
            file,
            kind,
            sent: Some(sent),
            whole,
            t_ms: Some(self.rp.now()),
        };
        crate::stats::record_in(self.rp.data_dir(), &o);
    }
}

impl Reader<'_> {
    /// Whether every line of `p` lies in ranges of this version delivered to
    /// `scope` and each still held (the ledger's `confirmed-delivery`, asked
    /// piece by piece): the first piece's answer and how many pieces. Lines
    /// only partly held are sent whole (see docs/ARCHITECTURE.md).
    fn held_in_pieces(
        &self,
        call: &McpCall,
        scope: &str,
        file: &str,
        version: &str,
        p: &page::Page,
    ) -> Option<(LedgerAnswer, usize)> {
        if p.total == 0 {
            return None;
        }
        let mut held = Vec::new();
        for (key, lines) in self.memory.ranges(scope, file, version, (p.first, p.last), MAX_PIECES) {
            match self.rp.stub(call, &key, version, None) {
                Ok(a) if a.decision.reason == Reason::ConfirmedDelivery => held.push((a, lines)),
                _ => {}
            }
        }
        let spans: Vec<(usize, usize)> = held.iter().map(|(_, l)| *l).collect();
        let chosen = page::cover((p.first, p.last), &spans)?;
        Some((held.swap_remove(chosen[0]).0, chosen.len()))
    }

    /// A diff against the version this caller provably holds (its newest
    /// delivery of the key, confirmed whole, in this window, its own bases
    /// held), recorded as a delivery with that base; `None` when it holds
    /// none the server still has, or the diff is not clearly smaller.
    fn diff(&mut self, call: &McpCall, key: &str, version: &str, shown: &str, text: &str) -> Option<String> {
        let (base, old) = self.bases.candidates(key, version).into_iter().find(|(v, _)| {
            self.rp.stub(call, key, v, None).is_ok_and(|a| a.decision.reason == Reason::ConfirmedDelivery)
        })?;
        let short = |v: &str| v[..v.len().min("blake3:".len() + 12)].to_string();
        // Hunks with one line of context and no file header (the first line
        // names the file): the model gets the change, not a patch file. Three
        // lines of context and a long preamble made a one-line edit cost
        // about five times the minimal diff (benches/workload).
        let mut out = format!(
            "[{shown} changed since you read it: unified diff from your copy ({}) to now ({})]\n",
            short(&base),
            short(version)
        );
        let at_most = text.len() / DIFF_AT_MOST_DIVISOR;
        // Bounded (diff.rs): no diff when it cannot fit, Myers for at most
        // MYERS_DEADLINE; the rule below judges the diff actually taken.
        let deadline = Instant::now().checked_add(super::diff::MYERS_DEADLINE);
        out += &super::diff::unified(&old, text, 1, at_most.saturating_sub(out.len()), deadline).ok()?;
        if out.len() > at_most {
            return None;
        }
        match self.rp.deliver_with_base(call, key, version, Some(&base), &Content::of_text(&out)) {
            Ok(r) if r.recorded => Some(out),
            // Not recorded (the caller cannot be named): the file whole.
            _ => None,
        }
    }
}

/// The stub: which file, which version, when the caller got it.
fn stub_text(shown: &str, p: &page::Page, version: &str, ans: &LedgerAnswer, pieces: usize, now: u64) -> String {
    let short = &version[..version.len().min("blake3:".len() + 12)];
    let what =
        if p.whole { format!("version {short}") } else { format!("lines {}-{} of version {short}", p.first, p.last) };
    let when = match (&ans.delivery, pieces) {
        (Some(d), 1) => format!("delivered {} s ago", now.saturating_sub(d.delivered_at_ms) / 1000),
        (_, 1) => "delivered earlier".into(),
        (_, n) => format!("delivered in {n} ranges"),
    };
    // Short: a stub is most of what a re-read costs (benches/workload).
    format!("[unchanged] {shown}: you already have {what} ({when}); use that copy.")
}
