//! The delivery ledger's stub rule, pure: may the caller named per call
//! be served a stub for a key at a version? The records and what they
//! mean: [`crate::state::ledger`].

use crate::identity::decision::{Decision, Reason};
use crate::state::ledger::{Ack, Confirmation, Content, Delivery, confirmation};

/// The stub question, after the caller was resolved per call.
#[derive(Clone, Debug)]
pub struct Question<'a> {
    pub scope: &'a str,
    /// Key and version as [`Secret::name`](crate::state::secret::Secret::name) keys them.
    pub key: &'a str,
    pub version: &'a str,
    pub window: Option<&'a str>,
    /// The result the server would send now (`--result`), when given: a
    /// stub stands in for it only if it is the very content confirmed.
    pub sent: Option<&'a Content>,
}

/// What the journal says about the newest delivery of the key to the scope.
#[derive(Clone, Debug, Default)]
pub struct Facts<'a> {
    pub unavailable: bool,
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
}

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
    Decision { allow: true, reason: Reason::ConfirmedDelivery }
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
}
