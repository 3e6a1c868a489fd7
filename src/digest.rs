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

use crate::host::Host;
use crate::journal::{self, Call, Journal, Record, View};
use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;

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
    /// Every complete line read since the last start-over.
    text: String,
    convs: HashMap<String, [PerHost; 4]>,
    compactions: HashMap<String, u64>,
    floor: u64,
    subagents: HashMap<String, Vec<Sub>>,
    /// Call lines, in file order.
    calls: Vec<Span>,
    /// Claim lines, in file order.
    claims: Vec<Span>,
    /// For claims, built on the first claim question and kept up to date.
    claim_index: ClaimIndex,
    /// Lineage lines (few: a trim keeps 64).
    lineage: Vec<Span>,
    /// The newest time of any sighting or end.
    newest_state: u64,
}

/// Call and claim lines by what a claim asks, as indices into
/// [`Digest::calls`] and [`Digest::claims`]. Keyed by hash: a collision only
/// adds lines, and the answer comes from View's code on the parsed lines.
#[derive(Clone, Debug, Default)]
struct ClaimIndex {
    calls_done: usize,
    claims_done: usize,
    /// With each call's time, for the claim window.
    calls_by_tool_fp: HashMap<u64, Vec<(usize, u64)>>,
    calls_by_key: HashMap<u64, Vec<usize>>,
    claims_by_key: HashMap<u64, Vec<usize>>,
    claims_by_claimant: HashMap<u64, Vec<usize>>,
}

