//! What a decision asks of the journal, kept by a long-lived reader and
//! brought up to date from only the bytes appended since its last look.
//!
//! An MCP server asks the read path on every re-read. Reading and parsing the
//! whole journal each time costs what the journal holds (up to a few hundred
//! KiB at its bound: ~250 µs), so a decision would get slower the busier the
//! chats. A [`Reader`] instead keeps the journal open and a [`Digest`] of it:
//! the journal only grows between trims, and a trim replaces the file, so
//! "same file, not shorter" means "read on from where we stopped", and
//! anything else means "start over". Holding the file open also keeps its
//! inode number from being reused by a later file. Every refresh takes the
//! shared lock, as a whole-file read does, so a decision is exactly as fresh.
//!
//! A digest answers each question exactly as [`View`] does on the whole
//! file: it drops records only where the question cannot tell (per
//! conversation and host the newest sighting and the latest end; per
//! conversation the latest compaction; the highest floor; claims, which it
//! is never asked about), keeps call and lineage lines unparsed until asked,
//! and answers by running `View`'s own code on what it kept. The one case where dropping could show: a sighting or end
//! stamped beyond the clock skew of the asking `now` (View skips it and uses
//! an older one). [`Digest::exact_at`] says so, and the caller then reads
//! the whole file instead.

use crate::base::host::Host;
use crate::base::scope::ScopeKind;
use crate::state::journal::{self, Call, CompactedAt, Record, View};
use fields::{call_fields, call_time, fields_of, last_field_is, next_to_last, span_in};
#[cfg(test)]
use hash::COLLIDE;
use hash::{ByHash, ByStr, hash_of};
use subs::Subagents;

const HOSTS: [Host; 4] = Host::ALL;

fn host_index(h: Host) -> usize {
    HOSTS.iter().position(|x| *x == h).unwrap_or(0)
}

/// A byte range of [`Digest::text`].
type Span = (usize, usize);

/// The newest sighting (time, event) and the latest end of one
/// conversation, per host.
#[derive(Clone, Copy, Debug, Default)]
struct PerHost {
    sighting: Option<(u64, Span)>,
    end: Option<u64>,
    /// The oldest sighting's time (when the conversation was first seen).
    first: Option<u64>,
}

/// The journal reduced to what the decisions ask.
///
/// The lines read are kept as they are (one string, no allocation per
/// line); call and lineage lines are only located, and parsed when asked
/// about; claim lines are not needed (claims read the whole file under the
/// exclusive lock).
#[derive(Clone, Debug, Default)]
pub struct Digest {
    /// Kept by a claim reader: only call and claim lines are located, and
    /// only [`Digest::claim_view`] answers.
    claims_only: bool,
    /// Every complete line read since the last start-over. Shared (not
    /// copied) by a claim reader seeded from a decision's reader
    /// ([`reader::Reader::for_claims_from`]) until either reads more: a
    /// one-shot Cursor claim copied 65-77 KB for nothing (77k
    /// instructions, ~16 page faults: benches/README.md).
    text: std::sync::Arc<String>,
    convs: ByStr<[PerHost; 4]>,
    compactions: ByStr<u64>,
    floor: u64,
    /// Per conversation, its subagent records and ends, for "which
    /// subagents were open at t" (a conversation with only ends is here too).
    subagents: ByStr<Subagents>,
    /// Call lines, in file order.
    calls: Vec<(Span, Option<u64>)>,
    /// Indices into `calls` by the call id field (next to last), for
    /// [`Digest::call_by_id`]: a lookup, not a scan of every call line.
    /// The newest call line with each id, keyed by [`hash_of`] the id (no
    /// allocation per line); a line that turns out to have another id (a
    /// collision) sends the lookup to a scan.
    /// Built on the first question that needs it, from `calls_indexed` on:
    /// a CLI process that asks nothing of call ids pays nothing for it.
    calls_by_id: std::cell::RefCell<ByHash<usize>>,
    calls_indexed: std::cell::Cell<usize>,
    /// Claim lines, in file order.
    claims: Vec<Span>,
    /// For claims, built on the first claim question and kept up to date.
    claim_index: ClaimIndex,
    /// Lineage lines (few: a trim keeps 64).
    lineage: Vec<(usize, Span)>,
    /// The newest time of any sighting, and of any end.
    newest_sighting: u64,
    newest_end: u64,
    /// Lines folded so far: the position ("order, not clocks") of the next.
    lines: usize,
    /// Per conversation, the positions of its latest compactions, by reach.
    compaction_at: ByStr<CompactedAt>,
    /// The last line folded, when it is a compaction's reach line: it
    /// qualifies the `P` line after it, even in the next fold.
    reach_line: Option<Span>,
    /// Per `scope\tkey`, the newest delivery line and its position.
    /// (by [`hash_of`] scope and key; collisions resolved on the parsed line)
    deliveries: ByHash<Vec<(usize, Span)>>,
    /// Per call ref, its acknowledgement lines and their positions.
    /// (by [`hash_of`] the ref; collisions resolved on the parsed line)
    acks: ByHash<Vec<(usize, Span)>>,
    /// [`hash_of`] (conversation, agent) of call records made by a `task:` scope.
    /// Keyed by the hash itself, as [`ByHash`]: std's randomly keyed
    /// hasher drew its keys from the OS (`getrandom`, a system call every
    /// process made for this set alone).
    task_calls: std::cell::RefCell<std::collections::HashSet<u64, std::hash::BuildHasherDefault<hash::KeyIsHash>>>,
}

