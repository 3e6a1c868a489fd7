//! One conversation's subagent starts and stops and its ends, kept in the
//! order [`View::open_subagents`](crate::state::journal::View::open_subagents)
//! sorts them, with the open set saved every few events.
//!
//! "Which subagents of this conversation were open at `t`" is asked on every
//! decision, for now and for the delivery's time. Running View's code on
//! every start and stop the digest kept cost a decision in proportion to the
//! conversation's history (a busy chat's trimmed journal holds hundreds:
//! benches/hooks, the fresh decision 1.65× slower at 1,000,000 events than at
//! 100). Here an answer resumes View's fold from the last set saved before
//! `t` and reads only the events after it: the same steps on the same events
//! in the same order, so the same answer, at any `t`.

use super::Span;
use crate::state::journal;
use std::cell::RefCell;

/// The open set is saved after every this many events (tests: often, so
/// that the randomized comparison with View crosses many saved sets).
const EVERY: usize = if cfg!(test) { 3 } else { 16 };
/// A set larger than this is not saved (a conversation whose subagents never
/// stop would cost memory quadratic in its history); an answer then resumes
/// from an earlier saved set, or from the start (tests: small, so that this
/// path is taken too).
const SAVE_AT_MOST: usize = if cfg!(test) { 1 } else { 64 };

/// View's order at equal times: an end first, then starts, then stops.
const END: u8 = 0;
const START: u8 = 1;
const STOP: u8 = 2;

// Every event visible at `t` by the end skew is visible by the start skew:
// the events up to `t + END_SKEW_MS` are a prefix of the sorted events that
// every kind sees.
const _: () = assert!(journal::END_SKEW_MS <= journal::FUTURE_SKEW_MS);

#[derive(Clone, Copy, Debug)]
struct Event {
    t: u64,
    kind: u8,
    /// The agent of a start or stop (a stop without one is not kept: it
    /// closes nothing).
    agent: Option<Span>,
}

/// One conversation's subagent records and ends, sorted as View sorts them
/// when first asked about.
#[derive(Clone, Debug, Default)]
pub(super) struct Subagents {
    /// Host indices with a start or stop record (bit per host).
    hosts: u8,
    /// A start or stop record was seen (not only ends).
    any: bool,
    /// Sorted in on the first question: a process that never asks about
    /// this conversation (a CLI call asks about one) pays a push per record.
    sorted: RefCell<Sorted>,
}

#[derive(Clone, Debug, Default)]
struct Sorted {
    /// Folded, not sorted in yet (file order).
    pending: Vec<Event>,
    /// Sorted by (time, kind), file order among equals (View's stable sort).
    events: Vec<Event>,
    /// `saved[j]`: the open set after `events[..j * EVERY]` (`None`: too
    /// large to keep).
    saved: Vec<Option<Vec<(Span, u64)>>>,
    /// The open set after all events.
    open: Vec<(Span, u64)>,
    /// The last answer for a time that does not see every event, and that
    /// time. A decision asks at the delivery's time, the same at every
    /// re-read of that delivery, and there an answer stepped through the
    /// ~55 s of starts after the last saved set (a busy chat: ~18,000
    /// instructions a decision, benches/README.md "Tenth pass, in
    /// process"). Dropped when an event is sorted in: the same events at
    /// the same time give the same answer.
    asked: Option<(u64, Vec<(Span, u64)>)>,
}

/// View's step: an end closes every subagent, a start (re)opens its agent
/// at its time, a stop closes its agent.
fn step(text: &str, open: &mut Vec<(Span, u64)>, e: &Event) {
    let same = |a: Span, b: Span| text[a.0..a.1] == text[b.0..b.1];
    match (e.kind, e.agent) {
        (END, _) => open.clear(),
        (START, Some(a)) => {
            open.retain(|o| !same(o.0, a));
            open.push((a, e.t));
        }
        (STOP, Some(a)) => open.retain(|o| !same(o.0, a)),
        _ => {}
    }
}

impl Subagents {
    pub(super) fn start(&mut self, t: u64, host: usize, agent: Span) {
        self.note_host(host);
        self.insert(Event { t, kind: START, agent: Some(agent) });
    }

    pub(super) fn stop(&mut self, t: u64, host: usize, agent: Option<Span>) {
        self.note_host(host);
        if agent.is_some() {
            self.insert(Event { t, kind: STOP, agent });
        }
    }

