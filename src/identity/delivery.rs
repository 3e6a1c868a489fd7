//! The delivery ledger's stub rule, pure: may the caller named per call
//! be served a stub for a key at a version? The records and what they
//! mean: [`crate::state::ledger`].

use crate::identity::decision::{Decision, Reason};
use crate::state::ledger::{Ack, Confirmation, Content, Delivery, confirmation};

/// The stub question, after the caller was resolved per call.
#[derive(Clone, Debug)]
pub struct Question<'a> {
    /// The caller's scope (conversation, `agent:<id>`, `task:<id>`).
    pub scope: &'a str,
    /// Key and version as [`Secret::name`](crate::state::secret::Secret::name) keys them.
    pub key: &'a str,
    /// The hash of the content's version.
    pub version: &'a str,
    /// Codex `_meta.windowId` of this call, if any.
    pub window: Option<&'a str>,
    /// The result the server would send now (`--result`), when given: a
    /// stub stands in for it only if it is the very content confirmed.
    pub sent: Option<&'a Content>,
}

/// What the journal says about the newest delivery of the key to the scope.
#[derive(Clone, Debug, Default)]
pub struct Facts<'a> {
    /// The state cannot be trusted: withhold.
    pub unavailable: bool,
    /// The newest delivery of the key to the scope, if any.
    pub latest: Option<Delivery<'a>>,
    /// Acknowledgements of the latest delivery's call, after it.
    pub acks_after: Vec<Ack<'a>>,
    /// A compaction of the delivery's conversation follows it.
    pub compacted_after: bool,
    /// Claude Code: the asking host process (its window `proc:<pid>`)
    /// started or resumed the conversation after the delivery was confirmed
    /// whole, so it loaded it from the transcript with the rest of the
    /// history: a delivery of another process of the session backs it.
    pub reloaded_after: bool,
    /// The results of other host processes [`Facts::reloaded_after`] and
    /// the bases' `reloaded_into_diff` rest on: (owner pid, loader pid, unix
    /// ms of the confirmation), for the witness ([`crate::witness::lives`]).
    pub relied: Vec<(u32, u32, u64)>,
    /// When the latest is a diff: the deliveries it rests on, newest first
    /// (its base, the base's base, …), as far as the journal has them.
    pub bases: Vec<Held<'a>>,
    /// Newer deliveries of the key to the scope than `latest`, newest
    /// first, each of which the host withdrew (the witness saw it rewound or
    /// cut): the decision steps back over them to `latest`, a copy the model
    /// may still hold (a rewind restores the context of its prompt). Empty:
    /// `latest` is the newest.
    pub withdrawn_newer: Vec<Delivery<'a>>,
}

/// A delivery a diff rests on, with what follows it in the journal.
#[derive(Clone, Debug)]
pub struct Held<'a> {
    /// The delivery.
    pub delivery: Delivery<'a>,
    /// Acknowledgements of its call, after it.
    pub acks_after: Vec<Ack<'a>>,
    /// A compaction of its conversation follows it.
    pub compacted_after: bool,
    /// Claude Code: the diff's host process (its `proc:` window) started or
    /// resumed the conversation after this base was confirmed whole, so it
    /// loaded the base with the history (as [`Facts::reloaded_after`]).
    pub reloaded_into_diff: bool,
}

pub use crate::state::ledger::MAX_BASE_CHAIN;

/// The decision, pure: may the caller named per call by `q` be served a stub
/// for `q.key`@`q.version`?
pub fn decide(q: &Question<'_>, f: &Facts<'_>) -> Decision {
    let deny = |reason| Decision { allow: false, reason };
    if f.unavailable {
        return deny(Reason::StateUnavailable);
    }
    let Some(d) = &f.latest else { return deny(Reason::NotDelivered) };
    debug_assert_eq!((d.scope, d.key), (q.scope, q.key));
    if d.version != q.version {
        return deny(Reason::VersionChanged);
    }
    // Back over withdrawn deliveries only to an earlier copy of the same
    // version in the same window: never across another version's delivery
    // (the model's latest view of the file was that one) nor another
    // window's.
    if f.withdrawn_newer.iter().any(|w| !w.is_of(d.scope, d.key, Some(q.version)) || w.window != d.window) {
        return deny(Reason::Withdrawn);
    }
    // A window on either side that the other does not share: a different
    // context window, or one we cannot tell is the same.
    if d.window != q.window && !f.reloaded_after {
        return deny(Reason::WindowChanged);
    }
    if f.compacted_after {
        return deny(Reason::Compacted);
    }
    if confirmation(d, &f.acks_after) != Confirmation::Whole {
        return deny(Reason::Unconfirmed);
    }
    // One key and version may be served as different results (an outline,
    // the full text): the confirmed one says nothing about another.
    if q.sent.is_some_and(|s| s.digest != d.digest || s.len != d.len) {
        return deny(Reason::ResultChanged);
    }
    if !bases_held(d, &f.bases) {
        return deny(Reason::BaseNotHeld);
    }
    Decision { allow: true, reason: Reason::ConfirmedDelivery }
}