/// Claim lines by key and by claimant, as indices into [`Digest::claims`].
/// Keyed by hash: a collision only adds lines, and the answer comes from
/// the parsed lines.
#[derive(Clone, Debug, Default)]
struct ClaimIndex {
    claims_done: usize,
    claims_by_key: ByHash<Vec<usize>>,
    claims_by_claimant: ByHash<Vec<usize>>,
}

fn get_or_insert<'m, V: Default>(map: &'m mut ByStr<V>, key: &str) -> &'m mut V {
    if !map.contains_key(key) {
        map.insert(key.to_string(), V::default());
    }
    map.get_mut(key).expect("just inserted")
}

impl Digest {
    /// Add journal text (complete lines only, as [`journal::parse`]: a last
    /// line without its newline is left out) and fold its records in.
    pub fn fold_text(&mut self, text: &str) {
        let complete = match text.rfind('\n') {
            Some(i) => &text[..=i],
            None => return,
        };
        let from = self.text.len();
        std::sync::Arc::make_mut(&mut self.text).push_str(complete);
        self.fold_from(from);
    }

    /// Fold the lines of `self.text[from..]` (complete lines) in.
    fn fold_from(&mut self, from: usize) {
        let Digest {
            text,
            convs,
            compactions,
            floor,
            subagents,
            calls,
            claims,
            lineage,
            newest_sighting,
            newest_end,
            claims_only,
            lines,
            compaction_at,
            deliveries,
            acks,
            reach_line,
            ..
        } = self;
        let text = text.as_str();
        for line in crate::base::bytes::lines(&text[from..]) {
            let at = *lines;
            *lines += 1;
            // A compaction's reach line qualifies the `P` line right after it.
            let pending = reach_line.take().and_then(|s| journal::ReachLine::parse(&text[s.0..s.1]));
            match line.as_bytes().first() {
                Some(b'p') => *reach_line = Some(span_in(text, line)),
                // Located now, parsed if a call id is asked about.
                Some(b'C') => {
                    calls.push((span_in(text, line), call_time(line)));
                }
                Some(b'K') => claims.push(span_in(text, line)),
                Some(b'#') | None => {}
                Some(_) if *claims_only => {}
                Some(_) => match journal::parse_line(line) {
                    Some(Record::Sighting { t, host, conv, event }) => {
                        let per = &mut get_or_insert(convs, conv)[host_index(host)];
                        per.first = Some(per.first.map_or(t, |f| f.min(t)));
                        let slot = &mut per.sighting;
                        // As View: the newest wins, a tie goes to the later line.
                        match slot {
                            Some((old, _)) if *old > t => {}
                            _ => *slot = Some((t, span_in(text, event))),
                        }
                        *newest_sighting = (*newest_sighting).max(t);
                    }
                    Some(Record::End { t, host, conv }) => {
                        let slot = &mut get_or_insert(convs, conv)[host_index(host)].end;
                        *slot = Some(slot.map_or(t, |old| old.max(t)));
                        *newest_end = (*newest_end).max(t);
                        get_or_insert(subagents, conv).end(t);
                    }
                    Some(Record::Compaction { t, host, conv, .. }) => {
                        let reach = journal::ReachLine::reach_of(pending, t, host, conv);
                        let e = get_or_insert(compactions, conv);
                        *e = (*e).max(t);
                        get_or_insert(compaction_at, conv).note(reach, at);
                    }
                    Some(Record::Delivery(d)) => {
                        deliveries.entry(hash_of(&[d.scope, d.key])).or_default().push((at, span_in(text, line)));
                    }
                    Some(Record::Ack(a)) => {
                        acks.entry(hash_of(&[a.call_ref])).or_default().push((at, span_in(text, line)))
                    }
                    Some(Record::Floor { t }) => *floor = (*floor).max(t),
                    Some(Record::SubagentStart { t, host, conv, agent }) => {
                        let agent = span_in(text, agent);
                        get_or_insert(subagents, conv).start(t, host_index(host), agent);
                    }
                    Some(Record::SubagentStop { t, host, conv, agent }) => {
                        let agent = agent.map(|a| span_in(text, a));
                        get_or_insert(subagents, conv).stop(t, host_index(host), agent);
                    }
                    Some(Record::Lineage { .. }) => lineage.push((at, span_in(text, line))),
                    Some(Record::Call(_) | Record::Claim { .. }) | None => {}
                },
            }
        }
    }

