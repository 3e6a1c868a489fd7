//! The process-wide journal readers a long-lived server keeps, and claims
//! through them.

use super::*;
use std::sync::MutexGuard;

/// This process's journal readers, one per data dir.
pub(super) static READERS: Mutex<Vec<(PathBuf, Reader)>> = Mutex::new(Vec::new());
/// The readers claims go through (under the exclusive lock; taken while a
/// decision holds [`READERS`], never the other way round).
static CLAIM_READERS: Mutex<Vec<(PathBuf, Reader)>> = Mutex::new(Vec::new());
const MAX_READERS: usize = 8;

/// Lock a list of readers. A poisoned lock means a panic while a reader was
/// held (a server that caught it and serves on: `serve::guard`), maybe half
/// way through a refresh: its text grown but its offset not, so it would
/// fold those lines twice, or miss some for good. Start over: one whole
/// read, never an answer from a half-read journal.
pub(super) fn lock_readers(m: &'static Mutex<Vec<(PathBuf, Reader)>>) -> MutexGuard<'static, Vec<(PathBuf, Reader)>> {
    m.lock().unwrap_or_else(|poisoned| {
        let mut readers = poisoned.into_inner();
        readers.clear();
        m.clear_poison();
        readers
    })
}

/// The reader for `dir` (a server reads one data dir; tests and tools may
/// use a few: the oldest is dropped past [`MAX_READERS`]).
pub(super) fn reader_for<'r>(
    readers: &'r mut Vec<(PathBuf, Reader)>,
    dir: &Path,
    new: fn() -> Reader,
) -> &'r mut Reader {
    let i = match readers.iter().position(|(p, _)| p == dir) {
        Some(i) => i,
        None => {
            if readers.len() >= MAX_READERS {
                readers.remove(0);
            }
            readers.push((dir.to_path_buf(), new()));
            readers.len() - 1
        }
    };
    &mut readers[i].1
}

/// A Cursor fingerprint claim: under the exclusive lock, bring this
/// process's claim reader up to date, choose on the calls and claims that
/// bear on this call (the same choice as on the whole file: see
/// `Digest::claim_view`), and append the claim. This replaced a claim that
/// read and parsed the whole journal per claim: 80-140 µs, growing with
/// the journal (benches/hooks).
///
/// The lock is taken on the `journal.lock` the decision's reader keeps open
/// (`seed`), and the claim is appended through the claim reader's own
/// handle: a claim opens no file (each open, `fstat` and close cost a few
/// µs, most of what a claim costs besides its reads; benches/hooks).
pub(super) fn claim(
    dir: &Path,
    call: &McpCall,
    fp: &str,
    claimant: Option<&str>,
    now: u64,
    seed: Option<&Reader>,
    deadline: Instant,
) -> std::io::Result<Result<Caller, PerCall>> {
    let journal = Journal::new(dir);
    // No journal: no call record to claim.
    let Some(held) = journal.claim_lock_until(seed.and_then(Reader::kept_lock), deadline)? else {
        return Ok(Err(PerCall::NoMatch));
    };
    let mut readers = lock_readers(&CLAIM_READERS);
    let reader = reader_for(&mut readers, dir, Reader::for_claims);
    // A first claim starts from what the decision's reader already read
    // (a CLI call would otherwise read the whole journal twice).
    if reader.is_new()
        && let Some(seeded) = seed.and_then(|s| s.for_claims_from(&journal))
    {
        *reader = seeded;
    }
    reader.refresh_held(&journal)?;
    reader.index_claims();
    let view = reader.digest().claim_view(&call.name, fp, claimant, now);
    // The key is copied out of the reader's text, which the append may change.
    let (result, key) = match mcp_call::choose_claim(&view, call, fp, claimant, now) {
        Ok((caller, key)) => (Ok(caller), key.map(str::to_owned)),
        Err(p) => (Err(p), None),
    };
    if let Some(key) = key.as_deref() {
        let claim = [crate::state::journal::Record::Claim { t: now, key, claimant }];
        reader.append_held(&journal, &held, &claim, now)?;
    }
    Ok(result)
}
