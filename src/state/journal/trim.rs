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
    keep.extend(lineage.into_iter().filter(|&(_, t)| fresh(t, LINEAGE_KEEP_MS)).take(MAX_LINEAGE).map(|x| x.0));

    keep.extend(ledger_kept(records, now));

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

/// The ledger records a trim keeps (indices): per scope and key only the
/// newest delivery (the only one a decision reads), unless a compaction of
/// its conversation follows it (dead: and forgetting that compaction later
/// must not revive it), inside [`crate::state::ledger::DELIVERY_KEEP_MS`], the
/// newest [`crate::state::ledger::MAX_DELIVERIES`]; and the acknowledgements that
/// follow a kept delivery of their call. Everything dropped is dropped in
/// the safe direction: a forgotten delivery or acknowledgement means
/// "deliver".
fn ledger_kept(records: &[Record<'_>], now: u64) -> Vec<usize> {
    use std::cmp::Reverse;
    let mut last_compaction: HashMap<&str, usize> = HashMap::new();
    let mut newest: HashMap<(&str, &str), usize> = HashMap::new();
    // Every delivery of each scope and key, in file order: where a diff's
    // base is looked for.
    let mut all: HashMap<(&str, &str), Vec<usize>> = HashMap::new();
    for (i, r) in records.iter().enumerate() {
        match r {
            Record::Compaction { conv, .. } => {
                last_compaction.insert(conv, i);
            }
            Record::Delivery(d) => {
                newest.insert((d.scope, d.key), i);
                all.entry((d.scope, d.key)).or_default().push(i);
            }
            _ => {}
        }
    }
    let mut live: Vec<usize> = newest
        .into_values()
        .filter(|&i| match &records[i] {
            Record::Delivery(d) => {
                last_compaction.get(d.conv).is_none_or(|&p| p < i)
                    && now.saturating_sub(d.t) <= crate::state::ledger::DELIVERY_KEEP_MS
            }
            _ => false,
        })
        .collect();
    live.sort_unstable_by_key(|&i| Reverse(i));
    live.truncate(crate::state::ledger::MAX_DELIVERIES);
    // The deliveries just before each kept one of its scope and key, up to
    // MAX_STEP_BACK, the run ending at the first of another version: where
    // the read path steps back to when the host withdrew the newer ones (a
    // rewind past them). Kept as a whole run, so that in the trimmed
    // journal the delivery before each is still the one that was before it:
    // a base kept further back is never reached across a delivery of
    // another version. A dead one (a compaction of its conversation
    // follows it) ends the run unkept, as above: forgetting that compaction
    // later must not revive it.
    let mut runs = Vec::new();
    for &i in &live {
        let Record::Delivery(d) = &records[i] else { continue };
        let same = all.get(&(d.scope, d.key)).map(Vec::as_slice).unwrap_or_default();
        for &j in same.iter().rev().filter(|&&j| j < i).take(crate::state::ledger::MAX_STEP_BACK) {
            let Record::Delivery(b) = &records[j] else { break };
            if last_compaction.get(b.conv).is_some_and(|&p| p > j) {
                break;
            }
            runs.push(j);
            if b.version != d.version {
                break;
            }
        }
    }
    // A kept diff keeps the deliveries it rests on (its base, the base's
    // base, within the chain a decision reads): without them it backs no stub.
    let mut bases = Vec::new();
    for &i in &live {
        let mut at = i;
        for _ in 0..crate::state::ledger::MAX_BASE_CHAIN {
            let Record::Delivery(d) = &records[at] else { break };
            let Some(v) = d.base else { break };
            let same = all.get(&(d.scope, d.key)).map(Vec::as_slice).unwrap_or_default();
            let found = same
                .iter()
                .rev()
                .copied()
                .filter(|&j| j < at)
                .find(|&j| matches!(&records[j], Record::Delivery(b) if b.version == v));
            // A dead base (a compaction follows it) is not kept either:
            // once that compaction is forgotten it would look held, and
            // the read path's step back could reach it.
            let Some(b) = found.filter(
                |&b| matches!(&records[b], Record::Delivery(d) if last_compaction.get(d.conv).is_none_or(|&p| p < b)),
            ) else {
                break;
            };
            bases.push(b);
            at = b;
        }
    }
    live.extend(bases);
    live.extend(runs);
    live.sort_unstable();
    live.dedup();
    // The first kept delivery of each call: an acknowledgement after it may count.
    let mut first_of_ref: HashMap<&str, usize> = HashMap::new();
    for &i in &live {
        if let Record::Delivery(d) = &records[i] {
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
    out
}