    pub(super) fn end(&mut self, t: u64) {
        self.insert(Event { t, kind: END, agent: None });
    }

    fn note_host(&mut self, host: usize) {
        self.hosts |= 1 << host;
        self.any = true;
    }

    /// Has a start or stop record (View counts such a conversation's
    /// subagents as scopes of their own).
    pub(super) fn any(&self) -> bool {
        self.any
    }

    /// Has a start or stop record made by the host at this index.
    pub(super) fn of_host(&self, host: usize) -> bool {
        self.hosts & (1 << host) != 0
    }

    fn insert(&mut self, e: Event) {
        self.sorted.get_mut().pending.push(e);
    }

    /// [`View::open_subagents`](crate::state::journal::View::open_subagents)
    /// at `now` on this conversation's records.
    pub(super) fn open_at(&self, text: &str, now: u64) -> Vec<(Span, u64)> {
        let mut s = self.sorted.borrow_mut();
        s.sort_in(text);
        s.open_at_kept(text, now)
    }

    /// `!open_at(now).is_empty()`, without the copy when every event is seen.
    pub(super) fn any_open_at(&self, text: &str, now: u64) -> bool {
        let mut s = self.sorted.borrow_mut();
        s.sort_in(text);
        match s.events.last() {
            Some(e) if !journal::is_future_end(e.t, now) => !s.open.is_empty(),
            _ => !s.open_at(text, now).is_empty(),
        }
    }
}

impl Sorted {
    fn sort_in(&mut self, text: &str) {
        for e in std::mem::take(&mut self.pending) {
            self.insert(text, e);
        }
    }

    fn insert(&mut self, text: &str, e: Event) {
        self.asked = None;
        if self.saved.is_empty() {
            self.saved.push(Some(Vec::new()));
        }
        let at = self.events.partition_point(|x| (x.t, x.kind) <= (e.t, e.kind));
        // `self.open` is the set after events[..from]; `saved` ends with the
        // set after events[..from / EVERY * EVERY].
        let from = if at < self.events.len() {
            // Older than events already folded (hooks of two processes
            // append a few ms out of order): the sets saved after it are
            // stale; fold again from the last one saved before it.
            let (open, from) = self.resume(at / EVERY);
            self.saved.truncate(from / EVERY + 1);
            self.open = open;
            from
        } else {
            self.events.len()
        };
        self.events.insert(at, e);
        for i in from..self.events.len() {
            step(text, &mut self.open, &self.events[i]);
            if (i + 1) % EVERY == 0 {
                let keep = (self.open.len() <= SAVE_AT_MOST).then(|| self.open.clone());
                self.saved.push(keep);
            }
        }
    }

    /// The open set saved last at or before `saved[j]`, and the number of
    /// events it covers.
    fn resume(&self, j: usize) -> (Vec<(Span, u64)>, usize) {
        let j = j.min(self.saved.len().saturating_sub(1));
        (0..=j)
            .rev()
            .find_map(|k| self.saved.get(k).and_then(|s| s.as_ref()).map(|s| (s.clone(), k * EVERY)))
            .unwrap_or_default()
    }

    /// [`Sorted::open_at`], remembering the last answer that had to step
    /// through events ([`Sorted::asked`]).
    fn open_at_kept(&mut self, text: &str, now: u64) -> Vec<(Span, u64)> {
        if let Some((t, open)) = &self.asked
            && *t == now
        {
            return open.clone();
        }
        let open = self.open_at(text, now);
        if self.events.last().is_some_and(|e| journal::is_future_end(e.t, now)) {
            self.asked = Some((now, open.clone()));
        }
        open
    }

    fn open_at(&self, text: &str, now: u64) -> Vec<(Span, u64)> {
        // The events every kind sees at `now`: a prefix.
        let seen = self.events.partition_point(|e| !journal::is_future_end(e.t, now));
        if seen == self.events.len() {
            return self.open.clone();
        }
        let (mut open, from) = self.resume(seen / EVERY);
        for e in &self.events[from..] {
            if journal::is_future(e.t, now) {
                // Sorted by time: every later one is too.
                break;
            }
            // A start stamped within the start skew has happened; a stop or
            // end only within the end skew.
            if e.kind == START || !journal::is_future_end(e.t, now) {
                step(text, &mut open, e);
            }
        }
        open
    }
}
