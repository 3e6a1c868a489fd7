//! What a trim keeps, pure: the records that can still matter, every
//! eviction in the safe direction.

use super::*;

/// What a trim keeps (pure). Output is in file order (the ledger's "after"
/// is file order), a synthesized floor first.
pub fn trim<'a>(records: &[Record<'a>], now: u64) -> Vec<Record<'a>> {
    use std::cmp::Reverse;
    let fresh = |t: u64, keep: u64| now.saturating_sub(t) <= keep;
    let mut floor = 0u64;
    let mut keep: Vec<usize> = Vec::new();

    // Latest per key by time (a tie goes to the later line), newest first.
    fn latest<K: std::hash::Hash + Eq>(it: impl Iterator<Item = (K, usize, u64)>) -> Vec<(usize, u64)> {
        let mut m: HashMap<K, (usize, u64)> = HashMap::new();
        for (k, i, t) in it {
            match m.get(&k) {
                Some(&(_, old)) if old > t => {}
                _ => {
                    m.insert(k, (i, t));
                }
            }
        }
        let mut v: Vec<_> = m.into_values().collect();
        v.sort_by_key(|&(i, t)| Reverse((t, i)));
        v
    }
    let indexed = || records.iter().enumerate();

    // Sightings: newest per conversation, plus the newest per host always.
    // Sightings from beyond the skew are dropped: kept, one would pass for
    // its conversation's newest and evict the real, current one.
    let current = || indexed().filter(|(_, r)| !is_future(r.t(), now));
    let sightings = latest(current().filter_map(|(i, r)| match *r {
        Record::Sighting { t, host, conv, .. } => Some(((host, conv), i, t)),
        _ => None,
    }));
    let per_host = latest(current().filter_map(|(i, r)| match *r {
        Record::Sighting { t, host, .. } => Some((host, i, t)),
        _ => None,
    }));
    let kept_sightings: Vec<usize> =
        sightings.into_iter().filter(|&(_, t)| fresh(t, STATE_TTL_MS)).take(MAX_CONVERSATIONS).map(|x| x.0).collect();
    // And the oldest sighting of each kept conversation: when it was first
    // seen tells a subagent's own new conversation from one that was there
    // before (see `View::subagent_unwitnessed`); a trim must not make an old
    // conversation look new.
    let mut oldest: HashMap<(Host, &str), (usize, u64)> = HashMap::new();
    for (i, r) in current() {
        if let Record::Sighting { t, host, conv, .. } = *r {
            let e = oldest.entry((host, conv)).or_insert((i, t));
            if t < e.1 {
                *e = (i, t);
            }
        }
    }
    for &i in &kept_sightings {
        if let Record::Sighting { host, conv, .. } = records[i]
            && let Some(&(o, _)) = oldest.get(&(host, conv))
        {
            keep.push(o);
        }
    }
    keep.extend(kept_sightings);
    for (i, _) in per_host {
        if !keep.contains(&i) {
            keep.push(i);
        }
    }

    let ends = latest(indexed().filter_map(|(i, r)| match *r {
        Record::End { t, host, conv } => Some(((host, conv), i, t)),
        _ => None,
    }));
    keep.extend(ends.into_iter().filter(|&(_, t)| fresh(t, STATE_TTL_MS)).take(MAX_CONVERSATIONS).map(|x| x.0));

    let compactions = latest(indexed().filter_map(|(i, r)| match *r {
        Record::Compaction { t, conv, .. } => Some((conv, i, t)),
        _ => None,
    }));
    for (n, (i, t)) in compactions.into_iter().enumerate() {
        if n < MAX_CONVERSATIONS && fresh(t, STATE_TTL_MS) {
            keep.push(i);
        } else {
            floor = floor.max(t);
        }
    }

    // Subagent records inside the TTL, and the start of every subagent still
    // open however old (it runs until its stop or its session's end).
    let open_starts: HashSet<(&str, &str)> = {
        let convs: HashSet<&str> = records
            .iter()
            .filter_map(|r| match *r {
                Record::SubagentStart { conv, .. } => Some(conv),
                _ => None,
            })
            .collect();
        let view = View { records: records.to_vec() };
        convs.into_iter().flat_map(|c| view.active_subagents(c, now).into_iter().map(move |a| (c, a))).collect()
    };
    let mut subs: Vec<(usize, u64)> = indexed()
        .filter(|(_, r)| match **r {
            Record::SubagentStart { t, conv, agent, .. } => {
                fresh(t, STATE_TTL_MS) || open_starts.contains(&(conv, agent))
            }
            Record::SubagentStop { t, .. } => fresh(t, STATE_TTL_MS),
            _ => false,
        })
        .map(|(i, r)| (i, r.t()))
        .collect();
    subs.sort_by_key(|&(i, t)| Reverse((t, i)));
    keep.extend(subs.into_iter().take(MAX_SUBAGENT_RECORDS).map(|x| x.0));

    let mut calls: Vec<(usize, u64)> = indexed()
        .filter(|(_, r)| matches!(r, Record::Call(_)) && fresh(r.t(), CALL_KEEP_MS))
        .map(|(i, r)| (i, r.t()))
        .collect();
    calls.sort_by_key(|&(i, t)| Reverse((t, i)));
    calls.truncate(MAX_CALLS);
    let kept_keys: HashSet<&str> = calls
        .iter()
        .filter_map(|&(i, _)| match &records[i] {
            Record::Call(c) => Some(c.key),
            _ => None,
        })
        .collect();
    keep.extend(calls.iter().map(|x| x.0));
    keep.extend(
        indexed().filter(|(_, r)| matches!(r, Record::Claim { key, .. } if kept_keys.contains(key))).map(|x| x.0),
    );

    let lineage = latest(indexed().filter_map(|(i, r)| match *r {
        Record::Lineage { t, host, pid, .. } => Some(((host, pid), i, t)),
        _ => None,
    }));
    let mut lineage_kept: Vec<usize> =
        lineage.into_iter().filter(|&(_, t)| fresh(t, LINEAGE_KEEP_MS)).take(MAX_LINEAGE).map(|x| x.0).collect();

    let ledger = ledger_kept(records, now);
    // The lineage a kept delivery's process is known by (its
    // `is_process_of`: another process's compaction then leaves its own
    // copy standing).
    let mut proc_convs: HashSet<(Host, u32, &str)> = HashSet::new();
    for &i in &ledger {
        if let Record::Delivery(d) = &records[i]
            && let Some(pid) = d.window.and_then(crate::state::ledger::pid_of_window)
        {
            proc_convs.insert((d.host, pid, d.conv));
        }
    }
    let mut last_of_conv: HashMap<(Host, u32, &str), usize> = HashMap::new();
    let mut last_of_proc: HashMap<(Host, u32), usize> = HashMap::new();
    for (i, r) in indexed() {
        if let Record::Lineage { host, pid, conv, .. } = *r {
            if proc_convs.contains(&(host, pid, conv)) {
                last_of_conv.insert((host, pid, conv), i);
            }
            last_of_proc.insert((host, pid), i);
        }
    }
    lineage_kept.extend(last_of_conv.into_values());
    // And of every process any of whose lineage is kept, its last in file
    // order: its latest start (`View::latest_start`), which a trim must
    // never make an earlier one, or a process that resumed after its own
    // delivery would read that delivery as its own copy again.
    let procs: HashSet<(Host, u32)> = lineage_kept
        .iter()
        .filter_map(|&i| match records[i] {
            Record::Lineage { host, pid, .. } => Some((host, pid)),
            _ => None,
        })
        .collect();
    lineage_kept.extend(procs.into_iter().filter_map(|p| last_of_proc.get(&p).copied()));
    keep.extend(lineage_kept);

    keep.extend(ledger);

    for r in records {
        if let Record::Floor { t } = *r {
            floor = floor.max(t);
        }
    }
    keep.sort_unstable();
    keep.dedup();
    let mut out = Vec::with_capacity(keep.len() + 1);
    if floor > 0 {
        out.push(Record::Floor { t: floor });
    }
    out.extend(keep.into_iter().map(|i| records[i].clone()));
    out
}