    pub fn of_text(text: &str) -> Digest {
        let mut d = Digest::default();
        d.fold_text(text);
        d
    }

    fn at(&self, span: Span) -> &str {
        &self.text[span.0..span.1]
    }

    /// Do this digest's answers at `now` equal View's on the whole file?
    /// (Not when a kept sighting or end lies beyond the skew of `now`.)
    pub fn exact_at(&self, now: u64) -> bool {
        !journal::is_future(self.newest_sighting, now) && !journal::is_future_end(self.newest_end, now)
    }

    /// The conversations live at `now`, as [`View::live_conversations`]
    /// finds them on the sightings and ends kept (one of each per
    /// conversation and host: nothing to merge): a sighting inside the
    /// window (so not from the future) and no end at or after it, an end
    /// from beyond the end skew not counting. Asked directly, not through a
    /// View built of them (a vector and two SipHash maps a question, twice:
    /// ~17,000 instructions; benches/README.md "Tenth pass, in process");
    /// the randomized comparison with View holds it to the same answers.
    fn live_convs(&self, now: u64) -> impl Iterator<Item = &str> {
        self.convs
            .iter()
            .filter(move |(_, hosts)| {
                hosts.iter().any(|h| {
                    h.sighting.is_some_and(|(t, _)| {
                        journal::in_window(t, now, journal::WINDOW_MS)
                            && h.end.filter(|&e| !journal::is_future_end(e, now)).is_none_or(|e| e < t)
                    })
                })
            })
            .map(|(c, _)| c.as_str())
    }

    /// [`View::concurrent`] (exact when [`Digest::exact_at`]`(now)`).
    pub fn concurrent(&self, now: u64) -> bool {
        self.live_convs(now).nth(1).is_some()
    }

    /// [`View::live_other_than`] (exact when [`Digest::exact_at`]`(now)`).
    pub fn live_other_than(&self, conv: &str, now: u64) -> bool {
        self.live_convs(now).any(|c| c != conv)
    }

    /// [`View::last_compaction`].
    pub fn last_compaction(&self, conv: &str) -> Option<u64> {
        self.compactions.get(conv).copied()
    }

    /// [`View::latest_compaction_any`].
    pub fn latest_compaction_any(&self) -> Option<u64> {
        self.compactions.values().copied().max()
    }

    /// [`View::compaction_floor`].
    pub fn compaction_floor(&self) -> u64 {
        self.floor
    }

