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

use crate::fsx;
use crate::host::Host;
use crate::journal::{self, Call, Journal, Record, View};
use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom};

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

/// A subagent start or stop, in file order.
#[derive(Clone, Copy, Debug)]
struct Sub {
    t: u64,
    host: Host,
    start: bool,
    agent: Option<Span>,
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
    /// Every complete line read since the last start-over.
    text: String,
    convs: HashMap<String, [PerHost; 4]>,
    compactions: HashMap<String, u64>,
    floor: u64,
    subagents: HashMap<String, Vec<Sub>>,
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
    lineage: Vec<Span>,
    /// The newest time of any sighting, and of any end.
    newest_sighting: u64,
    newest_end: u64,
    /// Lines folded so far: the position ("order, not clocks") of the next.
    lines: usize,
    /// Per conversation, the position of its latest compaction.
    compaction_at: HashMap<String, usize>,
    /// Per `scope\tkey`, the newest delivery line and its position.
    /// (by [`hash_of`] scope and key; collisions resolved on the parsed line)
    deliveries: ByHash<Vec<(usize, Span)>>,
    /// Per call ref, its acknowledgement lines and their positions.
    /// (by [`hash_of`] the ref; collisions resolved on the parsed line)
    acks: ByHash<Vec<(usize, Span)>>,
    /// [`hash_of`] (conversation, agent) of call records made by a `task:` scope.
    task_calls: std::cell::RefCell<std::collections::HashSet<u64>>,
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

fn hash_of(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for &b in p.as_bytes().iter().chain(&[0xff]) {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// Maps keyed by [`hash_of`] values: the key is already a hash.
type ByHash<V> = HashMap<u64, V, std::hash::BuildHasherDefault<KeyIsHash>>;

#[derive(Default)]
struct KeyIsHash(u64);

impl std::hash::Hasher for KeyIsHash {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// `line.rsplit('\t').next() == Some(field)`, without searching the line.
fn last_field_is(line: &str, field: &str) -> bool {
    line.ends_with(field)
        && (line.len() == field.len() || line.as_bytes()[line.len() - field.len() - 1] == b'\t')
        && !field.contains('\t')
}

/// The fields of a call line the digest indexes, located without parsing:
/// the conversation (4th), the agent (5th) and the call id (next to last).
struct CallFields<'a> {
    conv: Option<&'a str>,
    agent: Option<&'a str>,
    next_to_last: Option<&'a str>,
}

fn fields_of(line: &str) -> CallFields<'_> {
    let b = line.as_bytes();
    let mut starts = [0usize; 5];
    let mut at = 0;
    for slot in starts.iter_mut().skip(1) {
        match journal::find_byte(&b[at..], b'\t') {
            Some(i) => {
                at += i + 1;
                *slot = at;
            }
            None => return CallFields { conv: None, agent: None, next_to_last: None },
        }
    }
    let field = |k: usize| {
        let s = starts[k];
        let e = journal::find_byte(&b[s..], b'\t').map_or(b.len(), |i| s + i);
        &line[s..e]
    };
    CallFields { conv: Some(field(3)), agent: Some(field(4)), next_to_last: next_to_last(line) }
}

/// The next-to-last tab-separated field (a call line's call id).
fn next_to_last(line: &str) -> Option<&str> {
    let mut back = line.rsplit('\t');
    back.next()?;
    back.next()
}

/// A call line's time (its second field), if it has one.
fn call_time(line: &str) -> Option<u64> {
    let b = line.as_bytes();
    let start = b.iter().position(|&c| c == b'\t')? + 1;
    let len = b[start..].iter().position(|&c| c == b'\t')?;
    line[start..start + len].parse().ok()
}

/// The last four tab-separated fields of a line (tool, fingerprint, call
/// id, key, for a call line) and its second field (the time).
fn call_fields(line: &str) -> Option<(&str, &str, &str, &str, &str)> {
    let b = line.as_bytes();
    let mut end = b.len();
    let mut f = [""; 4];
    for slot in f.iter_mut().rev() {
        let tab = b[..end].iter().rposition(|&c| c == b'\t')?;
        *slot = &line[tab + 1..end];
        end = tab;
    }
    let t_start = b.iter().position(|&c| c == b'\t')? + 1;
    let t_len = b[t_start..].iter().position(|&c| c == b'\t')?;
    Some((&line[t_start..t_start + t_len], f[0], f[1], f[2], f[3]))
}

/// Where `part` (a slice of `whole`) lies in `whole`.
fn span_in(whole: &str, part: &str) -> Span {
    let start = part.as_ptr() as usize - whole.as_ptr() as usize;
    (start, start + part.len())
}

fn get_or_insert<'m, V: Default>(map: &'m mut HashMap<String, V>, key: &str) -> &'m mut V {
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
        self.text.push_str(complete);
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
            ..
        } = self;
        let text = text.as_str();
        for line in text[from..].lines() {
            let at = *lines;
            *lines += 1;
            match line.as_bytes().first() {
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
                    }
                    Some(Record::Compaction { t, conv, .. }) => {
                        let e = get_or_insert(compactions, conv);
                        *e = (*e).max(t);
                        *get_or_insert(compaction_at, conv) = at;
                    }
                    Some(Record::Delivery(d)) => {
                        deliveries.entry(hash_of(&[d.scope, d.key])).or_default().push((at, span_in(text, line)));
                    }
                    Some(Record::Ack(a)) => {
                        acks.entry(hash_of(&[a.call_ref])).or_default().push((at, span_in(text, line)))
                    }
                    Some(Record::Floor { t }) => *floor = (*floor).max(t),
                    Some(Record::SubagentStart { t, host, conv, agent }) => {
                        let agent = Some(span_in(text, agent));
                        get_or_insert(subagents, conv).push(Sub { t, host, start: true, agent });
                    }
                    Some(Record::SubagentStop { t, host, conv, agent }) => {
                        let agent = agent.map(|a| span_in(text, a));
                        get_or_insert(subagents, conv).push(Sub { t, host, start: false, agent });
                    }
                    Some(Record::Lineage { .. }) => lineage.push(span_in(text, line)),
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

    /// [`View::concurrent`] (exact when [`Digest::exact_at`]`(now)`).
    pub fn concurrent(&self, now: u64) -> bool {
        let mut records = Vec::new();
        for (conv, hosts) in &self.convs {
            for (i, h) in hosts.iter().enumerate() {
                // Only a conversation whose newest sighting is inside the
                // window can be live; View's own code decides the rest.
                if let Some((t, event)) = h.sighting
                    && journal::in_window(t, now, journal::WINDOW_MS)
                {
                    let host = HOSTS[i];
                    records.push(Record::Sighting { t, host, conv, event: self.at(event) });
                    if let Some(t) = h.end {
                        records.push(Record::End { t, host, conv });
                    }
                }
            }
        }
        View { records }.concurrent(now)
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

    /// [`View::open_subagents`]: the subagent records of `conv`, closed by
    /// its latest end (which closes every start before it, as every end does).
    pub fn open_subagents(&self, conv: &str, now: u64) -> Vec<(&str, u64)> {
        let Some((conv, subs)) = self.subagents.get_key_value(conv) else { return Vec::new() };
        let mut records: Vec<Record<'_>> = subs
            .iter()
            .map(|s| match (s.start, s.agent) {
                (true, Some(a)) => Record::SubagentStart { t: s.t, host: s.host, conv, agent: self.at(a) },
                _ => Record::SubagentStop { t: s.t, host: s.host, conv, agent: s.agent.map(|a| self.at(a)) },
            })
            .collect();
        if let Some((i, t)) = self
            .convs
            .get(conv)
            .and_then(|hosts| hosts.iter().enumerate().filter_map(|(i, h)| h.end.map(|t| (i, t))).max_by_key(|x| x.1))
        {
            records.push(Record::End { t, host: HOSTS[i], conv });
        }
        View { records }.open_subagents(conv, now)
    }

    /// [`View::subagent_unwitnessed`] (exact when [`Digest::exact_at`]`(now)`).
    pub fn subagent_unwitnessed(&self, conv: &str, host: Host, now: u64) -> bool {
        let h = host_index(host);
        let open = self.open_subagents(conv, now);
        if open.is_empty() {
            return false;
        }
        self.index_calls();
        let tasks = self.task_calls.borrow();
        open.iter().any(|&(a, t0)| {
            tasks.contains(&hash_of(&[conv, a]))
                || !self.convs.iter().any(|(c, hosts)| {
                    c != conv && hosts[h].first.is_some_and(|t| t >= t0 && !journal::is_future(t, now))
                })
        })
    }

    /// [`View::lineage_for`].
    pub fn lineage_for(&self, host: Host, pid: u32, now: u64) -> Option<(u64, &str)> {
        let records = self.lineage.iter().filter_map(|s| journal::parse_line(self.at(*s))).collect();
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
                && agent.starts_with("task:")
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
    pub fn latest_delivery(&self, scope: &str, key: &str) -> Option<(usize, crate::ledger::Delivery<'_>)> {
        // The newest line of this scope and key (a hash collision only adds lines).
        self.deliveries.get(&hash_of(&[scope, key]))?.iter().rev().find_map(|(at, span)| {
            match journal::parse_line(self.at(*span))? {
                Record::Delivery(d) if d.scope == scope && d.key == key => Some((*at, d)),
                _ => None,
            }
        })
    }

    /// [`View::acks_after`].
    pub fn acks_after(&self, call_ref: &str, after: usize) -> Vec<crate::ledger::Ack<'_>> {
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

    /// [`View::compacted_after`].
    pub fn compacted_after(&self, conv: &str, after: usize) -> bool {
        self.compaction_at.get(conv).is_some_and(|&at| at > after)
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
    /// [`View::claimed_by`] gives the same answer on this as on the whole
    /// file, and when it is `None` so does [`View::claim_candidates`] (the
    /// order in which `mcp_call::choose_claim` asks). Call
    /// [`Digest::index_claims`] first.
    pub fn claim_view(&self, tool: &str, fp: &str, claimant: Option<&str>, now: u64) -> View<'_> {
        let ix = &self.claim_index;
        let none = Vec::new();
        let view = |spans: &mut Vec<Span>| {
            spans.sort_unstable();
            spans.dedup();
            View { records: spans.iter().filter_map(|s| journal::parse_line(self.at(*s))).collect() }
        };
        // The claimant's own claims and the calls they name. If it already
        // holds one, that is the answer (choose_claim asks claimed_by
        // first): the candidates need not be looked at.
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
            let held = view(&mut spans);
            if held.claimed_by(c).is_some() {
                return held;
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

/// A journal kept open and digested incrementally.
#[derive(Debug, Default)]
pub struct Reader {
    /// The file read so far (open between refreshes where
    /// [`fsx::HOLD_OPEN`]; Windows closes it, see there).
    file: Option<File>,
    /// Its device and inode (volume and index on Windows).
    id: Option<(u64, u64)>,
    /// Bytes digested: up to the end of the last complete line.
    offset: u64,
    digest: Digest,
}

impl Reader {
    pub fn digest(&self) -> &Digest {
        &self.digest
    }

    /// [`Digest::index_claims`].
    pub fn index_claims(&mut self) {
        self.digest.index_claims();
    }

    /// A reader for claims: it only locates call and claim lines.
    pub fn for_claims() -> Reader {
        Reader { digest: Digest { claims_only: true, ..Digest::default() }, ..Reader::default() }
    }

    /// Nothing read yet.
    pub fn is_new(&self) -> bool {
        self.id.is_none()
    }

    /// A claim reader that starts where this one is (same call and claim
    /// lines, same offset) on its own handle of the same file, or `None`
    /// when the journal is no longer the file this one read. Call under a
    /// journal lock, so the file cannot be replaced meanwhile.
    pub fn for_claims_from(&self, journal: &Journal) -> Option<Reader> {
        let id = self.id?;
        let f = File::open(journal.path()).ok()?;
        let md = f.metadata().ok()?;
        if fsx::handle_id(&f, &md).ok()? != id {
            return None;
        }
        let d = &self.digest;
        let digest = Digest {
            claims_only: true,
            text: d.text.clone(),
            calls: d.calls.clone(),
            claims: d.claims.clone(),
            claim_index: d.claim_index.clone(),
            ..Digest::default()
        };
        Some(Reader { file: Some(f), id: Some(id), offset: self.offset, digest })
    }

    fn reset(&mut self) {
        let claims_only = self.digest.claims_only;
        *self = Reader::default();
        self.digest.claims_only = claims_only;
    }

    /// Bring the digest up to date under the shared lock. Errors as
    /// [`Journal::read`]: a missing journal (or lock file with no journal)
    /// is empty; a journal that cannot be read is an error.
    pub fn refresh(&mut self, journal: &Journal) -> io::Result<()> {
        self.refresh_until(journal, std::time::Instant::now() + journal::LOCK_WAIT)
    }

    /// [`Reader::refresh`], waiting for the lock until `deadline` at most.
    pub fn refresh_until(&mut self, journal: &Journal, deadline: std::time::Instant) -> io::Result<()> {
        let Some(_guard) = journal.read_lock_until(deadline)? else {
            self.reset();
            return Ok(());
        };
        self.refresh_held(journal)
    }

    /// [`Reader::refresh`] under a lock the caller holds (the exclusive one,
    /// for a claim). The lock file exists, so hooks have run: a journal that
    /// is missing, empty, not a regular file of ours (a symlink to
    /// `/dev/null`, a FIFO) or larger than a reader reads is an error, as
    /// for [`Journal::read`], and the reader starts over.
    pub fn refresh_held(&mut self, journal: &Journal) -> io::Result<()> {
        let r = self.refresh_open(journal);
        if !fsx::HOLD_OPEN {
            self.file = None;
        }
        r
    }

    fn refresh_open(&mut self, journal: &Journal) -> io::Result<()> {
        let path = journal.path();
        let md = match fs::symlink_metadata(&path) {
            Ok(m) => m,
            Err(e) => {
                self.reset();
                return Err(if e.kind() == io::ErrorKind::NotFound { journal.missing_error() } else { e });
            }
        };
        if let Some(p) = fsx::state_problem(&md, journal::MAX_READ_BYTES)
            .or_else(|| (md.len() == 0).then(|| "is empty while journal.lock exists (emptied?)".to_string()))
        {
            self.reset();
            return Err(fsx::untrusted(&path, &p));
        }
        let same =
            self.id.is_some_and(|id| fsx::path_id(&path, &md).is_ok_and(|now| now == id)) && md.len() >= self.offset;
        if !same || self.file.is_none() {
            // A new file, or (where the reader closes it between refreshes)
            // the same one opened again: the lock held keeps it in place,
            // and the handle's own id says which file was opened.
            let f = fsx::open_state(&path, false, journal::MAX_READ_BYTES)?.ok_or_else(|| journal.missing_error())?;
            let id = fsx::handle_id(&f, &f.metadata()?)?;
            if !same || self.id != Some(id) {
                self.reset();
            }
            self.file = Some(f);
            self.id = Some(id);
        }
        let Some(f) = self.file.as_ref() else { return Ok(()) };
        let len = f.metadata()?.len().min(journal::MAX_READ_BYTES);
        if len <= self.offset {
            return Ok(());
        }
        let want = len - self.offset;
        let mut file: &File = f;
        if let Err(e) = file.seek(SeekFrom::Start(self.offset)) {
            self.reset();
            return Err(e);
        }
        // Straight onto the digest's text (validated as it is appended);
        // only text that is not UTF-8 goes through a buffer, decoded lossily
        // like Journal::read does. Complete lines only: a torn tail is read
        // again next time.
        let from = self.digest.text.len();
        self.digest.text.reserve(want as usize);
        let consumed = match file.take(want).read_to_string(&mut self.digest.text) {
            Ok(_) => match self.digest.text[from..].rfind('\n') {
                Some(end) => {
                    self.digest.text.truncate(from + end + 1);
                    end + 1
                }
                None => {
                    self.digest.text.truncate(from);
                    0
                }
            },
            Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                let mut buf = Vec::with_capacity(want as usize);
                let read = file.seek(SeekFrom::Start(self.offset)).and_then(|_| file.take(want).read_to_end(&mut buf));
                if let Err(e) = read {
                    self.reset();
                    return Err(e);
                }
                let end = buf.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
                self.digest.text.push_str(&String::from_utf8_lossy(&buf[..end]));
                end
            }
            Err(e) => {
                self.reset();
                return Err(e);
            }
        };
        self.digest.fold_from(from);
        self.offset += consumed as u64;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (no dependency).
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// Random journal lines over few conversations, agents, pids and call
    /// ids, with ties, ends, future stamps and the odd malformed line.
    fn random_lines(rng: &mut Rng, n: usize, base: u64) -> Vec<String> {
        let convs = ["a", "b", "c", "d"];
        let hosts = ["cursor", "claude-code", "codex", "codebuddy"];
        let mut out = Vec::new();
        let mut t = base;
        for i in 0..n {
            t += rng.below(4_000);
            // Now and then a stamp from the future or the past.
            let tt = match rng.below(20) {
                0 => t + 60_000,
                1 => t.saturating_sub(50_000),
                _ => t,
            };
            let c = convs[rng.below(4) as usize];
            let h = hosts[rng.below(4) as usize];
            let line = match rng.below(13) {
                // Ledger: deliveries and acknowledgements over few scopes, keys and refs.
                11 => {
                    let scope = if rng.below(3) == 0 { format!("agent:{}", rng.below(2)) } else { c.to_string() };
                    let window = ["-", "w:0", "w:1"][rng.below(3) as usize];
                    let r = ["id:1", "id:2", "fp:x"][rng.below(3) as usize];
                    format!(
                        "D\t{tt}\t{h}\t{c}\t{scope}\t{window}\t{r}\tkey{}\tver{}\tdg{}\t{}",
                        rng.below(2),
                        rng.below(2),
                        rng.below(2),
                        10 + rng.below(2)
                    )
                }
                12 => {
                    let r = ["id:1", "id:2", "fp:x"][rng.below(3) as usize];
                    let whole = ["whole", "cut", "bogus"][rng.below(3) as usize];
                    format!("A\t{tt}\t{h}\t{c}\t{r}\tdg{}\t{}\t{whole}", rng.below(2), 10 + rng.below(2))
                }
                0..=3 => format!("S\t{tt}\t{h}\t{c}\tev{}", rng.below(3)),
                4 => format!("E\t{tt}\t{h}\t{c}"),
                5 => format!("P\t{tt}\t{h}\t{c}"),
                6 => format!("U\t{tt}\t{h}\t{c}\tagent:{}", rng.below(3)),
                7 => {
                    let agent = if rng.below(2) == 0 { "-".to_string() } else { format!("agent:{}", rng.below(3)) };
                    format!("u\t{tt}\t{h}\t{c}\t{agent}")
                }
                8 => {
                    let id = if rng.below(6) == 0 { "-".to_string() } else { format!("id{}", rng.below(5)) };
                    let tool = ["ctx_read", "ctx_write"][rng.below(2) as usize];
                    format!("C\t{tt}\t{h}\t{c}\t-\tctx\t{tool}\tfp{}\t{id}\tk{i}", rng.below(3))
                }
                9 => format!("L\t{tt}\t{h}\t{}\t{c}", 100 + rng.below(2)),
                _ => match rng.below(5) {
                    0 => format!("F\t{tt}"),
                    1 => "garbage\tline".to_string(),
                    // Call-like lines that are not call records.
                    2 => format!("C\t{tt}\t{h}\t{c}\tid{}\tk{i}", rng.below(5)),
                    3 => format!("C\t{tt}\tnohost\t{c}\t-\tctx\tctx_read\tfp0\tid{}\tk{i}", rng.below(5)),
                    _ => {
                        let key = rng.below(i as u64 + 1);
                        match rng.below(4) {
                            0 => format!("K\t{tt}\tk{key}"),
                            1 => format!("K\t{tt}\tk{key}\t-"),
                            n => format!("K\t{tt}\tk{key}\tt{}", n - 2),
                        }
                    }
                },
            };
            out.push(line);
        }
        out
    }

    fn assert_same(d: &Digest, v: &View<'_>, now: u64, ctx: &str) {
        if d.exact_at(now) {
            assert_eq!(d.concurrent(now), v.concurrent(now), "concurrent {ctx}");
        }
        for c in ["a", "b", "c", "d", "zz"] {
            assert_eq!(d.last_compaction(c), v.last_compaction(c), "last_compaction {c} {ctx}");
            if d.exact_at(now) {
                assert_eq!(d.active_subagents(c, now), v.active_subagents(c, now), "subagents {c} {ctx}");
                for h in HOSTS {
                    assert_eq!(
                        d.subagent_unwitnessed(c, h, now),
                        v.subagent_unwitnessed(c, h, now),
                        "unwitnessed {c} {h} {ctx}"
                    );
                }
            }
        }
        assert_eq!(d.compaction_floor(), v.compaction_floor(), "floor {ctx}");
        for h in HOSTS {
            for pid in [100, 101, 102] {
                assert_eq!(d.lineage_for(h, pid, now), v.lineage_for(h, pid, now), "lineage {ctx}");
            }
        }
        for id in ["id0", "id1", "id2", "id3", "id4", "nope", "-"] {
            assert_eq!(d.call_by_id(id), v.call_by_id(id).cloned(), "call {id} {ctx}");
        }
        // The ledger: the same newest delivery, the same acknowledgements
        // after it and the same compaction verdict (positions are each
        // side's own; only their order matters).
        for scope in ["a", "b", "c", "d", "agent:0", "agent:1"] {
            for key in ["key0", "key1", "nokey"] {
                let dv = d.latest_delivery(scope, key);
                let vv = v.latest_delivery(scope, key);
                assert_eq!(dv.as_ref().map(|x| &x.1), vv.map(|x| x.1), "delivery {scope} {key} {ctx}");
                if let (Some((da, dd)), Some((va, vd))) = (dv, vv) {
                    assert_eq!(d.acks_after(dd.call_ref, da), v.acks_after(vd.call_ref, va), "acks {ctx}");
                    assert_eq!(d.compacted_after(dd.conv, da), v.compacted_after(vd.conv, va), "compacted {ctx}");
                }
            }
        }
        let mut d = d.clone();
        d.index_claims();
        assert_claims_same(&d, v, now, ctx);
        // Hash collisions only add lines: with every index bucket holding
        // every line of its kind, the answers stay the same.
        let ix = &mut d.claim_index;
        let all_claims: Vec<usize> = (0..d.claims.len()).collect();
        for (s, _) in &d.calls {
            if let Some((.., key)) = call_fields(&d.text[s.0..s.1]) {
                ix.claims_by_key.insert(hash_of(&[key]), Vec::new());
            }
        }
        ix.claims_by_key.values_mut().chain(ix.claims_by_claimant.values_mut()).for_each(|b| b.clone_from(&all_claims));
        assert_claims_same(&d, v, now, &format!("colliding, {ctx}"));
    }

    fn assert_claims_same(d: &Digest, v: &View<'_>, now: u64, ctx: &str) {
        for tool in ["ctx_read", "ctx_write", "nope"] {
            for fp in ["fp0", "fp1", "fp2"] {
                for claimant in [None, Some("t0"), Some("t1"), Some("-")] {
                    // What choose_claim asks, in its order: the call the
                    // claimant holds, else the candidates.
                    let choice = |v: &View<'_>| match claimant.and_then(|c| v.claimed_by(c)) {
                        Some(held) => vec![format!("held {}", held.key)],
                        None => v.claim_candidates(tool, fp, now).iter().map(|c| c.key.to_string()).collect(),
                    };
                    let small = d.claim_view(tool, fp, claimant, now);
                    assert_eq!(choice(&small), choice(v), "claim {tool} {fp} {claimant:?} {ctx}");
                }
            }
        }
    }

    #[test]
    fn digest_answers_like_the_whole_file() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let base = 10_000_000;
        let (mut checked, mut concurrent, mut deferred) = (0, 0, 0);
        for round in 0..300 {
            let n = 1 + rng.below(120) as usize;
            let lines = random_lines(&mut rng, n, base);
            let mut text = String::new();
            for l in &lines {
                text.push_str(l);
                text.push('\n');
            }
            // Sometimes a torn tail, as a crashed writer leaves it.
            if rng.below(4) == 0 {
                text.push_str("S\t1\tcur");
            }
            // Fold in random pieces split at line ends, like appends.
            let mut d = Digest::default();
            let mut rest = text.as_str();
            while let Some(i) = rest.find('\n') {
                let cut = rest[i + 1..].find('\n').filter(|_| rng.below(3) == 0).map_or(i, |j| i + 1 + j);
                d.fold_text(&rest[..=cut]);
                rest = &rest[cut + 1..];
            }
            let v = View::parse(&text);
            // A claim reader's digest (call and claim lines only).
            let mut claims_only = Reader::for_claims().digest;
            claims_only.fold_text(&text);
            claims_only.index_claims();
            assert!(claims_only.convs.is_empty() && claims_only.subagents.is_empty());
            let last = lines.iter().filter_map(|l| journal::parse_line(l)).map(|r| r.t()).max().unwrap_or(base);
            for now in [base, last.saturating_sub(20_000), last, last + 3_000, last + 40_000, last + 3 * 3_600_000] {
                assert_same(&d, &v, now, &format!("round {round}, now {now}"));
                assert_claims_same(&claims_only, &v, now, &format!("claims only, round {round}, now {now}"));
                checked += 1;
                concurrent += usize::from(v.concurrent(now));
                deferred += usize::from(!d.exact_at(now));
            }
        }
        // The cases are not all trivial ones.
        assert!(concurrent > checked / 10 && deferred > 0 && deferred < checked / 2, "{concurrent} {deferred}");
    }

    #[test]
    fn last_field_is_rsplit() {
        for line in ["", "k", "a\tk", "a\tbk", "a\tk\t", "k\tk", "\tk", "ak"] {
            for field in ["", "k", "bk", "a\tk", "\tk"] {
                assert_eq!(last_field_is(line, field), line.rsplit('\t').next() == Some(field), "{line:?} {field:?}");
            }
        }
    }

    #[test]
    fn a_future_sighting_makes_the_digest_defer() {
        let text = "S\t1000\tcursor\ta\tx\nS\t999000\tcursor\ta\tx\nS\t1500\tcursor\tb\tx\n";
        let d = Digest::of_text(text);
        assert!(!d.exact_at(2000));
        assert!(d.exact_at(999_000));
        assert!(View::parse(text).concurrent(2000), "View counts a and b from their non-future sightings");
    }

    #[test]
    fn reader_follows_appends_trims_and_truncation() {
        let tmp = tempfile::tempdir().unwrap();
        let j = Journal::new(tmp.path());
        let mut r = Reader::default();
        r.refresh(&j).unwrap();
        assert!(!r.digest().concurrent(10_000), "no journal: empty");

        let s = |t: u64, conv: &'static str| Record::Sighting { t, host: Host::Codex, conv, event: "x" };
        j.append(&[s(1_000, "a")], 1_000).unwrap();
        r.refresh(&j).unwrap();
        assert!(!r.digest().concurrent(2_000));
        j.append(&[s(1_500, "b")], 1_500).unwrap();
        r.refresh(&j).unwrap();
        assert!(r.digest().concurrent(2_000), "an append is seen");

        // A trim replaces the file: the reader starts over.
        j.trim_now(40_000).unwrap();
        j.append(&[s(40_000, "c")], 40_000).unwrap();
        r.refresh(&j).unwrap();
        let text = j.read().unwrap();
        assert_same(r.digest(), &View::parse(&text), 40_001, "after trim");

        // The same file cut shorter (and rewritten): the reader starts over.
        std::fs::write(j.path(), "S\t50000\tcursor\tz\tx\n").unwrap();
        r.refresh(&j).unwrap();
        assert!(r.digest().convs.contains_key("z") && !r.digest().convs.contains_key("c"));

        // A torn tail is left for later, then completed by the next writer.
        std::fs::write(j.path(), "S\t50000\tcursor\tz\tx\nS\t50001\tcod").unwrap();
        r.refresh(&j).unwrap();
        j.append(&[s(50_002, "y")], 50_002).unwrap();
        r.refresh(&j).unwrap();
        let text = j.read().unwrap();
        assert_same(r.digest(), &View::parse(&text), 50_003, "after torn tail");
        assert!(r.digest().concurrent(50_003));

        // A claim reader seeded from this one answers like one that read
        // everything itself, also after more appends.
        let mut seeded = r.for_claims_from(&j).expect("same file");
        j.append(
            &[Record::Call(Call {
                t: 50_004,
                host: Host::Cursor,
                conv: "y",
                agent: None,
                server: None,
                tool: "ctx_read",
                fp: "fp0",
                call_id: None,
                key: "k-new",
            })],
            50_004,
        )
        .unwrap();
        let mut fresh = Reader::for_claims();
        for reader in [&mut seeded, &mut fresh] {
            reader.refresh(&j).unwrap();
            reader.index_claims();
        }
        let text = j.read().unwrap();
        assert_claims_same(seeded.digest(), &View::parse(&text), 50_005, "seeded claim reader");
        assert_eq!(seeded.digest().text, fresh.digest().text);

        // Bytes that are not UTF-8 read as Journal::read reads them (lossy),
        // and the reader still goes on from the right place.
        std::fs::write(j.path(), b"S\t60000\tcursor\tw\xff\tx\nS\t60001\tcodex\tv\tx\nS\t6000").unwrap();
        r.refresh(&j).unwrap();
        assert!(r.digest().convs.contains_key("w\u{fffd}"), "{:?}", r.digest().convs.keys());
        j.append(&[s(60_002, "u")], 60_002).unwrap();
        r.refresh(&j).unwrap();
        let text = j.read().unwrap();
        assert_same(r.digest(), &View::parse(&text), 60_003, "after bytes that are not UTF-8");
        assert_eq!(r.digest().text, text.trim_start_matches('#'), "the reader holds what a whole read holds");
    }
}
