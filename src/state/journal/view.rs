//! Queries over parsed records: who is live, concurrent, compacted,
//! claimed, delivered. Pure: `now` is always an argument.

use super::*;

/// A live top-level conversation.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Live<'a> {
    pub host: Host,
    pub conversation: &'a str,
    pub last_seen_ms: u64,
    pub last_event: &'a str,
}

/// Queries over parsed records. Pure: `now` is always an argument.
pub struct View<'a> {
    pub records: Vec<Record<'a>>,
}

impl<'a> View<'a> {
    pub fn parse(text: &'a str) -> View<'a> {
        View { records: parse(text) }
    }

    /// Top-level conversations sighted in the window before `now` and not
    /// ended since their last sighting, newest first.
    pub fn live_conversations(&self, now: u64) -> Vec<Live<'a>> {
        let mut last: HashMap<(Host, &str), (u64, &str)> = HashMap::new();
        let mut ended: HashMap<(Host, &str), u64> = HashMap::new();
        // A record stamped beyond the skew (written while the clock was
        // ahead) has not happened yet as far as `now` knows: it must neither
        // stand for a conversation's latest sighting (hiding the real,
        // current ones) nor end a conversation that is live now.
        for r in self.records.iter().filter(|r| !is_future_for(r, now)) {
            match *r {
                Record::Sighting { t, host, conv, event } => {
                    let e = last.entry((host, conv)).or_insert((t, event));
                    if t >= e.0 {
                        *e = (t, event);
                    }
                }
                Record::End { t, host, conv } => {
                    let e = ended.entry((host, conv)).or_insert(t);
                    *e = (*e).max(t);
                }
                _ => {}
            }
        }
        let mut out: Vec<Live<'a>> = last
            .into_iter()
            .filter(|((host, conv), (t, _))| {
                in_window(*t, now, WINDOW_MS) && ended.get(&(*host, *conv)).is_none_or(|e| *e < *t)
            })
            .map(|((host, conv), (t, event))| Live { host, conversation: conv, last_seen_ms: t, last_event: event })
            .collect();
        out.sort_by(|a, b| b.last_seen_ms.cmp(&a.last_seen_ms).then(a.conversation.cmp(b.conversation)));
        out
    }

    /// A live top-level conversation other than `conv`.
    pub fn live_other_than(&self, conv: &str, now: u64) -> bool {
        self.live_conversations(now).iter().any(|l| l.conversation != conv)
    }

    /// More than one distinct live top-level conversation.
    pub fn concurrent(&self, now: u64) -> bool {
        let live = self.live_conversations(now);
        let mut ids: Vec<&str> = live.iter().map(|l| l.conversation).collect();
        ids.sort_unstable();
        ids.dedup();
        ids.len() > 1
    }

    /// The latest compaction of `conv`, if any.
    pub fn last_compaction(&self, conv: &str) -> Option<u64> {
        self.records
            .iter()
            .filter_map(|r| match *r {
                Record::Compaction { t, conv: c, .. } if c == conv => Some(t),
                _ => None,
            })
            .max()
    }

    /// The latest compaction of any conversation.
    pub fn latest_compaction_any(&self) -> Option<u64> {
        self.records
            .iter()
            .filter_map(|r| match *r {
                Record::Compaction { t, .. } => Some(t),
                _ => None,
            })
            .max()
    }

    /// Compactions at or before this time may have been forgotten.
    pub fn compaction_floor(&self) -> u64 {
        self.records
            .iter()
            .filter_map(|r| match *r {
                Record::Floor { t } => Some(t),
                _ => None,
            })
            .max()
            .unwrap_or(0)
    }

