//! The lean-ctx compatibility functions: the free functions lean-ctx
//! calls (`current_conversation_id`, `conversation_allows_stub`, …), over
//! a process-wide [`ReadPath`] with a short cache.

use super::*;

struct Cached {
    at: Instant,
    value: Option<String>,
}

static CACHE: Mutex<Option<Cached>> = Mutex::new(None);
/// Last known good answer and when it was learnt (unix ms), kept across a
/// transient read failure.
static LAST_GOOD: Mutex<Option<(String, u64)>> = Mutex::new(None);

/// The caller's scope from the environment and the slot (no call context),
/// re-read now. `None` when nothing names the caller or scoping is disabled.
pub fn current_conversation_id_fresh() -> Option<String> {
    let rp = ReadPath::from_process();
    let now = rp.now();
    let res = rp.resolve(None, now);
    let value = res.caller.scope.clone();
    let mut lkg = LAST_GOOD.lock().unwrap_or_else(|e| e.into_inner());
    match &value {
        Some(v) => *lkg = Some((v.clone(), now)),
        None if res.caller.source == Source::None && slot_read_failed(&rp, now) => {
            // A transient failure (unreadable slot) keeps the last good id,
            // within the slot TTL.
            if let Some((v, at)) = lkg.as_ref()
                && now.saturating_sub(*at) <= slot::SLOT_TTL_MS
            {
                return Some(v.clone());
            }
        }
        None => {}
    }
    value
}

fn slot_read_failed(rp: &ReadPath, now: u64) -> bool {
    match rp.usable_dir() {
        Some(d) => matches!(slot::read_slot(d, now), Err(_) | Ok(SlotRead::Invalid)),
        None => true,
    }
}

/// [`current_conversation_id_fresh`] behind a ~3 s in-process cache.
pub fn current_conversation_id() -> Option<String> {
    let mut c = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(cached) = c.as_ref()
        && cached.at.elapsed() < CACHE_TTL
    {
        return cached.value.clone();
    }
    let value = current_conversation_id_fresh();
    *c = Some(Cached { at: Instant::now(), value: value.clone() });
    value
}

/// Drop the in-process cache (tests; a server that knows the slot changed).
pub fn invalidate_cache() {
    *CACHE.lock().unwrap_or_else(|e| e.into_inner()) = None;
}

/// More than one live top-level conversation in the 30 s window, computed
/// from the journal (so it sees every process's hooks).
pub fn multiple_conversations_recent() -> bool {
    ReadPath::from_process().concurrent()
}

/// lean-ctx's warm-stub question: may a stub delivered to `delivered` be
/// served to `current`? No delivery time, so any recorded compaction of the
/// conversation withholds (a delivery before it cannot be told from one
/// after) — use [`ReadPath::decide`] with `delivered_at_ms` for the exact
/// check.
pub fn conversation_allows_stub(current: Option<&str>, delivered: Option<&str>) -> bool {
    ReadPath::from_process().decide_given(current, delivered, false).allow
}

/// lean-ctx's cold-stub question (entry from a persisted index).
pub fn conversation_allows_cold_stub(current: Option<&str>, delivered: Option<&str>) -> bool {
    ReadPath::from_process().decide_given(current, delivered, true).allow
}

/// The rich decision: caller resolved from the process (and `call`, if
/// given), delivery time checked against compactions, with a reason code.
pub fn stub_decision(
    delivered: Option<&str>,
    delivered_at_ms: Option<u64>,
    cold: bool,
    call: Option<&McpCall>,
) -> StubAnswer {
    ReadPath::from_process().decide(&StubQuery { delivered, delivered_at_ms, cold, call })
}
