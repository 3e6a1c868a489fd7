//! The questions a decision asks of the journal, answered alike by a
//! whole-file [`View`] and by a long-lived reader's [`Digest`].

use super::*;

/// The questions a decision asks of the journal: of a whole-file [`View`],
/// or of a long-lived reader's [`Digest`] (same answers: see `src/state/digest/`).
pub(crate) trait Ask {
    fn concurrent(&self, now: u64) -> bool;
    fn last_compaction(&self, conv: &str) -> Option<u64>;
    fn compaction_floor(&self) -> u64;
    /// The latest compaction of any conversation.
    fn latest_compaction_any(&self) -> Option<u64>;
    fn subagent_active(&self, conv: &str, now: u64) -> bool;
    /// A subagent of any conversation is running.
    fn any_subagent_active(&self, now: u64) -> bool;
    /// More than one conversation is in the state (live or not).
    fn several_conversations(&self) -> bool;
    /// A live top-level conversation other than `conv`.
    fn live_other_than(&self, conv: &str, now: u64) -> bool;
    /// [`View::subagent_unwitnessed`].
    fn subagent_unwitnessed(&self, conv: &str, host: Host, now: u64) -> bool;
    fn lineage_for(&self, host: Host, pid: u32, now: u64) -> Option<(u64, &str)>;
    fn call_by_id(&self, call_id: &str) -> Option<Call<'_>>;
    /// The ledger: the newest delivery of `key` to `scope`, with its position.
    fn latest_delivery(&self, scope: &str, key: &str) -> Option<(usize, Delivery<'_>)>;
    /// [`View::newest_in_window`].
    fn newest_in_window(&self, scope: &str, key: &str, window: &str) -> Option<(usize, Delivery<'_>)>;
    /// [`View::latest_start`].
    fn latest_start(&self, host: Host, pid: u32) -> Option<(usize, &str)>;
    /// The newest delivery of `version` of `key` to `scope` before position
    /// `before` (a diff's base; `None`: of any version, the one before).
    fn delivery_before(
        &self,
        scope: &str,
        key: &str,
        version: Option<&str>,
        before: usize,
    ) -> Option<(usize, Delivery<'_>)>;
    /// A compaction of `conv` that reached `scope` after position `after`,
    /// asked by `own`, the host process that received the delivery (none:
    /// another, or not known; [`crate::state::journal::Reach::ends_for`]).
    fn compacted_after(&self, conv: &str, scope: &str, own: Option<u32>, after: usize) -> bool;
    /// Acknowledgements of `call_ref` after position `after`, each with its
    /// position.
    fn acks_after_at(&self, call_ref: &str, after: usize) -> Vec<(usize, Ack<'_>)>;
    /// The host process `pid` started (or resumed) `conv` after position `after`.
    fn started_after(&self, host: Host, pid: u32, conv: &str, after: usize) -> bool;
    /// The host process `pid` started or resumed `conv` (a lineage record,
    /// anywhere in the journal): it is one of its host's processes.
    fn is_process_of(&self, host: Host, pid: u32, conv: &str) -> bool;
    /// The reader behind these answers, if any (to seed a claim reader).
    fn reader(&self) -> Option<&Reader> {
        None
    }
}

impl Ask for Reader {
    fn concurrent(&self, now: u64) -> bool {
        self.digest().concurrent(now)
    }
    fn last_compaction(&self, conv: &str) -> Option<u64> {
        self.digest().last_compaction(conv)
    }
    fn compaction_floor(&self) -> u64 {
        self.digest().compaction_floor()
    }
    fn latest_compaction_any(&self) -> Option<u64> {
        self.digest().latest_compaction_any()
    }
    fn subagent_active(&self, conv: &str, now: u64) -> bool {
        !self.digest().active_subagents(conv, now).is_empty()
    }
    fn any_subagent_active(&self, now: u64) -> bool {
        self.digest().any_subagent_active(now)
    }
    fn several_conversations(&self) -> bool {
        self.digest().several_conversations()
    }
    fn live_other_than(&self, conv: &str, now: u64) -> bool {
        self.digest().live_other_than(conv, now)
    }
    fn subagent_unwitnessed(&self, conv: &str, host: Host, now: u64) -> bool {
        self.digest().subagent_unwitnessed(conv, host, now)
    }
    fn lineage_for(&self, host: Host, pid: u32, now: u64) -> Option<(u64, &str)> {
        self.digest().lineage_for(host, pid, now)
    }
    fn call_by_id(&self, call_id: &str) -> Option<Call<'_>> {
        self.digest().call_by_id(call_id)
    }
    fn latest_delivery(&self, scope: &str, key: &str) -> Option<(usize, Delivery<'_>)> {
        self.digest().latest_delivery(scope, key)
    }
    fn newest_in_window(&self, scope: &str, key: &str, window: &str) -> Option<(usize, Delivery<'_>)> {
        self.digest().newest_in_window(scope, key, window)
    }
    fn latest_start(&self, host: Host, pid: u32) -> Option<(usize, &str)> {
        self.digest().latest_start(host, pid)
    }
    fn delivery_before(
        &self,
        scope: &str,
        key: &str,
        version: Option<&str>,
        before: usize,
    ) -> Option<(usize, Delivery<'_>)> {
        self.digest().delivery_before(scope, key, version, before)
    }
    fn compacted_after(&self, conv: &str, scope: &str, own: Option<u32>, after: usize) -> bool {
        self.digest().compacted_after(conv, scope, own, after)
    }
    fn acks_after_at(&self, call_ref: &str, after: usize) -> Vec<(usize, Ack<'_>)> {
        self.digest().acks_after_at(call_ref, after)
    }
    fn started_after(&self, host: Host, pid: u32, conv: &str, after: usize) -> bool {
        self.digest().started_after(host, pid, conv, after)
    }
    fn is_process_of(&self, host: Host, pid: u32, conv: &str) -> bool {
        self.digest().is_process_of(host, pid, conv)
    }
    fn reader(&self) -> Option<&Reader> {
        Some(self)
    }
}

impl Ask for View<'_> {
    fn concurrent(&self, now: u64) -> bool {
        View::concurrent(self, now)
    }
    fn last_compaction(&self, conv: &str) -> Option<u64> {
        View::last_compaction(self, conv)
    }
    fn compaction_floor(&self) -> u64 {
        View::compaction_floor(self)
    }
    fn latest_compaction_any(&self) -> Option<u64> {
        View::latest_compaction_any(self)
    }
    fn subagent_active(&self, conv: &str, now: u64) -> bool {
        !View::active_subagents(self, conv, now).is_empty()
    }
    fn any_subagent_active(&self, now: u64) -> bool {
        View::any_subagent_active(self, now)
    }
    fn several_conversations(&self) -> bool {
        View::several_conversations(self)
    }
    fn live_other_than(&self, conv: &str, now: u64) -> bool {
        View::live_other_than(self, conv, now)
    }
    fn subagent_unwitnessed(&self, conv: &str, host: Host, now: u64) -> bool {
        View::subagent_unwitnessed(self, conv, host, now)
    }
    fn lineage_for(&self, host: Host, pid: u32, now: u64) -> Option<(u64, &str)> {
        View::lineage_for(self, host, pid, now)
    }
    fn call_by_id(&self, call_id: &str) -> Option<Call<'_>> {
        View::call_by_id(self, call_id).cloned()
    }
    fn latest_delivery(&self, scope: &str, key: &str) -> Option<(usize, Delivery<'_>)> {
        View::latest_delivery(self, scope, key).map(|(i, d)| (i, d.clone()))
    }
    fn newest_in_window(&self, scope: &str, key: &str, window: &str) -> Option<(usize, Delivery<'_>)> {
        View::newest_in_window(self, scope, key, window).map(|(i, d)| (i, d.clone()))
    }
    fn latest_start(&self, host: Host, pid: u32) -> Option<(usize, &str)> {
        View::latest_start(self, host, pid)
    }
    fn delivery_before(
        &self,
        scope: &str,
        key: &str,
        version: Option<&str>,
        before: usize,
    ) -> Option<(usize, Delivery<'_>)> {
        View::delivery_before(self, scope, key, version, before).map(|(i, d)| (i, d.clone()))
    }
    fn compacted_after(&self, conv: &str, scope: &str, own: Option<u32>, after: usize) -> bool {
        View::compacted_after(self, conv, scope, own, after)
    }
    fn acks_after_at(&self, call_ref: &str, after: usize) -> Vec<(usize, Ack<'_>)> {
        View::acks_after_at(self, call_ref, after)
    }
    fn started_after(&self, host: Host, pid: u32, conv: &str, after: usize) -> bool {
        View::started_after(self, host, pid, conv, after)
    }
    fn is_process_of(&self, host: Host, pid: u32, conv: &str) -> bool {
        View::is_process_of(self, host, pid, conv)
    }
}

impl Ask for Digest {
    fn concurrent(&self, now: u64) -> bool {
        Digest::concurrent(self, now)
    }
    fn last_compaction(&self, conv: &str) -> Option<u64> {
        Digest::last_compaction(self, conv)
    }
    fn compaction_floor(&self) -> u64 {
        Digest::compaction_floor(self)
    }
    fn latest_compaction_any(&self) -> Option<u64> {
        Digest::latest_compaction_any(self)
    }
    fn subagent_active(&self, conv: &str, now: u64) -> bool {
        !Digest::active_subagents(self, conv, now).is_empty()
    }
    fn any_subagent_active(&self, now: u64) -> bool {
        Digest::any_subagent_active(self, now)
    }
    fn several_conversations(&self) -> bool {
        Digest::several_conversations(self)
    }
    fn live_other_than(&self, conv: &str, now: u64) -> bool {
        Digest::live_other_than(self, conv, now)
    }
    fn subagent_unwitnessed(&self, conv: &str, host: Host, now: u64) -> bool {
        Digest::subagent_unwitnessed(self, conv, host, now)
    }
    fn lineage_for(&self, host: Host, pid: u32, now: u64) -> Option<(u64, &str)> {
        Digest::lineage_for(self, host, pid, now)
    }
    fn call_by_id(&self, call_id: &str) -> Option<Call<'_>> {
        Digest::call_by_id(self, call_id)
    }
    fn latest_delivery(&self, scope: &str, key: &str) -> Option<(usize, Delivery<'_>)> {
        Digest::latest_delivery(self, scope, key)
    }
    fn newest_in_window(&self, scope: &str, key: &str, window: &str) -> Option<(usize, Delivery<'_>)> {
        Digest::newest_in_window(self, scope, key, window)
    }
    fn latest_start(&self, host: Host, pid: u32) -> Option<(usize, &str)> {
        Digest::latest_start(self, host, pid)
    }
    fn delivery_before(
        &self,
        scope: &str,
        key: &str,
        version: Option<&str>,
        before: usize,
    ) -> Option<(usize, Delivery<'_>)> {
        Digest::delivery_before(self, scope, key, version, before)
    }
    fn compacted_after(&self, conv: &str, scope: &str, own: Option<u32>, after: usize) -> bool {
        Digest::compacted_after(self, conv, scope, own, after)
    }
    fn acks_after_at(&self, call_ref: &str, after: usize) -> Vec<(usize, Ack<'_>)> {
        Digest::acks_after_at(self, call_ref, after)
    }
    fn started_after(&self, host: Host, pid: u32, conv: &str, after: usize) -> bool {
        Digest::started_after(self, host, pid, conv, after)
    }
    fn is_process_of(&self, host: Host, pid: u32, conv: &str) -> bool {
        Digest::is_process_of(self, host, pid, conv)
    }
}
