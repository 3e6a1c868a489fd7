use super::*;
use crate::state::journal::Journal;

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
                let scope = match rng.below(6) {
                    0 | 1 => format!("agent:{}", rng.below(2)),
                    2 => "custom:x".to_string(),
                    _ => c.to_string(),
                };
                let window = ["-", "w:0", "w:1", "proc:100", "proc:101"][rng.below(5) as usize];
                let r = ["id:1", "id:2", "fp:x"][rng.below(3) as usize];
                // Now and then a diff, on one of the versions.
                let base = ["", "", "\tver0", "\tver1"][rng.below(4) as usize];
                format!(
                    "D\t{tt}\t{h}\t{c}\t{scope}\t{window}\t{r}\tkey{}\tver{}\tdg{}\t{}{base}",
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
            // A compaction, now and then after a reach line: its own, one
            // of another compaction, or a malformed one.
            5 => match rng.below(3) {
                0 => format!("P\t{tt}\t{h}\t{c}"),
                _ => {
                    let reach =
                        ["main", "agent:0", "agent:1", "bogus", "proc:1", "proc:2", "proc:0", "process:1", "process:3"]
                            [rng.below(9) as usize];
                    let (rt, rc) = if rng.below(5) == 0 { (tt + 1, c) } else { (tt, c) };
                    let rc = if rng.below(5) == 0 { "zz" } else { rc };
                    out.push(format!("p\t{rt}\t{h}\t{rc}\t{reach}"));
                    if rng.below(8) == 0 {
                        out.push("garbage".to_string());
                    }
                    format!("P\t{tt}\t{h}\t{c}")
                }
            },
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
        // Subagents at any time, not only where the digest is exact: a
        // decision also asks about the delivery's time, long before `now`.
        assert_eq!(d.open_subagents(c, now), v.open_subagents(c, now), "subagents {c} {ctx}");
        for h in HOSTS {
            assert_eq!(
                d.subagent_unwitnessed(c, h, now),
                v.subagent_unwitnessed(c, h, now),
                "unwitnessed {c} {h} {ctx}"
            );
        }
        if d.exact_at(now) {
            assert_eq!(d.live_other_than(c, now), v.live_other_than(c, now), "live other than {c} {ctx}");
        }
    }
    assert_eq!(d.compaction_floor(), v.compaction_floor(), "floor {ctx}");
    assert_eq!(d.any_subagent_active(now), v.any_subagent_active(now), "any subagent {ctx}");
    // The digest may know more conversations than the view's sightings
    // and ends (every conversation it saw): it says "several" at least
    // as often.
    assert!(d.several_conversations() || !v.several_conversations(), "several {ctx}");
    for h in HOSTS {
        for pid in [100, 101, 102] {
            assert_eq!(d.lineage_for(h, pid, now), v.lineage_for(h, pid, now), "lineage {ctx}");
            assert_eq!(d.latest_start(h, pid).map(|x| x.1), v.latest_start(h, pid).map(|x| x.1), "latest start {ctx}");
            for conv in ["a", "b", "c", "d"] {
                assert_eq!(d.is_process_of(h, pid, conv), v.is_process_of(h, pid, conv), "process of {conv} {ctx}");
            }
        }
    }
    for id in ["id0", "id1", "id2", "id3", "id4", "nope", "-"] {
        assert_eq!(d.call_by_id(id), v.call_by_id(id).cloned(), "call {id} {ctx}");
    }
    // The ledger: the same newest delivery, the same acknowledgements
    // after it and the same compaction verdict (positions are each
    // side's own; only their order matters).
    for scope in ["a", "b", "c", "d", "agent:0", "agent:1", "custom:x"] {
        for key in ["key0", "key1", "nokey"] {
            for w in ["-", "w:0", "proc:100", "proc:101"] {
                let dw = d.newest_in_window(scope, key, w);
                let vw = v.newest_in_window(scope, key, w);
                assert_eq!(dw.as_ref().map(|x| &x.1), vw.map(|x| x.1), "in window {w} {scope} {key} {ctx}");
                // Positions are each side's own; the start's order against the delivery is the same.
                if let (Some((da, dd)), Some((va, _))) = (dw, vw) {
                    for pid in [100, 101] {
                        let ds = d.latest_start(dd.host, pid).map(|(s, _)| s < da);
                        let vs = v.latest_start(dd.host, pid).map(|(s, _)| s < va);
                        assert_eq!(ds, vs, "start before {w} {ctx}");
                    }
                }
            }
            let dv = d.latest_delivery(scope, key);
            let vv = v.latest_delivery(scope, key);
            assert_eq!(dv.as_ref().map(|x| &x.1), vv.map(|x| x.1), "delivery {scope} {key} {ctx}");
            if let (Some((da, dd)), Some((va, vd))) = (dv, vv) {
                assert_eq!(d.acks_after(dd.call_ref, da), v.acks_after(vd.call_ref, va), "acks {ctx}");
                for own in [None, Some(1), Some(2), Some(3)] {
                    assert_eq!(
                        d.compacted_after(dd.conv, dd.scope, own, da),
                        v.compacted_after(vd.conv, vd.scope, own, va),
                        "compacted {own:?} {ctx}"
                    );
                }
                for ver in ["ver0", "ver1", "nover", "any"] {
                    let ver = (ver != "any").then_some(ver);
                    let db = d.delivery_before(scope, key, ver, da);
                    let vb = v.delivery_before(scope, key, ver, va);
                    assert_eq!(db.as_ref().map(|x| &x.1), vb.map(|x| x.1), "base {scope} {key} {ver:?} {ctx}");
                    if let (Some((dba, dbd)), Some((vba, vbd))) = (db, vb) {
                        assert_eq!(d.acks_after(dbd.call_ref, dba), v.acks_after(vbd.call_ref, vba), "base acks {ctx}");
                    }
                }
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
                // What choose_claim asks: the call the claimant holds, and
                // the candidates.
                let choice = |v: &View<'_>| {
                    let held = claimant.and_then(|c| v.claimed_by(c)).map(|h| format!("held {} {}", h.key, h.t));
                    let cands = v.claim_candidates(tool, fp, now).into_iter().map(|c| c.key.to_string());
                    held.into_iter().chain(cands).collect::<Vec<_>>()
                };
                let small = d.claim_view(tool, fp, claimant, now);
                assert_eq!(choice(&small), choice(v), "claim {tool} {fp} {claimant:?} {ctx}");
            }
        }
    }
}