    /// Subagents of `conv` started and not yet stopped, nor ended with their
    /// session: a subagent runs until its stop, however long (a timer let a
    /// subagent running past 2 h pass for stopped, and the parent get its
    /// stubs). A stop without an id (an older Cursor) closes none: which one
    /// stopped is unknown, and a start whose hook died may be missing, so
    /// closing "the oldest" once closed a subagent that was still running
    /// (tests/it/sim_ledger.rs, seed 1796040183043495173: its calls, recorded
    /// under the parent for want of `CURSOR_TASK_ID`, were then taken for
    /// the parent's). The session's end closes them.
    pub fn active_subagents(&self, conv: &str, now: u64) -> Vec<&'a str> {
        self.open_subagents(conv, now).into_iter().map(|(a, _)| a).collect()
    }

    /// More than one conversation has sightings or ends in the journal, or
    /// a subagent (a scope of its own) has a record.
    pub fn several_conversations(&self) -> bool {
        let mut first = None;
        for r in &self.records {
            if let Record::SubagentStart { .. } | Record::SubagentStop { .. } = r {
                return true;
            }
            if let Record::Sighting { conv, .. } | Record::End { conv, .. } = *r {
                match first {
                    None => first = Some(conv),
                    Some(f) if f != conv => return true,
                    _ => {}
                }
            }
        }
        false
    }

    /// A subagent of any conversation is running.
    pub fn any_subagent_active(&self, now: u64) -> bool {
        let convs: HashSet<&str> = self
            .records
            .iter()
            .filter_map(|r| match *r {
                Record::SubagentStart { conv, .. } => Some(conv),
                _ => None,
            })
            .collect();
        convs.into_iter().any(|c| !self.active_subagents(c, now).is_empty())
    }

    /// [`View::active_subagents`] with each one's start time.
    pub fn open_subagents(&self, conv: &str, now: u64) -> Vec<(&'a str, u64)> {
        // (time, order at equal times: end, start, stop; agent)
        let mut events: Vec<(u64, u8, Option<&'a str>)> = self
            .records
            .iter()
            .filter(|r| !is_future_for(r, now))
            .filter_map(|r| match *r {
                Record::End { t, conv: c, .. } if c == conv => Some((t, 0, None)),
                Record::SubagentStart { t, conv: c, agent, .. } if c == conv => Some((t, 1, Some(agent))),
                Record::SubagentStop { t, conv: c, agent, .. } if c == conv => Some((t, 2, agent)),
                _ => None,
            })
            .collect();
        events.sort_by_key(|e| (e.0, e.1));
        let mut open: Vec<(&'a str, u64)> = Vec::new();
        for (t, kind, agent) in events {
            match (kind, agent) {
                (0, _) => open.clear(),
                (1, Some(a)) => {
                    open.retain(|o| o.0 != a);
                    open.push((a, t));
                }
                (2, Some(a)) => open.retain(|o| o.0 != a),
                _ => {}
            }
        }
        open
    }

    /// A subagent of `conv` (host `host`) is running whose calls could be
    /// recorded under `conv` itself: its hooks have shown it runs inside the
    /// parent's conversation (a call record of `conv` with its `task:` id:
    /// lean-ctx's `CURSOR_TASK_ID` model, whose env a hook may lack), or
    /// nothing shows yet that it has a conversation of its own (no
    /// conversation of the host first seen since it started: Cursor 3.x gives
    /// a subagent a fresh conversation id). Such a parent cannot be told from
    /// its subagent by a fingerprint.
    pub fn subagent_unwitnessed(&self, conv: &str, host: Host, now: u64) -> bool {
        let open = self.open_subagents(conv, now);
        if open.is_empty() {
            return false;
        }
        let mut first: HashMap<&str, u64> = HashMap::new();
        for r in &self.records {
            if let Record::Sighting { t, host: h, conv: c, .. } = *r
                && h == host
                && c != conv
                && !is_future(t, now)
            {
                let e = first.entry(c).or_insert(t);
                *e = (*e).min(t);
            }
        }
        let inside = open.iter().any(|&(a, _)| {
            self.records.iter().any(|r| matches!(r, Record::Call(c) if c.conv == conv && c.agent == Some(a)))
        });
        if inside {
            return true;
        }
        // Every running subagent of the host's conversations needs a
        // conversation of its own, first seen after it started.
        let parents: HashSet<&str> = self
            .records
            .iter()
            .filter_map(|r| match *r {
                Record::SubagentStart { host: h, conv: c, .. } | Record::SubagentStop { host: h, conv: c, .. }
                    if h == host =>
                {
                    Some(c)
                }
                _ => None,
            })
            .collect();
        let starts: Vec<u64> = parents.into_iter().flat_map(|c| self.open_subagents(c, now)).map(|x| x.1).collect();
        !each_has_its_own(starts, first.into_values().collect())
    }

    /// The call record the host gave this call id (Claude `tool_use_id`).
    pub fn call_by_id(&self, call_id: &str) -> Option<&Call<'a>> {
        self.records.iter().rev().find_map(|r| match r {
            Record::Call(c) if c.call_id == Some(call_id) => Some(c),
            _ => None,
        })
    }

    pub fn claimed_keys(&self) -> HashSet<&'a str> {
        self.records
            .iter()
            .filter_map(|r| match *r {
                Record::Claim { key, .. } => Some(key),
                _ => None,
            })
            .collect()
    }

    /// The call record this claimant (one MCP request) already claimed.
    pub fn claimed_by(&self, claimant: &str) -> Option<&Call<'a>> {
        let key = self.records.iter().rev().find_map(|r| match *r {
            Record::Claim { key, claimant: Some(c), .. } if c == claimant => Some(key),
            _ => None,
        })?;
        self.records.iter().find_map(|r| match r {
            Record::Call(c) if c.key == key => Some(c),
            _ => None,
        })
    }

    /// Unclaimed call records (of any host) with this tool and fingerprint,
    /// inside the claim window, oldest first.
    pub fn claim_candidates(&self, tool: &str, fp: &str, now: u64) -> Vec<&Call<'a>> {
        let claimed = self.claimed_keys();
        self.records
            .iter()
            .filter_map(|r| match r {
                // Every host's records: a call that reaches fingerprint
                // matching has no per-call id, so it may come from any host
                // (an older Claude Code sends none). A Claude or Codex record
                // with the same arguments from another scope makes the match
                // ambiguous rather than letting the call claim a Cursor
                // record that is not its own; and a lone Claude record is
                // that Claude call's own.
                Record::Call(c)
                    if c.tool == tool
                        && c.fp == fp
                        && in_window(c.t, now, CLAIM_WINDOW_MS)
                        && !claimed.contains(c.key) =>
                {
                    Some(c)
                }
                _ => None,
            })
            .collect()
    }

    /// The conversation the host process `pid` moved to (Claude `/clear`),
    /// if it did inside the TTL.
    pub fn lineage_for(&self, host: Host, pid: u32, now: u64) -> Option<(u64, &'a str)> {
        self.records
            .iter()
            .filter_map(|r| match *r {
                Record::Lineage { t, host: h, pid: p, conv }
                    if h == host && p == pid && in_window(t, now, LINEAGE_KEEP_MS) =>
                {
                    Some((t, conv))
                }
                _ => None,
            })
            .max_by_key(|(t, _)| *t)
    }

    /// The newest delivery of `key` (hashed) to `scope`, in file order, with
    /// its index.
    pub fn latest_delivery(&self, scope: &str, key: &str) -> Option<(usize, &Delivery<'a>)> {
        self.records.iter().enumerate().rev().find_map(|(i, r)| match r {
            Record::Delivery(d) if d.is_of(scope, key, None) => Some((i, d)),
            _ => None,
        })
    }

    /// The newest delivery of `key` to `scope` in context window `window`,
    /// with its index, provided every newer one is in another Claude Code
    /// process's window (`proc:<pid>`): what the asking process itself
    /// last received, when only other processes received the key since.
    pub fn newest_in_window(&self, scope: &str, key: &str, window: &str) -> Option<(usize, &Delivery<'a>)> {
        for (i, r) in self.records.iter().enumerate().rev() {
            if let Record::Delivery(d) = r
                && d.is_of(scope, key, None)
            {
                if d.window == Some(window) {
                    return Some((i, d));
                }
                d.window.and_then(crate::state::ledger::pid_of_window)?;
            }
        }
        None
    }

    /// The host process `pid`'s latest start: its last lineage record in
    /// file order (of any conversation), its index and conversation.
    pub fn latest_start(&self, host: Host, pid: u32) -> Option<(usize, &'a str)> {
        self.records.iter().enumerate().rev().find_map(|(i, r)| match *r {
            Record::Lineage { host: h, pid: p, conv, .. } if h == host && p == pid => Some((i, conv)),
            _ => None,
        })
    }

    /// The newest delivery of `version` of `key` to `scope` before index
    /// `before` (`None`: of any version).
    pub fn delivery_before(
        &self,
        scope: &str,
        key: &str,
        version: Option<&str>,
        before: usize,
    ) -> Option<(usize, &Delivery<'a>)> {
        self.records[..before.min(self.records.len())].iter().enumerate().rev().find_map(|(i, r)| match r {
            Record::Delivery(d) if d.is_of(scope, key, version) => Some((i, d)),
            _ => None,
        })
    }

    /// Acknowledgements of the call `call_ref` after index `after`.
    pub fn acks_after(&self, call_ref: &str, after: usize) -> Vec<Ack<'a>> {
        self.records
            .iter()
            .skip(after + 1)
            .filter_map(|r| match r {
                Record::Ack(a) if a.call_ref == call_ref => Some(a.clone()),
                _ => None,
            })
            .collect()
    }

    /// [`View::acks_after`], each with its index.
    pub fn acks_after_at(&self, call_ref: &str, after: usize) -> Vec<(usize, Ack<'a>)> {
        let recs = self.records.iter().enumerate().skip(after + 1);
        recs.filter_map(|(i, r)| match r {
            Record::Ack(a) if a.call_ref == call_ref => Some((i, a.clone())),
            _ => None,
        })
        .collect()
    }

    /// The host process `pid` started or resumed `conv` (a lineage record,
    /// anywhere): it is one of its host's processes, not, say, the parent
    /// of a server that several of them share.
    pub fn is_process_of(&self, host: Host, pid: u32, conv: &str) -> bool {
        self.records.iter().any(
            |r| matches!(*r, Record::Lineage { host: h, pid: p, conv: c, .. } if h == host && p == pid && c == conv),
        )
    }

    /// The host process `pid` started or resumed `conv` (its lineage
    /// record) after index `after`.
    pub fn started_after(&self, host: Host, pid: u32, conv: &str, after: usize) -> bool {
        self.records.iter().skip(after + 1).any(
            |r| matches!(*r, Record::Lineage { host: h, pid: p, conv: c, .. } if h == host && p == pid && c == conv),
        )
    }

    /// A compaction of `conv` that reached `scope` (a delivery's: the main
    /// thread's or one subagent's, [`Reach`]) lies after index `after`,
    /// for a question from `own`, the host process that received the
    /// delivery asking about it itself ([`Reach::ends_for`]; none: not known,
    /// or another process).
    pub fn compacted_after(&self, conv: &str, scope: &str, own: Option<u32>, after: usize) -> bool {
        self.records
            .iter()
            .skip(after + 1)
            .any(|r| matches!(*r, Record::Compaction { conv: c, reach, .. } if c == conv && reach.ends_for(scope, own)))
    }

    /// The newest sighting of each host, however old (for status).
    pub fn last_event_per_host(&self) -> Vec<Live<'a>> {
        let mut per: HashMap<Host, Live<'a>> = HashMap::new();
        for r in &self.records {
            if let Record::Sighting { t, host, conv, event } = *r {
                let e =
                    per.entry(host).or_insert(Live { host, conversation: conv, last_seen_ms: t, last_event: event });
                if t >= e.last_seen_ms {
                    *e = Live { host, conversation: conv, last_seen_ms: t, last_event: event };
                }
            }
        }
        let mut v: Vec<_> = per.into_values().collect();
        v.sort_by_key(|l| l.host);
        v
    }
}

