//! The journal: what every hook process saw, shared by every reader.
//!
//! One record a line, tab-separated, appended under an exclusive lock and
//! read under a shared lock. The lock is taken on `journal.lock`, a file that
//! is never replaced, so a trim (rewrite + rename of `journal`) cannot strand
//! a locker on an old inode.
//!
//! The file stays bounded however long it runs: once it grows past
//! `max(TRIM_MIN_BYTES, 2 × what the last trim kept)` the appender rewrites
//! it, keeping only what can still matter (README: "State"). Every eviction is
//! in the safe direction: a forgotten sighting is only dropped when newer
//! ones still show the same verdict, a forgotten end keeps a conversation
//! "live" (more withholding), and a forgotten compaction raises the
//! compaction floor, so any delivery before it is treated as compacted.
//!
//! Line format (`-` for absent):
//! ```text
//! S t host conv event                               sighting of a top-level conversation
//! U t host conv agent                               subagent started
//! u t host conv agent|-                             subagent stopped (`-`: an older Cursor named none)
//! C t host conv agent|- server|- tool fp callid|- key   gated MCP call
//! K t key                                           a call record was claimed
//! P t host conv                                     compaction (of every delivery of conv, unless
//!                                                   a `p` line right before it names it)
//! p t host conv main|agent:<id>                     what the `P` line after it reached: Claude
//!                                                   Code's main thread, or one subagent ([`Reach`])
//! E t host conv                                     session end
//! L t host pid conv                                 the host process pid now serves conv (/clear)
//! F t                                               compactions up to t may have been forgotten
//! D t host conv scope window|- ref key ver digest len   delivery (the ledger: see state/ledger.rs)
//! A t host scope ref digest len whole|cut           a host hook acknowledged a call's result
//! ```
//!
//! Order is meaningful: the ledger's "after" is "later in the file", and a
//! trim keeps the records it keeps in file order.

use crate::base::host::Host;
use crate::base::paths::{JOURNAL_FILE, JOURNAL_LOCK_FILE};
use crate::fsx::{self, LockKind};
use crate::state::ledger::{Ack, Delivery};
pub use reach::Reach;
use std::collections::{HashMap, HashSet};
use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// More than one live top-level conversation inside this window = concurrent.
pub const WINDOW_MS: u64 = 30_000;
/// A Cursor call record can be claimed by an MCP call this long after it.
pub const CLAIM_WINDOW_MS: u64 = 10_000;
/// Call records are kept this long (a permission prompt can delay the call).
pub const CALL_KEEP_MS: u64 = 10 * 60_000;
/// A sighting, subagent start or call record stamped further ahead than
/// this has not happened yet (the slot's tolerance too).
pub use crate::base::clock::FUTURE_SKEW_MS;
/// Sightings, ends, compactions, subagents and lineage are kept this long.
pub use crate::base::clock::STATE_TTL_MS;
/// An end or a subagent stop stamped further ahead than this is ignored.
/// Ignoring one only keeps a conversation or subagent live (more
/// withholding); applying one stamped by a clock that ran ahead could end
/// a conversation that is live now. So the end side stays strict.
pub const END_SKEW_MS: u64 = 5_000;
/// Trim once the file is larger than this (and twice what the last trim kept).
pub const TRIM_MIN_BYTES: u64 = 16 * 1024;
pub const MAX_CONVERSATIONS: usize = 128;
pub const MAX_CALLS: usize = 256;
pub const MAX_SUBAGENT_RECORDS: usize = 512;
pub const MAX_LINEAGE: usize = 64;
/// Which session a Claude process serves is kept this long (a session
/// outlives the slot's 2 h; a forgotten one only makes the server's env
/// unproven, which withholds more).
pub const LINEAGE_KEEP_MS: u64 = 24 * 60 * 60 * 1000;
/// How long a hook or reader waits for the lock before giving up (fail open).
pub const LOCK_WAIT: Duration = Duration::from_millis(800);
/// The most of the journal anyone reads (a reader: the whole file or
/// nothing; a trim: its last bytes).
pub const MAX_READ_BYTES: u64 = crate::base::paths::JOURNAL_MAX_BYTES;

mod ended;
mod file;
mod reach;
mod record;
#[cfg(test)]
mod tests;
mod trim;
mod view;

pub use ended::CompactedAt;
pub use file::*;
pub use record::*;
pub use trim::*;
pub use view::*;