#[test]
fn digest_answers_like_the_whole_file() {
    answers_like_the_whole_file(0x9E37_79B9_7F4A_7C15);
}

/// Hash collisions only add lines to an index bucket: with every key
/// colliding, the answers stay the whole file's.
#[test]
fn digest_answers_like_the_whole_file_when_every_hash_collides() {
    COLLIDE.set(true);
    answers_like_the_whole_file(0x2545_F491_4F6C_DD1D);
    COLLIDE.set(false);
}

fn answers_like_the_whole_file(seed: u64) {
    let mut rng = Rng(seed);
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
        // And times inside the history, as a delivery's time is.
        let inside = base + rng.below(last.saturating_sub(base) + 1);
        let times =
            [base, inside, last.saturating_sub(20_000), last, last + 3_000, last + 40_000, last + 3 * 3_600_000];
        for now in times {
            assert_same(&d, &v, now, &format!("round {round}, now {now}"));
            assert_claims_same(&claims_only, &v, now, &format!("claims only, round {round}, now {now}"));
            checked += 1;
            concurrent += usize::from(v.concurrent(now));
            deferred += usize::from(!d.exact_at(now));
        }
        // More lines folded in (older ones too) after those answers: asked
        // at the same times, nothing answered before stands in.
        if rest.is_empty() {
            let k = 1 + rng.below(40) as usize;
            let more: String = random_lines(&mut rng, k, base).iter().map(|l| format!("{l}\n")).collect();
            d.fold_text(&more);
            let whole = format!("{text}{more}");
            let v = View::parse(&whole);
            for now in times {
                assert_same(&d, &v, now, &format!("round {round}, more lines, now {now}"));
            }
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
fn next_to_last_is_rsplit() {
    for line in ["", "k", "a\tk", "a\tbk\tc", "a\tk\t", "\t", "\t\t", "\tk", "x\t\tk", "C\t1\tclaude\tS\t\tid1\tkey"] {
        let mut back = line.rsplit('\t');
        back.next();
        assert_eq!(next_to_last(line), back.next(), "{line:?}");
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
    // everything itself, also after more appends: the call and claim lines
    // read before the seeding included.
    let call = |t, key| cursor_call(t, "y", key);
    j.append(&[call(50_003, "k-old"), Record::Claim { t: 50_003, key: "k-old", claimant: None }], 50_003).unwrap();
    r.refresh(&j).unwrap();
    let mut seeded = r.for_claims_from(&j).expect("same file");
    assert!(seeded.digest().claims_only, "a claim reader indexes call and claim lines only");
    // The text is shared, not copied, until either reader reads more; then
    // the one that reads gets its own and the other keeps what it had.
    assert!(std::sync::Arc::ptr_eq(&r.digest().text, &seeded.digest().text), "shared");
    let before = r.digest().text.as_str().to_owned();
    j.append(&[call(50_004, "k-new")], 50_004).unwrap();
    let mut fresh = Reader::for_claims();
    for reader in [&mut seeded, &mut fresh] {
        reader.refresh(&j).unwrap();
        reader.index_claims();
    }
    let text = j.read().unwrap();
    assert_claims_same(seeded.digest(), &View::parse(&text), 50_005, "seeded claim reader");
    assert_eq!(seeded.digest().text, fresh.digest().text);
    assert_eq!(r.digest().text.as_str(), before, "the decision's reader kept its own text");
    r.refresh(&j).unwrap();
    assert_eq!(r.digest().text, seeded.digest().text);

    // Bytes that are not UTF-8 read as Journal::read reads them (lossy),
    // and the reader still goes on from the right place.
    std::fs::write(j.path(), b"S\t60000\tcursor\tw\xff\tx\nS\t60001\tcodex\tv\tx\nS\t6000").unwrap();
    r.refresh(&j).unwrap();
    assert!(r.digest().convs.contains_key("w\u{fffd}"), "{:?}", r.digest().convs.keys());
    j.append(&[s(60_002, "u")], 60_002).unwrap();
    r.refresh(&j).unwrap();
    let text = j.read().unwrap();
    assert_same(r.digest(), &View::parse(&text), 60_003, "after bytes that are not UTF-8");
    assert_eq!(r.digest().text.as_str(), text.trim_start_matches('#'), "the reader holds what a whole read holds");
}

/// A reader keeps `journal.lock` open between refreshes. A lock file
/// deleted and made again is another file: the reader must lock the one
/// at the path (a writer holds it), not the one it kept.
#[cfg(unix)]
#[test]
fn a_reader_locks_the_lock_file_at_the_path_not_the_one_it_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let j = Journal::new(tmp.path());
    j.append(&[Record::Sighting { t: 1_000, host: Host::Codex, conv: "a", event: "x" }], 1_000).unwrap();
    let mut r = Reader::default();
    r.refresh(&j).unwrap();
    std::fs::remove_file(tmp.path().join(crate::base::paths::JOURNAL_LOCK_FILE)).unwrap();
    let writer = j.write_lock_until(std::time::Instant::now() + std::time::Duration::from_secs(1)).unwrap();
    let busy = r.refresh_until(&j, std::time::Instant::now() + std::time::Duration::from_millis(30));
    assert_eq!(busy.map_err(|e| e.kind()), Err(std::io::ErrorKind::TimedOut), "the writer's lock was seen");
    drop(writer);
    r.refresh(&j).unwrap();
    assert!(r.digest().convs.contains_key("a"));
}

/// A question's second refresh skips the lock only where the locked one
/// would read nothing: the same file at the length read to. An append, a
/// replaced file of the same length and a torn tail are read (under the
/// lock); a new question takes the lock (a stuck writer is seen).
#[cfg(unix)]
#[test]
fn a_questions_second_refresh_skips_the_lock_only_when_nothing_changed() {
    use std::time::{Duration, Instant};
    let soon = || Instant::now() + Duration::from_millis(30);
    let tmp = tempfile::tempdir().unwrap();
    let j = Journal::new(tmp.path());
    let s = |t: u64, conv: &'static str| Record::Sighting { t, host: Host::Codex, conv, event: "x" };
    j.append(&[s(1_000, "a")], 1_000).unwrap();
    let mut r = Reader::default();
    r.refresh_in(&j, soon(), Some(1)).unwrap();
    let writer = j.write_lock_until(soon()).unwrap();
    r.refresh_in(&j, soon(), Some(1)).expect("unchanged: the same question reads on without the lock");
    let busy = r.refresh_in(&j, soon(), Some(2));
    assert_eq!(busy.map_err(|e| e.kind()), Err(std::io::ErrorKind::TimedOut), "a new question takes the lock");
    assert_eq!(r.refresh_in(&j, soon(), None).map_err(|e| e.kind()), Err(std::io::ErrorKind::TimedOut));
    drop(writer);
    r.refresh_in(&j, soon(), Some(3)).unwrap();

    // Appended since the question's first read: read.
    j.append(&[s(1_500, "b")], 1_500).unwrap();
    r.refresh_in(&j, soon(), Some(3)).unwrap();
    assert!(r.digest().convs.contains_key("b"), "an append is read in the same question");

    // Replaced by a file of the same length (as a trim replaces it): read.
    let text = std::fs::read_to_string(j.path()).unwrap();
    let swapped = text.replacen("\tb\t", "\tz\t", 1);
    assert_eq!((swapped.len(), swapped != text), (text.len(), true));
    let new = tmp.path().join("journal.new");
    std::fs::write(&new, &swapped).unwrap();
    std::fs::rename(&new, j.path()).unwrap();
    r.refresh_in(&j, soon(), Some(3)).unwrap();
    assert!(r.digest().convs.contains_key("z") && !r.digest().convs.contains_key("b"), "the new file is read");
    assert_same(r.digest(), &View::parse(&swapped), 1_600, "after the replacement");

    // A torn tail is read again under the lock; its end, once written, is read.
    {
        use std::io::Write as _;
        let mut f = std::fs::OpenOptions::new().append(true).open(j.path()).unwrap();
        f.write_all(b"S\t1600\tcodex\ty").unwrap();
        r.refresh_in(&j, soon(), Some(3)).unwrap();
        let writer = j.write_lock_until(soon()).unwrap();
        let busy = r.refresh_in(&j, soon(), Some(3));
        assert_eq!(busy.map_err(|e| e.kind()), Err(std::io::ErrorKind::TimedOut), "a torn tail takes the lock");
        drop(writer);
        f.write_all(b"\tx\n").unwrap();
    }
    r.refresh_in(&j, soon(), Some(4)).unwrap();
    r.refresh_in(&j, soon(), Some(4)).unwrap();
    assert!(r.digest().convs.contains_key("y"), "the completed line is read");
}

/// A claim takes the exclusive lock on the `journal.lock` a reader keeps
/// open, and so excludes every writer, but only while that handle is still
/// the file at the path: one deleted and made again is another file, whose
/// writer the kept handle's lock would not exclude.
#[cfg(unix)]
#[test]
fn a_claim_locks_the_kept_lock_file_only_while_it_is_the_one_at_the_path() {
    use crate::state::journal::WriteLock;
    use std::time::{Duration, Instant};
    let soon = || Instant::now() + Duration::from_millis(30);
    let tmp = tempfile::tempdir().unwrap();
    let j = Journal::new(tmp.path());
    assert!(j.claim_lock_until(None, soon()).unwrap().is_none(), "no journal: nothing to claim, nothing created");
    assert!(!tmp.path().join(crate::base::paths::JOURNAL_LOCK_FILE).exists());
    j.append(&[Record::Sighting { t: 1_000, host: Host::Cursor, conv: "a", event: "x" }], 1_000).unwrap();
    let mut r = Reader::default();
    r.refresh(&j).unwrap();
    let held = j.claim_lock_until(r.kept_lock(), soon()).unwrap().unwrap();
    assert!(matches!(held, WriteLock::Kept(_)));
    let writer = j.write_lock_until(soon());
    assert_eq!(writer.map(|_| ()).map_err(|e| e.kind()), Err(std::io::ErrorKind::TimedOut), "writers wait");
    drop(held);

    std::fs::remove_file(tmp.path().join(crate::base::paths::JOURNAL_LOCK_FILE)).unwrap();
    let writer = j.write_lock_until(soon()).unwrap();
    let busy = j.claim_lock_until(r.kept_lock(), soon());
    assert_eq!(busy.map(|_| ()).map_err(|e| e.kind()), Err(std::io::ErrorKind::TimedOut), "the writer's lock was seen");
    drop(writer);
    let held = j.claim_lock_until(r.kept_lock(), soon()).unwrap().unwrap();
    assert!(matches!(held, WriteLock::Opened(_)), "locked at the path");
}

/// A claim reader appends through its own handle when it has read the
/// journal to the end of a whole line; a torn tail it has not read is
/// mended first, as `Journal::append` mends it; a trim the append sets off
/// replaces the file, and the reader starts over on it.
#[cfg(unix)]
#[test]
fn a_claim_reader_appends_whole_lines_through_its_handle() {
    use crate::state::journal::{TRIM_MIN_BYTES, kept_of, parse};
    use std::time::{Duration, Instant};
    let tmp = tempfile::tempdir().unwrap();
    let j = Journal::new(tmp.path());
    let call = |t, key| cursor_call(t, "a", key);
    let mut r = Reader::for_claims();
    let claim = |j: &Journal, r: &mut Reader, key: &'static str, t: u64| {
        let mut kept = Reader::default();
        kept.refresh(j).unwrap();
        let held = j.claim_lock_until(kept.kept_lock(), Instant::now() + Duration::from_secs(1)).unwrap().unwrap();
        r.refresh_held(j).unwrap();
        r.append_held(j, &held, &[Record::Claim { t, key, claimant: Some("tok") }], t).unwrap();
    };
    j.append(&[call(1_000, "k1")], 1_000).unwrap();
    claim(&j, &mut r, "k1", 1_001);
    // A torn tail (a writer cut short) that the claim reader has not read.
    let mut f = std::fs::OpenOptions::new().append(true).open(j.path()).unwrap();
    std::io::Write::write_all(&mut f, b"C\t1002\tcursor\ta\t-\t-\tctx_r").unwrap();
    claim(&j, &mut r, "k2", 1_003);
    let text = std::fs::read_to_string(j.path()).unwrap();
    assert!(text.ends_with('\n') && text.contains("ctx_r\nK\t1003\tk2\ttok\n"), "{text:?}");
    let claims = |text: &str| {
        parse(text)
            .iter()
            .filter_map(|r| if let Record::Claim { key, .. } = r { Some(key.to_string()) } else { None })
            .collect::<Vec<_>>()
    };
    assert_eq!(claims(&text), ["k1", "k2"]);
    r.refresh(&j).unwrap();
    assert_eq!(r.digest().text.as_str(), text, "the reader reads its own lines back");

    // Past the bound, the claim's append trims (no header yet: kept 0).
    let id = |p: &std::path::Path| std::os::unix::fs::MetadataExt::ino(&std::fs::symlink_metadata(p).unwrap());
    let before = id(&j.path());
    let pad: Vec<Record<'_>> = (0..40).map(|i| call(1_010 + i, "kp")).collect();
    let mut f = std::fs::OpenOptions::new().append(true).open(j.path()).unwrap();
    while j.size() <= TRIM_MIN_BYTES {
        let mut s = String::new();
        for p in &pad {
            p.write_line(&mut s);
        }
        std::io::Write::write_all(&mut f, s.as_bytes()).unwrap();
    }
    claim(&j, &mut r, "kp", 2_000);
    assert_ne!(id(&j.path()), before, "trimmed: a new file");
    let text = std::fs::read_to_string(j.path()).unwrap();
    assert!(kept_of(text.as_bytes()).is_some(), "{:?}", &text[..40.min(text.len())]);
    r.refresh(&j).unwrap();
    assert_eq!(r.digest().text.as_str(), text, "the reader started over on the new file");
}

/// A Cursor hook's call record of `ctx_read` with fingerprint `fp0`.
fn cursor_call(t: u64, conv: &'static str, key: &'static str) -> Record<'static> {
    Record::Call(crate::state::journal::Call {
        t,
        host: Host::Cursor,
        conv,
        agent: None,
        server: None,
        tool: "ctx_read",
        fp: "fp0",
        call_id: None,
        key,
    })
}