/// `t` is further ahead of `now` than the skew we tolerate: stamped by a
/// clock that was ahead, or read by one that went back.
pub fn is_future(t: u64, now: u64) -> bool {
    t > now.saturating_add(FUTURE_SKEW_MS)
}

/// `t` (of an end or a subagent stop) is further ahead than [`END_SKEW_MS`].
pub fn is_future_end(t: u64, now: u64) -> bool {
    t > now.saturating_add(END_SKEW_MS)
}

/// Has `r` not happened yet at `now`? Ends and stops by [`END_SKEW_MS`],
/// everything else by [`FUTURE_SKEW_MS`].
fn is_future_for(r: &Record<'_>, now: u64) -> bool {
    match r {
        Record::End { t, .. } | Record::SubagentStop { t, .. } => is_future_end(*t, now),
        _ => is_future(r.t(), now),
    }
}

/// `t` is inside `[now - window, now + FUTURE_SKEW_MS]`.
pub fn in_window(t: u64, now: u64, window: u64) -> bool {
    t <= now.saturating_add(FUTURE_SKEW_MS) && now.saturating_sub(t) <= window
}

/// Whether each subagent (by start time) can be given a conversation of its
/// own (by first-seen time): a distinct one, first seen at or after it
/// started. One new conversation witnesses one subagent: a Cursor 3.x
/// subagent's own conversation must not also vouch for a `CURSOR_TASK_ID`
/// task whose hooks lack the variable and record under the parent (found
/// by tests/it/sim_ledger.rs: such a task's call was taken for its
/// parent's). The sets are nested, so Hall's condition is a count per start.
pub(crate) fn each_has_its_own(mut starts: Vec<u64>, firsts: Vec<u64>) -> bool {
    starts.sort_unstable_by(|a, b| b.cmp(a));
    starts.iter().enumerate().all(|(k, &t0)| firsts.iter().filter(|&&t| t >= t0).count() > k)
}