    /// [`View::active_subagents`].
    pub fn active_subagents(&self, conv: &str, now: u64) -> Vec<&str> {
        self.open_subagents(conv, now).into_iter().map(|(a, _)| a).collect()
    }

    /// [`View::any_subagent_active`].
    pub fn any_subagent_active(&self, now: u64) -> bool {
        self.subagents.values().any(|s| s.any() && s.any_open_at(&self.text, now))
    }

    /// [`View::several_conversations`] (or more: every conversation seen).
    pub fn several_conversations(&self) -> bool {
        self.convs.len() > 1 || self.subagents.values().any(Subagents::any)
    }

    /// [`View::open_subagents`], at any `now` (exact whatever
    /// [`Digest::exact_at`] says: every subagent record and end is kept).
    pub fn open_subagents(&self, conv: &str, now: u64) -> Vec<(&str, u64)> {
        let Some(subs) = self.subagents.get(conv) else { return Vec::new() };
        subs.open_at(&self.text, now).into_iter().map(|(a, t)| (self.at(a), t)).collect()
    }

    /// [`View::subagent_unwitnessed`] (exact when [`Digest::exact_at`]`(now)`).
    pub fn subagent_unwitnessed(&self, conv: &str, host: Host, now: u64) -> bool {
        let h = host_index(host);
        let open = self.open_subagents(conv, now);
        if open.is_empty() {
            return false;
        }
        self.index_calls();
        if open.iter().any(|&(a, _)| self.task_calls.borrow().contains(&hash_of(&[conv, a]))) {
            return true;
        }
        let starts: Vec<u64> = self
            .subagents
            .values()
            .filter(|subs| subs.of_host(h))
            .flat_map(|subs| subs.open_at(&self.text, now))
            .map(|x| x.1)
            .collect();
        let firsts: Vec<u64> = self
            .convs
            .iter()
            .filter(|(c, _)| *c != conv)
            .filter_map(|(_, hosts)| hosts[h].first.filter(|&t| !journal::is_future(t, now)))
            .collect();
        !journal::each_has_its_own(starts, firsts)
    }

    /// [`View::lineage_for`].
    pub fn lineage_for(&self, host: Host, pid: u32, now: u64) -> Option<(u64, &str)> {
        let records = self.lineage.iter().filter_map(|(_, s)| journal::parse_line(self.at(*s))).collect();
        View { records }.lineage_for(host, pid, now)
    }

    /// Index the call lines read since the last question that needed it:
    /// the newest line per call id, and the (conversation, agent) of calls a
    /// `task:` scope made inside its parent's conversation.
    fn index_calls(&self) {
        let done = self.calls_indexed.get();
        if done >= self.calls.len() {
            return;
        }
        let mut by_id = self.calls_by_id.borrow_mut();
        let mut tasks = self.task_calls.borrow_mut();
        for i in done..self.calls.len() {
            let f = fields_of(self.at(self.calls[i].0));
            if let Some(id) = f.next_to_last {
                by_id.insert(hash_of(&[id]), i);
            }
            if let (Some(conv), Some(agent)) = (f.conv, f.agent)
                && ScopeKind::of(agent) == ScopeKind::Task
            {
                tasks.insert(hash_of(&[conv, agent]));
            }
        }
        self.calls_indexed.set(self.calls.len());
    }