/// The conversation maps' hasher: every key found again, and the low bits
/// (which pick a bucket) and the high seven (which the table compares
/// first) spread over journal-like ids, not piled up.
#[test]
fn conversation_maps_hash_every_bit_into_the_bucket() {
    use std::hash::BuildHasher;
    let build = std::hash::BuildHasherDefault::<hash::Words>::default();
    let mut m: hash::ByStr<usize> = hash::ByStr::default();
    let mut low = std::collections::HashSet::new();
    let mut high = std::collections::HashSet::new();
    for i in 0..4096usize {
        // Ids that differ in one late byte, as UUIDs of one host often do.
        let id = format!("68bfdc56-c5ac-4f7e-b000-{i:012x}");
        let h = build.hash_one(id.as_str());
        low.insert(h & 1023);
        high.insert(h >> 57);
        m.insert(id, i);
    }
    for i in 0..4096usize {
        assert_eq!(m.get(format!("68bfdc56-c5ac-4f7e-b000-{i:012x}").as_str()), Some(&i));
    }
    // 4,096 keys into 1,024 buckets: a fair hash leaves almost none empty.
    assert!(low.len() > 1000, "{} of 1024 low values", low.len());
    assert_eq!(high.len(), 128);
    // A prefix and a key that differs only by trailing zero bytes are other keys.
    assert_ne!(build.hash_one("ab"), build.hash_one("ab\u{0}"));
    assert_ne!(build.hash_one(""), build.hash_one("\u{0}"));
}