/// Claude Code: whether a process's own newest delivery of a key, at
/// position `own_at`, is what its context holds of it, though other
/// processes of the session received the key after it. `start`: the
/// process's latest start or resume (its last lineage record: position,
/// and whether it is of the delivery's conversation). The process loaded
/// the session's history when it started, before it made the call it
/// received that delivery on; a later delivery to another process was
/// journaled after that one, before its result reached any transcript, so
/// it is not in this process's context, and the process's own context
/// since holds only its own results. A start after its delivery (a
/// resume: it loaded a history that may hold the others' and not its
/// own), a start into another conversation, or none known: no.
pub fn own_copy_stands(own_at: usize, start: Option<(usize, bool)>) -> bool {
    matches!(start, Some((at, same_conv)) if same_conv && at < own_at)
}

/// A diff backs a stub only while the model still holds what it applies
/// to: each base, in turn, the delivery of exactly that version, in the
/// diff's window, confirmed whole, with no compaction after it; the chain
/// ends in a whole delivery within [`MAX_BASE_CHAIN`]. (A compaction after
/// the base but before the diff is caught here: the diff itself follows
/// it.) The diff's window, not the asker's: the asker holds the diff (same
/// window, or a Claude Code process that loaded the history after the diff
/// was confirmed), and with it what came before it in that window, or what
/// the diff's own process loaded the same way (a base delivered to an
/// earlier process: 5 `base-not-held` re-reads in benches/workload). Against
/// the asker's window, every diff made in an earlier `claude -p` turn of
/// the session was `base-not-held` (benches/workload).
fn bases_held(d: &Delivery<'_>, bases: &[Held<'_>]) -> bool {
    let mut want = d.base;
    for h in bases.iter().take(MAX_BASE_CHAIN) {
        let Some(v) = want else { return true };
        let b = &h.delivery;
        if b.version != v
            || b.scope != d.scope
            || b.key != d.key
            || (b.window != d.window && !h.reloaded_into_diff)
            || h.compacted_after
            || confirmation(b, &h.acks_after) != Confirmation::Whole
        {
            return false;
        }
        want = b.base;
    }
    want.is_none()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::ledger::tests::{ack, d};

    #[test]
    fn decision_table() {
        use Reason::*;
        let q = Question { scope: "S", key: "K", version: "v1", window: None, sent: None };
        let same = Content { digest: "dg".into(), len: 10 };
        let outline = Content { digest: "ol".into(), len: 10 };
        let shorter = Content { digest: "dg".into(), len: 9 };
        let qs = Question { sent: Some(&same), ..q.clone() };
        let qo = Question { sent: Some(&outline), ..q.clone() };
        let ql = Question { sent: Some(&shorter), ..q.clone() };
        let qw = Question { window: Some("S:1"), ..q.clone() };
        let qp2 = Question { window: Some("proc:2"), ..q.clone() };
        let good = ack("id:c1", "S", "dg", 10, true);
        #[rustfmt::skip]
        let rows: Vec<(&Question, Facts, bool, Reason)> = vec![
            (&q, Facts { unavailable: true, latest: Some(d("v1", None, "dg")), acks_after: vec![good.clone()], ..Facts::default() }, false, StateUnavailable),
            (&q, Facts::default(), false, NotDelivered),
            (&q, Facts { latest: Some(d("v0", None, "dg")), acks_after: vec![good.clone()], ..Facts::default() }, false, VersionChanged),
            (&q, Facts { latest: Some(d("v1", Some("S:1"), "dg")), acks_after: vec![good.clone()], ..Facts::default() }, false, WindowChanged),
            (&qw, Facts { latest: Some(d("v1", None, "dg")), acks_after: vec![good.clone()], ..Facts::default() }, false, WindowChanged),
            (&qw, Facts { latest: Some(d("v1", Some("S:0"), "dg")), acks_after: vec![good.clone()], ..Facts::default() }, false, WindowChanged),
            (&qw, Facts { latest: Some(d("v1", Some("S:1"), "dg")), acks_after: vec![good.clone()], ..Facts::default() }, true, ConfirmedDelivery),
            (&q, Facts { latest: Some(d("v1", None, "dg")), acks_after: vec![good.clone()], compacted_after: true, ..Facts::default() }, false, Compacted),
            // Claude Code: another process of the session, which resumed it after the confirmation.
            (&qp2, Facts { latest: Some(d("v1", Some("proc:1"), "dg")), acks_after: vec![good.clone()], ..Facts::default() }, false, WindowChanged),
            (&qp2, Facts { latest: Some(d("v1", Some("proc:1"), "dg")), acks_after: vec![good.clone()], reloaded_after: true, ..Facts::default() }, true, ConfirmedDelivery),
            (&qp2, Facts { latest: Some(d("v1", Some("proc:1"), "dg")), acks_after: vec![good.clone()], reloaded_after: true, compacted_after: true, ..Facts::default() }, false, Compacted),
            (&q, Facts { latest: Some(d("v1", None, "dg")), ..Facts::default() }, false, Unconfirmed),
            (&q, Facts { latest: Some(d("v1", None, "dg")), acks_after: vec![ack("id:c1", "S", "preview", 10, true)], ..Facts::default() }, false, Unconfirmed),
            (&q, Facts { latest: Some(d("v1", None, "dg")), acks_after: vec![ack("id:c1", "S", "dg", 9, true)], ..Facts::default() }, false, Unconfirmed),
            (&q, Facts { latest: Some(d("v1", None, "dg")), acks_after: vec![ack("id:c1", "S", "dg", 10, false)], ..Facts::default() }, false, Unconfirmed),
            (&q, Facts { latest: Some(d("v1", None, "dg")), acks_after: vec![ack("id:c2", "S", "dg", 10, true)], ..Facts::default() }, false, Unconfirmed),
            // An id ref is global: the acknowledging hook may name another session id.
            (&q, Facts { latest: Some(d("v1", None, "dg")), acks_after: vec![ack("id:c1", "T", "dg", 10, true)], ..Facts::default() }, true, ConfirmedDelivery),
            (&q, Facts { latest: Some(d("v1", None, "dg")), acks_after: vec![ack("id:c1", "S", "x", 10, true), good.clone()], ..Facts::default() }, true, ConfirmedDelivery),
            (&q, Facts { latest: Some(d("v1", None, "dg")), acks_after: vec![good.clone()], ..Facts::default() }, true, ConfirmedDelivery),
            // `--result`: only the very result confirmed is stood in for.
            (&qs, Facts { latest: Some(d("v1", None, "dg")), acks_after: vec![good.clone()], ..Facts::default() }, true, ConfirmedDelivery),
            (&qo, Facts { latest: Some(d("v1", None, "dg")), acks_after: vec![good.clone()], ..Facts::default() }, false, ResultChanged),
            (&ql, Facts { latest: Some(d("v1", None, "dg")), acks_after: vec![good.clone()], ..Facts::default() }, false, ResultChanged),
            (&qo, Facts { latest: Some(d("v1", None, "dg")), ..Facts::default() }, false, Unconfirmed),
        ];
        for (i, (q, f, allow, reason)) in rows.into_iter().enumerate() {
            assert_eq!(decide(q, &f), Decision { allow, reason }, "row {i}");
        }
    }

    /// The newest delivery was withdrawn (a rewind past it): an earlier
    /// delivery of the same version backs the stub if every rule allows
    /// it, never across another version's delivery or another window's.
    #[test]
    fn an_earlier_copy_backs_a_stub_when_the_newer_ones_were_withdrawn() {
        use Reason::*;
        let q = Question { scope: "S", key: "K", version: "v1", window: Some("proc:1"), sent: None };
        let earlier = Delivery { call_ref: "id:c1", ..d("v1", Some("proc:1"), "dg") };
        let newer = |version, window, call_ref| Delivery { call_ref, ..d(version, window, "dg") };
        let good = ack("id:c1", "S", "dg", 10, true);
        let f = |withdrawn_newer: Vec<Delivery<'static>>| Facts {
            latest: Some(earlier.clone()),
            acks_after: vec![good.clone()],
            withdrawn_newer,
            ..Facts::default()
        };
        #[rustfmt::skip]
        let rows: Vec<(Facts, bool, Reason)> = vec![
            (f(vec![]), true, ConfirmedDelivery),
            (f(vec![newer("v1", Some("proc:1"), "id:c2")]), true, ConfirmedDelivery),
            (f(vec![newer("v1", Some("proc:1"), "id:c3"), newer("v1", Some("proc:1"), "id:c2")]), true, ConfirmedDelivery),
            // Across another version's delivery, or another window's: no.
            (f(vec![newer("v2", Some("proc:1"), "id:c2")]), false, Withdrawn),
            (f(vec![newer("v1", Some("proc:1"), "id:c3"), newer("v0", Some("proc:1"), "id:c2")]), false, Withdrawn),
            (f(vec![newer("v1", Some("proc:2"), "id:c2")]), false, Withdrawn),
            (f(vec![newer("v1", None, "id:c2")]), false, Withdrawn),
            (f(vec![Delivery { scope: "T", ..newer("v1", Some("proc:1"), "id:c2") }]), false, Withdrawn),
            // The earlier copy itself must pass every rule.
            (Facts { acks_after: vec![], ..f(vec![newer("v1", Some("proc:1"), "id:c2")]) }, false, Unconfirmed),
            (Facts { acks_after: vec![ack("id:c1", "S", "preview", 10, true)], ..f(vec![newer("v1", Some("proc:1"), "id:c2")]) }, false, Unconfirmed),
            (Facts { compacted_after: true, ..f(vec![newer("v1", Some("proc:1"), "id:c2")]) }, false, Compacted),
            (Facts { latest: Some(Delivery { call_ref: "id:c1", ..d("v0", Some("proc:1"), "dg") }), ..f(vec![newer("v1", Some("proc:1"), "id:c2")]) }, false, VersionChanged),
            (Facts { latest: Some(Delivery { call_ref: "id:c1", ..d("v1", Some("proc:2"), "dg") }), ..f(vec![newer("v1", Some("proc:2"), "id:c2")]) }, false, WindowChanged),
        ];
        for (i, (f, allow, reason)) in rows.into_iter().enumerate() {
            assert_eq!(decide(&q, &f), Decision { allow, reason }, "row {i}");
        }
    }

    /// Which of a Claude Code process's deliveries it is asked on when
    /// other processes received the key after it.
    #[test]
    fn a_process_reads_its_own_copy_only_since_its_latest_start() {
        // The delivery's position; the latest start (position, of its conversation); stands.
        type Row = (usize, Option<(usize, bool)>, bool);
        #[rustfmt::skip]
        let rows: [Row; 6] = [
            (10, Some((3, true)),   true),
            // Started (or resumed) after its own delivery: what it loaded decides.
            (10, Some((11, true)),  false),
            (10, Some((10, true)),  false),
            // Its latest start is into another conversation (`/clear`).
            (10, Some((3, false)),  false),
            (10, Some((11, false)), false),
            // No start known (its SessionStart hook lost, or trimmed away).
            (10, None,              false),
        ];
        for (own_at, start, stands) in rows {
            assert_eq!(own_copy_stands(own_at, start), stands, "{own_at} {start:?}");
        }
    }

    #[test]
    fn a_diff_backs_a_stub_only_while_its_base_is_held() {
        use Reason::*;
        let q = Question { scope: "S", key: "K", version: "v2", window: None, sent: None };
        let diff = Delivery { version: "v2", base: Some("v1"), call_ref: "id:c2", digest: "dd", ..d("v2", None, "dd") };
        let diff_ack = ack("id:c2", "S", "dd", 10, true);
        let base = |version, window, base| Delivery { version, window, base, ..d(version, window, "dg") };
        let held = |delivery, acks: Vec<Ack<'static>>, compacted_after| Held {
            delivery,
            acks_after: acks,
            compacted_after,
            reloaded_into_diff: false,
        };
        let good = ack("id:c1", "S", "dg", 10, true);
        let f = |bases: Vec<Held<'static>>| Facts {
            latest: Some(diff.clone()),
            acks_after: vec![diff_ack.clone()],
            bases,
            ..Facts::default()
        };
        let v0_to_v1 = Delivery { call_ref: "id:c0", ..base("v1", None, Some("v0")) };
        #[rustfmt::skip]
        let rows: Vec<(Facts, bool, Reason)> = vec![
            (f(vec![held(base("v1", None, None), vec![good.clone()], false)]), true, ConfirmedDelivery),
            // Forgotten (trimmed), compacted, unconfirmed, another version or window.
            (f(vec![]), false, BaseNotHeld),
            (f(vec![held(base("v1", None, None), vec![good.clone()], true)]), false, BaseNotHeld),
            (f(vec![held(base("v1", None, None), vec![], false)]), false, BaseNotHeld),
            (f(vec![held(base("v1", None, None), vec![ack("id:c1", "S", "preview", 10, true)], false)]), false, BaseNotHeld),
            (f(vec![held(base("v0", None, None), vec![good.clone()], false)]), false, BaseNotHeld),
            (f(vec![held(base("v1", Some("S:0"), None), vec![good.clone()], false)]), false, BaseNotHeld),
            // A chain: each link held, ending in a whole delivery.
            (f(vec![held(v0_to_v1.clone(), vec![ack("id:c0", "S", "dg", 10, true)], false),
                    held(base("v0", None, None), vec![good.clone()], false)]), true, ConfirmedDelivery),
            (f(vec![held(v0_to_v1.clone(), vec![ack("id:c0", "S", "dg", 10, true)], false)]), false, BaseNotHeld),
            (f(vec![held(v0_to_v1, vec![ack("id:c0", "S", "dg", 10, true)], false),
                    held(base("v0", None, None), vec![good.clone()], true)]), false, BaseNotHeld),
            // The diff itself unconfirmed: that reason first.
            (Facts { acks_after: vec![], ..f(vec![held(base("v1", None, None), vec![good.clone()], false)]) }, false, Unconfirmed),
        ];
        for (i, (f, allow, reason)) in rows.into_iter().enumerate() {
            assert_eq!(decide(&q, &f), Decision { allow, reason }, "row {i}");
        }
        // Claude Code: the diff and its base went to process 1; process 2
        // resumed the session after the diff was confirmed, so it loaded
        // both. A base in another window than the diff's is not held.
        let q2 = Question { window: Some("proc:2"), ..q };
        let in1 = Delivery { window: Some("proc:1"), ..diff.clone() };
        let f2 = |bases: Vec<Held<'static>>, reloaded_after| Facts {
            latest: Some(in1.clone()),
            acks_after: vec![diff_ack.clone()],
            bases,
            reloaded_after,
            ..Facts::default()
        };
        let base_in = |w| held(base("v1", Some(w), None), vec![good.clone()], false);
        #[rustfmt::skip]
        let rows: Vec<(Facts, bool, Reason)> = vec![
            (f2(vec![base_in("proc:1")], true), true, ConfirmedDelivery),
            (f2(vec![base_in("proc:2")], true), false, BaseNotHeld),
            (f2(vec![held(base("v1", None, None), vec![good.clone()], false)], true), false, BaseNotHeld),
            (f2(vec![held(base("v1", Some("proc:1"), None), vec![good.clone()], true)], true), false, BaseNotHeld),
            (f2(vec![base_in("proc:1")], false), false, WindowChanged),
            // The base went to process 0, and process 1, which made the
            // diff, resumed the session after it was confirmed: it held it.
            (f2(vec![Held { reloaded_into_diff: true, ..base_in("proc:0") }], true), true, ConfirmedDelivery),
            (f2(vec![Held { reloaded_into_diff: true, compacted_after: true, ..base_in("proc:0") }], true), false, BaseNotHeld),
            (f2(vec![Held { reloaded_into_diff: true, acks_after: vec![], ..base_in("proc:0") }], true), false, BaseNotHeld),
            (f2(vec![base_in("proc:0")], true), false, BaseNotHeld),
        ];
        for (i, (f, allow, reason)) in rows.into_iter().enumerate() {
            assert_eq!(decide(&q2, &f), Decision { allow, reason }, "reloaded row {i}");
        }
        // Too long a chain withholds.
        let link = |i: usize| Held {
            delivery: Delivery { version: VERS[i + 1], base: Some(VERS[i + 2]), ..d("x", None, "dg") },
            acks_after: vec![good.clone()],
            compacted_after: false,
            reloaded_into_diff: false,
        };
        const VERS: [&str; 12] = ["v2", "v1", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j"];
        let mut chain: Vec<Held> = (0..MAX_BASE_CHAIN - 1).map(link).collect();
        chain.push(Held {
            delivery: Delivery { version: VERS[MAX_BASE_CHAIN], base: None, ..d("x", None, "dg") },
            acks_after: vec![good.clone()],
            compacted_after: false,
            reloaded_into_diff: false,
        });
        assert_eq!(decide(&q, &f(chain.clone())).reason, ConfirmedDelivery);
        let mut longer: Vec<Held> = (0..MAX_BASE_CHAIN).map(link).collect();
        longer.push(Held {
            delivery: Delivery { version: VERS[MAX_BASE_CHAIN + 1], base: None, ..d("x", None, "dg") },
            acks_after: vec![good.clone()],
            compacted_after: false,
            reloaded_into_diff: false,
        });
        assert_eq!(decide(&q, &f(longer)).reason, BaseNotHeld);
    }
}