/// The ledger records a trim keeps (indices), and the compaction records
/// they need. Per scope and key, a trim keeps a contiguous run of its
/// newest deliveries (file order), never a gap: so every question a
/// decision asks of them — the newest, the newest in one window
/// ([`View::newest_in_window`]), the one before another (a rewind's step
/// back), a diff's base — gets the answer it gets on the whole file, or
/// finds nothing (which withholds). The run reaches back to the oldest of
/// what a live head needs: per window, the newest delivery, live when it
/// is inside [`DELIVERY_KEEP_MS`](crate::state::ledger::DELIVERY_KEEP_MS) and no compaction after it ended it for
/// the process that received it ([`Reach::ends_for`] with its window's
/// pid: another process's compaction leaves it standing); before each,
/// up to [`MAX_STEP_BACK`](crate::state::ledger::MAX_STEP_BACK) (ending at the first of another version, or
/// before a dead one); a diff's bases (not a dead one). Bounds: at most
/// [`MAX_KEY_DELIVERIES`](crate::state::ledger::MAX_KEY_DELIVERIES) a key, [`MAX_DELIVERIES`](crate::state::ledger::MAX_DELIVERIES) keys (those with the
/// newest live heads), [`MAX_KEPT_DELIVERIES`](crate::state::ledger::MAX_KEPT_DELIVERIES) in all. Every compaction
/// of a conversation after its oldest kept delivery is kept with them
/// (forgotten, a narrower one would revive a delivery for a process it
/// ended), at most [`MAX_KEPT_COMPACTIONS`](crate::state::ledger::MAX_KEPT_COMPACTIONS), the newest; a conversation's
/// deliveries before one that did not fit are dropped. And the
/// acknowledgements after a kept delivery of their call. Everything
/// dropped is dropped in the safe direction: a forgotten delivery or
/// acknowledgement means "deliver".
fn ledger_kept(records: &[Record<'_>], now: u64) -> Vec<usize> {
    use crate::state::ledger::{
        DELIVERY_KEEP_MS, MAX_BASE_CHAIN, MAX_DELIVERIES, MAX_KEPT_COMPACTIONS, MAX_KEPT_DELIVERIES,
        MAX_KEY_DELIVERIES, MAX_STEP_BACK, pid_of_window,
    };
    use std::cmp::Reverse;
    // Compactions per conversation, in file order; deliveries per scope and
    // key, in file order.
    let mut compactions: HashMap<&str, Vec<(usize, Reach<'_>)>> = HashMap::new();
    let mut groups: HashMap<(&str, &str), Vec<usize>> = HashMap::new();
    for (i, r) in records.iter().enumerate() {
        match r {
            Record::Compaction { conv, reach, .. } => compactions.entry(conv).or_default().push((i, *reach)),
            Record::Delivery(d) => groups.entry((d.scope, d.key)).or_default().push(i),
            _ => {}
        }
    }
    let delivery = |i: usize| match &records[i] {
        Record::Delivery(d) => Some(d),
        _ => None,
    };
    // Per conversation, the latest compaction of each reach: what the
    // digest answers `compacted_after` with, in constant time a question.
    let mut ended: HashMap<&str, CompactedAt> = HashMap::new();
    for (&conv, cs) in &compactions {
        let e = ended.entry(conv).or_default();
        for &(p, reach) in cs {
            e.note(reach, p);
        }
    }
    // Ended for the process that received it (none known: for anyone).
    let dead = |i: usize| {
        let Some(d) = delivery(i) else { return true };
        let owner = d.window.and_then(pid_of_window);
        ended.get(d.conv).is_some_and(|c| c.after(d.scope, owner, i))
    };
    // Per key: (newest live head, first index into the group kept).
    let mut kept_groups: Vec<(usize, &[usize], usize)> = Vec::new();
    for g in groups.values() {
        let mut heads: HashMap<Option<&str>, usize> = HashMap::new();
        for (n, &i) in g.iter().enumerate() {
            if let Some(d) = delivery(i) {
                heads.insert(d.window, n);
            }
        }
        let live: Vec<usize> = heads
            .into_values()
            .filter(|&n| delivery(g[n]).is_some_and(|d| now.saturating_sub(d.t) <= DELIVERY_KEEP_MS) && !dead(g[n]))
            .collect();
        let Some(&newest) = live.iter().max() else { continue };
        let mut first = newest;
        for &h in &live {
            let Some(d) = delivery(g[h]) else { continue };
            // The step back: the deliveries just before it.
            let mut n = h;
            while n > 0 && h - (n - 1) <= MAX_STEP_BACK && !dead(g[n - 1]) {
                n -= 1;
                if delivery(g[n]).is_some_and(|b| b.version != d.version) {
                    break;
                }
            }
            first = first.min(n);
            // A diff's bases, each the newest of its version before the last.
            let (mut want, mut at) = (d.base, h);
            for _ in 0..MAX_BASE_CHAIN {
                let Some(v) = want else { break };
                let Some(b) = (0..at).rev().find(|&b| delivery(g[b]).is_some_and(|x| x.version == v)) else { break };
                if dead(g[b]) {
                    break;
                }
                first = first.min(b);
                (want, at) = (delivery(g[b]).and_then(|x| x.base), b);
            }
        }
        let first = first.max(g.len().saturating_sub(MAX_KEY_DELIVERIES));
        kept_groups.push((g[newest], g.as_slice(), first));
    }
    kept_groups.sort_unstable_by_key(|&(newest, _, _)| Reverse(newest));
    let mut live: Vec<usize> = Vec::new();
    for (_, g, first) in kept_groups.into_iter().take(MAX_DELIVERIES) {
        if live.len() + (g.len() - first) > MAX_KEPT_DELIVERIES {
            break;
        }
        live.extend(&g[first..]);
    }
    // The compactions the kept deliveries need: every one of their
    // conversation after the oldest kept, the newest first.
    let mut oldest: HashMap<&str, usize> = HashMap::new();
    for &i in &live {
        if let Some(d) = delivery(i) {
            let e = oldest.entry(d.conv).or_insert(i);
            *e = (*e).min(i);
        }
    }
    let mut needed: Vec<(usize, &str)> = oldest
        .iter()
        .flat_map(|(&conv, &o)| {
            let cs = compactions.get(conv).map(Vec::as_slice).unwrap_or_default();
            cs[cs.partition_point(|&(p, _)| p <= o)..].iter().map(move |&(p, _)| (p, conv))
        })
        .collect();
    needed.sort_unstable_by_key(|&(p, _)| Reverse(p));
    // A conversation's deliveries before a needed compaction that did not
    // fit are dropped (a suffix of each key's run still).
    let mut cut: HashMap<&str, usize> = HashMap::new();
    for &(p, conv) in needed.iter().skip(MAX_KEPT_COMPACTIONS) {
        let e = cut.entry(conv).or_insert(p);
        *e = (*e).max(p);
    }
    live.retain(|&i| delivery(i).is_some_and(|d| cut.get(d.conv).is_none_or(|&c| i > c)));
    live.sort_unstable();
    live.dedup();
    // The first kept delivery of each call: an acknowledgement after it may count.
    let mut first_of_ref: HashMap<&str, usize> = HashMap::new();
    for &i in &live {
        if let Some(d) = delivery(i) {
            let e = first_of_ref.entry(d.call_ref).or_insert(i);
            *e = (*e).min(i);
        }
    }
    let acks = records.iter().enumerate().filter_map(|(i, r)| match r {
        Record::Ack(a) if first_of_ref.get(a.call_ref).is_some_and(|&d| d < i) => Some(i),
        _ => None,
    });
    let mut out = live;
    out.extend(acks);
    out.extend(needed.into_iter().take(MAX_KEPT_COMPACTIONS).map(|(p, _)| p));
    out
}