fn hash_of(parts: &[&str]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    parts.hash(&mut h);
    h.finish()
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
        let Digest { text, convs, compactions, floor, subagents, calls, claims, lineage, newest_state, .. } = self;
        let text = text.as_str();
        for line in text[from..].lines() {
            match line.as_bytes().first() {
                // Located now, parsed if a call id is asked about.
                Some(b'C') => calls.push(span_in(text, line)),
                Some(b'K') => claims.push(span_in(text, line)),
                Some(b'#') | None => {}
                Some(_) => match journal::parse_line(line) {
                    Some(Record::Sighting { t, host, conv, event }) => {
                        let slot = &mut get_or_insert(convs, conv)[host_index(host)].sighting;
                        // As View: the newest wins, a tie goes to the later line.
                        match slot {
                            Some((old, _)) if *old > t => {}
                            _ => *slot = Some((t, span_in(text, event))),
                        }
                        *newest_state = (*newest_state).max(t);
                    }
                    Some(Record::End { t, host, conv }) => {
                        let slot = &mut get_or_insert(convs, conv)[host_index(host)].end;
                        *slot = Some(slot.map_or(t, |old| old.max(t)));
                        *newest_state = (*newest_state).max(t);
                    }
                    Some(Record::Compaction { t, conv, .. }) => {
                        let e = get_or_insert(compactions, conv);
                        *e = (*e).max(t);
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
        !journal::is_future(self.newest_state, now)
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

    /// [`View::compaction_floor`].
    pub fn compaction_floor(&self) -> u64 {
        self.floor
    }

    /// [`View::active_subagents`].
    pub fn active_subagents(&self, conv: &str, now: u64) -> Vec<&str> {
        let Some((conv, subs)) = self.subagents.get_key_value(conv) else { return Vec::new() };
        let records = subs
            .iter()
            .map(|s| match (s.start, s.agent) {
                (true, Some(a)) => Record::SubagentStart { t: s.t, host: s.host, conv, agent: self.at(a) },
                _ => Record::SubagentStop { t: s.t, host: s.host, conv, agent: s.agent.map(|a| self.at(a)) },
            })
            .collect();
        View { records }.active_subagents(conv, now)
    }

    /// [`View::lineage_for`].
    pub fn lineage_for(&self, host: Host, pid: u32, now: u64) -> Option<(u64, &str)> {
        let records = self.lineage.iter().filter_map(|s| journal::parse_line(self.at(*s))).collect();
        View { records }.lineage_for(host, pid, now)
    }

    /// [`View::call_by_id`]: the newest well-formed call line with this id.
    pub fn call_by_id(&self, call_id: &str) -> Option<Call<'_>> {
        self.calls.iter().rev().find_map(|s| {
            let line = self.at(*s);
            // The call id is the next-to-last of a call line's ten fields:
            // look there first, parse only a line that may match.
            if line.rsplit('\t').nth(1) != Some(call_id) {
                return None;
            }
            match journal::parse_line(line)? {
                Record::Call(c) if c.call_id == Some(call_id) => Some(c),
                _ => None,
            }
        })
    }

    /// Bring the claim index up to the lines read so far.
    pub fn index_claims(&mut self) {
        let Digest { text, calls, claims, claim_index: ix, .. } = self;
        for (i, s) in calls.iter().enumerate().skip(ix.calls_done) {
            let line = &text[s.0..s.1];
            // A call line's last four fields: tool, fingerprint, call id, key.
            let mut back = line.rsplitn(5, '\t');
            let (Some(key), Some(_), Some(fp), Some(tool)) = (back.next(), back.next(), back.next(), back.next())
            else {
                continue;
            };
            // No time, no call record (parse_line would refuse the line).
            let Some(t) = line.split('\t').nth(1).and_then(|t| t.parse::<u64>().ok()) else { continue };
            ix.calls_by_tool_fp.entry(hash_of(&[tool, fp])).or_default().push((i, t));
            ix.calls_by_key.entry(hash_of(&[key])).or_default().push(i);
        }
        ix.calls_done = calls.len();
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
    /// in file order: the calls with that tool and fingerprint inside the
    /// claim window, every claim on their keys, every claim by the claimant
    /// and the calls it names.
    /// [`View::claim_candidates`] and [`View::claimed_by`] give the same
    /// answers on this as on the whole file. Call [`Digest::index_claims`]
    /// first.
    pub fn claim_view(&self, tool: &str, fp: &str, claimant: Option<&str>, now: u64) -> View<'_> {
        let ix = &self.claim_index;
        let none = Vec::new();
        let mut spans: Vec<Span> = Vec::new();
        let no_calls = Vec::new();
        for &(i, t) in ix.calls_by_tool_fp.get(&hash_of(&[tool, fp])).unwrap_or(&no_calls) {
            if !journal::in_window(t, now, journal::CLAIM_WINDOW_MS) {
                continue;
            }
            let s = self.calls[i];
            spans.push(s);
            let key = self.at(s).rsplit('\t').next().unwrap_or("");
            spans.extend(ix.claims_by_key.get(&hash_of(&[key])).unwrap_or(&none).iter().map(|&k| self.claims[k]));
        }
        if let Some(c) = claimant {
            for &k in ix.claims_by_claimant.get(&hash_of(&[c])).unwrap_or(&none) {
                let s = self.claims[k];
                spans.push(s);
                if let Some(Record::Claim { key, .. }) = journal::parse_line(self.at(s)) {
                    spans.extend(ix.calls_by_key.get(&hash_of(&[key])).unwrap_or(&none).iter().map(|&i| self.calls[i]));
                }
            }
        }
        spans.sort_unstable();
        spans.dedup();
        View { records: spans.iter().filter_map(|s| journal::parse_line(self.at(*s))).collect() }
    }
}

/// A journal kept open and digested incrementally.
#[derive(Debug, Default)]
pub struct Reader {
    /// The file read so far, with its device and inode.
    file: Option<(File, u64, u64)>,
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

    fn reset(&mut self) {
        *self = Reader::default();
    }

    /// Bring the digest up to date under the shared lock. Errors as
    /// [`Journal::read`]: a missing journal (or lock file with no journal)
    /// is empty; a journal that cannot be read is an error.
    pub fn refresh(&mut self, journal: &Journal) -> io::Result<()> {
        let Some(_guard) = journal.read_lock()? else {
            self.reset();
            return Ok(());
        };
        self.refresh_held(journal)
    }

    /// [`Reader::refresh`] under a lock the caller holds (the exclusive one,
    /// for a claim).
    pub fn refresh_held(&mut self, journal: &Journal) -> io::Result<()> {
        let path = journal.path();
        let md = match fs::metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                self.reset();
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        let same = self.file.as_ref().is_some_and(|(_, dev, ino)| (*dev, *ino) == (md.dev(), md.ino()))
            && md.len() >= self.offset;
        if !same {
            self.reset();
            let f = File::open(&path)?;
            let fmd = f.metadata()?;
            self.file = Some((f, fmd.dev(), fmd.ino()));
        }
        let Some((f, ..)) = self.file.as_ref() else { return Ok(()) };
        let len = f.metadata()?.len();
        if len <= self.offset {
            return Ok(());
        }
        let mut buf = Vec::with_capacity((len - self.offset) as usize);
        let mut file: &File = f;
        let read =
            file.seek(SeekFrom::Start(self.offset)).and_then(|_| file.take(len - self.offset).read_to_end(&mut buf));
        if let Err(e) = read {
            self.reset();
            return Err(e);
        }
        let Some(end) = buf.iter().rposition(|&b| b == b'\n') else { return Ok(()) };
        // Lossy like Journal::read, but validated first: the lossy decoder
        // is several times slower on text that is valid anyway.
        match std::str::from_utf8(&buf[..=end]) {
            Ok(text) => self.digest.fold_text(text),
            Err(_) => self.digest.fold_text(&String::from_utf8_lossy(&buf[..=end])),
        }
        self.offset += end as u64 + 1;
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
            let line = match rng.below(11) {
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
            assert_eq!(d.active_subagents(c, now), v.active_subagents(c, now), "subagents {c} {ctx}");
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
        let mut d = d.clone();
        d.index_claims();
        for tool in ["ctx_read", "ctx_write", "nope"] {
            for fp in ["fp0", "fp1", "fp2"] {
                for claimant in [None, Some("t0"), Some("t1"), Some("-")] {
                    let small = d.claim_view(tool, fp, claimant, now);
                    let keys = |v: &View<'_>| {
                        v.claim_candidates(tool, fp, now).iter().map(|c| c.key.to_string()).collect::<Vec<_>>()
                    };
                    assert_eq!(keys(&small), keys(v), "claim candidates {tool} {fp} {ctx}");
                    if let Some(c) = claimant {
                        assert_eq!(small.claimed_by(c), v.claimed_by(c), "claimed by {c} {ctx}");
                    }
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
            let last = lines.iter().filter_map(|l| journal::parse_line(l)).map(|r| r.t()).max().unwrap_or(base);
            for now in [base, last.saturating_sub(20_000), last, last + 3_000, last + 40_000, last + 3 * 3_600_000] {
                assert_same(&d, &v, now, &format!("round {round}, now {now}"));
                checked += 1;
                concurrent += usize::from(v.concurrent(now));
                deferred += usize::from(!d.exact_at(now));
            }
        }
        // The cases are not all trivial ones.
        assert!(concurrent > checked / 10 && deferred > 0 && deferred < checked / 2, "{concurrent} {deferred}");
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
    }
}