/// A call line's time and last four fields, located by the SSE2 searches,
/// are `split('\t')`'s second and last four fields (none when it has fewer
/// than five; a time that is not a number is no time).
#[test]
fn call_fields_are_the_split_fields() {
    let lines = [
        "C\t1796249044774\tcursor\tc1\t-\tlean-ctx\tctx_read\te6d5913ccde96003efe53242655860f2\t-\t0000021013-1796249044774-0",
        "C\t17\tx\ty\tz",
        "C\t17\tx\ty",
        "C\tabc\ta\tb\tc\td",
        "C\t+5\t\t\t\t",
        "C",
        "",
        "\t\t\t\t",
        "C\t1\t\u{e9}t\u{e9}\t\u{3000}\tk\u{1F600}\tlong-field-past-sixteen-bytes-0123456789\tend",
    ];
    for line in lines {
        let f: Vec<&str> = line.split('\t').collect();
        let want = (f.len() >= 5).then(|| (f[1], f[f.len() - 4], f[f.len() - 3], f[f.len() - 2], f[f.len() - 1]));
        assert_eq!(call_fields(line), want, "{line:?}");
        let t = (f.len() >= 3).then(|| f[1].parse::<u64>().ok()).flatten();
        assert_eq!(call_time(line), t, "{line:?}");
    }
}