    /// [`View::call_by_id`]: the newest well-formed call line with this id.
    ///
    /// Lines not yet indexed are searched first, newest first (a one-shot
    /// CLI process finds its call near the end and indexes nothing); only
    /// when they do not answer is the index brought up to date and asked.
    pub fn call_by_id(&self, call_id: &str) -> Option<Call<'_>> {
        let parse = |i: usize| match journal::parse_line(self.at(self.calls[i].0))? {
            Record::Call(c) if c.call_id == Some(call_id) => Some(c),
            _ => None,
        };
        let is_it = |i: usize| next_to_last(self.at(self.calls[i].0)) == Some(call_id);
        let done = self.calls_indexed.get().min(self.calls.len());
        if let Some(c) = (done..self.calls.len()).rev().find_map(|i| is_it(i).then(|| parse(i)).flatten()) {
            return Some(c);
        }
        self.index_calls();
        let newest = self.calls_by_id.borrow().get(&hash_of(&[call_id])).copied()?;
        if newest < done
            && let Some(c) = parse(newest)
        {
            return Some(c);
        }
        // Another id with the same hash, or a malformed newest line: the
        // indexed lines decide, newest first.
        (0..done).rev().find_map(|i| is_it(i).then(|| parse(i)).flatten())
    }

    /// [`View::latest_delivery`] (positions are this digest's own).
    pub fn latest_delivery(&self, scope: &str, key: &str) -> Option<(usize, crate::state::ledger::Delivery<'_>)> {
        // The newest line of this scope and key (a hash collision only adds lines).
        self.deliveries.get(&hash_of(&[scope, key]))?.iter().rev().find_map(|(at, span)| {
            match journal::parse_line(self.at(*span))? {
                Record::Delivery(d) if d.is_of(scope, key, None) => Some((*at, d)),
                _ => None,
            }
        })
    }

    /// [`View::newest_in_window`].
    pub fn newest_in_window(
        &self,
        scope: &str,
        key: &str,
        window: &str,
    ) -> Option<(usize, crate::state::ledger::Delivery<'_>)> {
        for (at, span) in self.deliveries.get(&hash_of(&[scope, key]))?.iter().rev() {
            if let Some(Record::Delivery(d)) = journal::parse_line(self.at(*span))
                && d.is_of(scope, key, None)
            {
                if d.window == Some(window) {
                    return Some((*at, d));
                }
                d.window.and_then(crate::state::ledger::pid_of_window)?;
            }
        }
        None
    }

    /// [`View::latest_start`].
    pub fn latest_start(&self, host: Host, pid: u32) -> Option<(usize, &str)> {
        self.lineage.iter().rev().find_map(|(at, s)| match journal::parse_line(self.at(*s)) {
            Some(Record::Lineage { host: h, pid: p, conv, .. }) if h == host && p == pid => Some((*at, conv)),
            _ => None,
        })
    }

    /// [`View::delivery_before`].
    pub fn delivery_before(
        &self,
        scope: &str,
        key: &str,
        version: Option<&str>,
        before: usize,
    ) -> Option<(usize, crate::state::ledger::Delivery<'_>)> {
        let lines = self.deliveries.get(&hash_of(&[scope, key]))?;
        lines.iter().rev().filter(|(at, _)| *at < before).find_map(|(at, span)| {
            match journal::parse_line(self.at(*span))? {
                Record::Delivery(d) if d.is_of(scope, key, version) => Some((*at, d)),
                _ => None,
            }
        })
    }

    /// [`View::acks_after`].
    pub fn acks_after(&self, call_ref: &str, after: usize) -> Vec<crate::state::ledger::Ack<'_>> {
        let Some(lines) = self.acks.get(&hash_of(&[call_ref])) else { return Vec::new() };
        lines
            .iter()
            .filter(|(at, _)| *at > after)
            .filter_map(|(_, s)| match journal::parse_line(self.at(*s))? {
                Record::Ack(a) if a.call_ref == call_ref => Some(a),
                _ => None,
            })
            .collect()
    }

    /// [`View::acks_after_at`].
    pub fn acks_after_at(&self, call_ref: &str, after: usize) -> Vec<(usize, crate::state::ledger::Ack<'_>)> {
        let Some(lines) = self.acks.get(&hash_of(&[call_ref])) else { return Vec::new() };
        let parsed = lines.iter().filter(|(at, _)| *at > after).map(|(at, s)| (*at, journal::parse_line(self.at(*s))));
        parsed
            .filter_map(
                |(at, r)| if let Some(Record::Ack(a)) = r { (a.call_ref == call_ref).then_some((at, a)) } else { None },
            )
            .collect()
    }

    /// [`View::started_after`].
    /// [`View::is_process_of`].
    pub fn is_process_of(&self, host: Host, pid: u32, conv: &str) -> bool {
        self.lineage.iter().any(|(_, s)| {
            matches!(journal::parse_line(self.at(*s)), Some(Record::Lineage { host: h, pid: p, conv: c, .. }) if h == host && p == pid && c == conv)
        })
    }

    pub fn started_after(&self, host: Host, pid: u32, conv: &str, after: usize) -> bool {
        self.lineage.iter().filter(|(at, _)| *at > after).any(|(_, s)| {
            matches!(journal::parse_line(self.at(*s)), Some(Record::Lineage { host: h, pid: p, conv: c, .. }) if h == host && p == pid && c == conv)
        })
    }

    /// [`View::compacted_after`].
    pub fn compacted_after(&self, conv: &str, scope: &str, own: Option<u32>, after: usize) -> bool {
        self.compaction_at.get(conv).is_some_and(|c| c.after(scope, own, after))
    }

    /// Bring the claim index up to the lines read so far.
    pub fn index_claims(&mut self) {
        let Digest { text, claims, claim_index: ix, .. } = self;
        for (i, s) in claims.iter().enumerate().skip(ix.claims_done) {
            if let Some(Record::Claim { key, claimant, .. }) = journal::parse_line(&text[s.0..s.1]) {
                ix.claims_by_key.entry(hash_of(&[key])).or_default().push(i);
                if let Some(c) = claimant {
                    ix.claims_by_claimant.entry(hash_of(&[c])).or_default().push(i);
                }
            }
        }
        ix.claims_done = claims.len();
    }

    /// The records a claim for `tool`/`fp` by `claimant` at `now` looks at,
    /// in file order: every claim by the claimant and the calls it names,
    /// and unless that already answers, the unclaimed calls with that tool
    /// and fingerprint inside the claim window.
    /// [`View::claimed_by`] and [`View::claim_candidates`] give the same
    /// answers on this as on the whole file (`mcp_call::choose_claim` asks
    /// both). Call
    /// [`Digest::index_claims`] first.
    pub fn claim_view(&self, tool: &str, fp: &str, claimant: Option<&str>, now: u64) -> View<'_> {
        let ix = &self.claim_index;
        let none = Vec::new();
        let view = |spans: &mut Vec<Span>| {
            spans.sort_unstable();
            spans.dedup();
            View { records: spans.iter().filter_map(|s| journal::parse_line(self.at(*s))).collect() }
        };
        // The claimant's own claims and the calls they name, and the
        // candidates beside them (choose_claim weighs a held claim against
        // other scopes' unclaimed records of the same call).
        let mut spans: Vec<Span> = Vec::new();
        if let Some(c) = claimant {
            for &k in ix.claims_by_claimant.get(&hash_of(&[c])).unwrap_or(&none) {
                let s = self.claims[k];
                spans.push(s);
                if let Some(Record::Claim { key, .. }) = journal::parse_line(self.at(s)) {
                    let named = self.calls.iter().filter(|(c, _)| last_field_is(self.at(*c), key));
                    spans.extend(named.map(|(c, _)| *c));
                }
            }
        }
        for &(s, t) in &self.calls {
            if !t.is_some_and(|t| journal::in_window(t, now, journal::CLAIM_WINDOW_MS)) {
                continue;
            }
            // Tool and fingerprint: fields 6 and 7 of a call line's ten.
            if !call_fields(self.at(s)).is_some_and(|(_, tl, f, _, _)| tl == tool && f == fp) {
                continue;
            }
            // A call already claimed cannot be a candidate: leave it (and
            // its claims) out rather than parse both. Claimed means a claim
            // line that parses and names exactly this key.
            let key = self.at(s).rsplit('\t').next().unwrap_or("");
            let claimed = ix.claims_by_key.get(&hash_of(&[key])).unwrap_or(&none).iter().any(|&k| {
                matches!(journal::parse_line(self.at(self.claims[k])), Some(Record::Claim { key: c, .. }) if c == key)
            });
            if !claimed {
                spans.push(s);
            }
        }
        view(&mut spans)
    }
}

mod fields;
mod hash;
mod reader;
mod subs;
#[cfg(test)]
mod tests;

pub use reader::Reader;
