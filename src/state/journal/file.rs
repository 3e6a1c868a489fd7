//! The journal files on disk: appends under the exclusive lock, reads
//! under the shared one, trims by atomic rewrite.

use super::*;

/// The journal files of one data dir.
#[derive(Clone, Debug)]
pub struct Journal {
    dir: PathBuf,
}

/// A held lock on `journal.lock`.
pub type LockGuard = fsx::Lock;

/// The exclusive lock a claim holds: on a handle a reader keeps, or opened.
#[derive(Debug)]
pub enum WriteLock<'f> {
    Kept(fsx::LockRef<'f>),
    Opened(LockGuard),
}

impl Journal {
    pub fn new(dir: &Path) -> Journal {
        Journal { dir: dir.to_path_buf() }
    }

    pub fn path(&self) -> PathBuf {
        self.dir.join(JOURNAL_FILE)
    }

    /// Writers: an exclusive lock, creating the lock file if needed.
    fn lock(&self, exclusive: bool) -> io::Result<LockGuard> {
        self.lock_until(exclusive, Instant::now() + LOCK_WAIT)
    }

    /// The lock, waiting for it until `deadline` at most. The lock file must
    /// be a regular file of ours: opened without blocking or following a
    /// symlink (a FIFO there hung every reader that opened it).
    fn lock_until(&self, exclusive: bool, deadline: Instant) -> io::Result<LockGuard> {
        let path = self.dir.join(JOURNAL_LOCK_FILE);
        // Readers need no write access: flock works on a read-only fd.
        let Some(file) = fsx::open_state(&path, exclusive, u64::MAX)? else {
            return Err(io::Error::new(io::ErrorKind::NotFound, format!("{} does not exist", path.display())));
        };
        let kind = if exclusive { LockKind::Exclusive } else { LockKind::Shared };
        fsx::lock(file, kind, deadline).map_err(lock_error)
    }

    /// `journal.lock` opened for shared locks by a reader that keeps it
    /// open between reads, with its (device, inode). `Ok(None)` as for
    /// [`Journal::read_lock_until`]: no lock file and no journal.
    pub fn open_read_lock(&self) -> io::Result<Option<(fs::File, (u64, u64))>> {
        let path = self.dir.join(JOURNAL_LOCK_FILE);
        match fsx::open_state_md(&path, false, u64::MAX)? {
            Some((f, md)) => {
                let id = fsx::handle_id(&f, &md)?;
                Ok(Some((f, id)))
            }
            None if fs::symlink_metadata(self.path()).is_err() => Ok(None),
            None => Err(io::Error::new(io::ErrorKind::NotFound, format!("{} does not exist", path.display()))),
        }
    }

    /// Whether `journal.lock` is still the file `id` a reader holds (one
    /// `lstat`, [`fsx::lstat`]): a lock file deleted and made again is
    /// another file, whose locks the held one would not see.
    pub fn lock_is(&self, id: (u64, u64)) -> bool {
        let path = self.dir.join(JOURNAL_LOCK_FILE);
        fsx::lstat(&path).is_ok_and(|md| {
            fsx::state_problem(&md, u64::MAX).is_none() && fsx::path_id(&path, &md).is_ok_and(|now| now == id)
        })
    }

    /// The shared lock on a lock file the reader holds ([`Journal::open_read_lock`]).
    pub fn read_lock_held<'f>(&self, lock: &'f fs::File, deadline: Instant) -> io::Result<fsx::LockRef<'f>> {
        fsx::lock_ref(lock, LockKind::Shared, deadline).map_err(lock_error)
    }

    /// Read the whole journal under a shared lock. A missing journal is
    /// empty; so is one whose lock file was never created (no hook ran).
    pub fn read(&self) -> io::Result<String> {
        self.read_until(Instant::now() + LOCK_WAIT)
    }

    /// [`Journal::read`], waiting for the lock until `deadline` at most.
    pub fn read_until(&self, deadline: Instant) -> io::Result<String> {
        let Some(_guard) = self.read_lock_until(deadline)? else { return Ok(String::new()) };
        self.read_unlocked()
    }

    /// The exclusive lock writers hold, for a caller that reads and then
    /// appends under it itself (a claim through a long-lived reader).
    pub fn write_lock(&self) -> io::Result<LockGuard> {
        self.lock(true)
    }

    /// [`Journal::write_lock`], waiting until `deadline` at most.
    pub fn write_lock_until(&self, deadline: Instant) -> io::Result<LockGuard> {
        self.lock_until(true, deadline)
    }

    /// The exclusive lock for a claim: on `kept`, a `journal.lock` handle
    /// the caller keeps open with its (device, inode) (a reader's: no open,
    /// nothing created), when that handle still is the file at the path once
    /// locked; otherwise on the path as [`Journal::write_lock_until`] takes it.
    /// `Ok(None)`: no journal (taking the lock by path would create
    /// `journal.lock`, and a lock file without a journal reads as a deleted
    /// journal).
    pub fn claim_lock_until<'f>(
        &self,
        kept: Option<(&'f File, (u64, u64))>,
        deadline: Instant,
    ) -> io::Result<Option<WriteLock<'f>>> {
        if let Some((file, id)) = kept {
            let held = fsx::lock_ref(file, LockKind::Exclusive, deadline).map_err(lock_error)?;
            // Checked once held: a lock file deleted and made again is
            // another file, whose lockers this lock would not exclude.
            if self.lock_is(id) {
                return Ok(Some(WriteLock::Kept(held)));
            }
        }
        if fs::symlink_metadata(self.path()).is_err() {
            return Ok(None);
        }
        self.write_lock_until(deadline).map(|g| Some(WriteLock::Opened(g)))
    }

    /// Append under the exclusive lock the caller holds (`held`).
    pub fn append_held(&self, held: &WriteLock<'_>, records: &[Record<'_>], now: u64) -> io::Result<()> {
        let _ = held;
        if records.is_empty() {
            return Ok(());
        }
        self.append_locked(records, now)
    }

    /// Append through `f`, the journal as the caller holds it open for
    /// appending under the exclusive lock (`held`; a claim reader's handle:
    /// no open, no `fstat`, no reads), when the caller knows it: exactly
    /// `len` bytes, ending with a whole line (no torn tail to mend), and
    /// the `kept` of its trim header (0: none). Trims as
    /// [`Journal::append`] does; the handle is then no longer the journal.
    pub(crate) fn append_known(
        &self,
        held: &WriteLock<'_>,
        f: &File,
        len: u64,
        kept: u64,
        records: &[Record<'_>],
        now: u64,
    ) -> io::Result<()> {
        let _ = held;
        if records.is_empty() {
            return Ok(());
        }
        if self.write_records(f, len, Some(kept), records)? {
            self.trim_locked(now)?;
        }
        Ok(())
    }

    /// The shared lock readers hold while they read. `None` when there is
    /// no lock file and no journal (no hook ran: nothing to read).
    pub fn read_lock(&self) -> io::Result<Option<LockGuard>> {
        self.read_lock_until(Instant::now() + LOCK_WAIT)
    }

    /// [`Journal::read_lock`], waiting until `deadline` at most. A journal
    /// path that is anything at all (a dangling symlink too) without a lock
    /// file is an error, not "no hook ran".
    pub fn read_lock_until(&self, deadline: Instant) -> io::Result<Option<LockGuard>> {
        match self.lock_until(false, deadline) {
            Ok(g) => Ok(Some(g)),
            Err(e) if e.kind() == io::ErrorKind::NotFound && fs::symlink_metadata(self.path()).is_err() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The journal as a reader may use it, under a lock the caller holds:
    /// a regular file of ours, not empty, at most [`MAX_READ_BYTES`]. The
    /// lock file exists (the caller holds it), so hooks have run: a journal
    /// that is missing or empty was deleted or emptied, and what it said
    /// (two live chats, a compaction) is lost; that is an error, never "no
    /// records".
    fn read_unlocked(&self) -> io::Result<String> {
        let path = self.path();
        let Some(bytes) = fsx::read_state(&path, MAX_READ_BYTES)? else { return Err(missing(&path)) };
        if bytes.is_empty() {
            return Err(fsx::untrusted(&path, "is empty while journal.lock exists (emptied?)"));
        }
        Ok(String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
    }

    /// What a trim reads: the whole journal, or when it is larger than a
    /// reader reads, only its last [`MAX_READ_BYTES`] from the first whole
    /// line on (`true`: the head was cut). Missing: empty.
    fn read_for_trim(&self) -> io::Result<(String, bool)> {
        let path = self.path();
        let Some(f) = fsx::open_state(&path, false, u64::MAX)? else { return Ok((String::new(), false)) };
        let len = f.metadata()?.len();
        let start = len.saturating_sub(MAX_READ_BYTES);
        let mut bytes = Vec::with_capacity((len - start) as usize);
        let mut r: &File = &f;
        r.seek(SeekFrom::Start(start))?;
        r.take(MAX_READ_BYTES).read_to_end(&mut bytes)?;
        if start > 0 {
            let first = bytes.iter().position(|&b| b == b'\n').map_or(bytes.len(), |i| i + 1);
            bytes.drain(..first);
        }
        let text = String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        Ok((text, start > 0))
    }

    /// The error for a journal that is missing while its lock file exists.
    pub fn missing_error(&self) -> io::Error {
        missing(&self.path())
    }

    /// Append records under the exclusive lock (one write), trimming when
    /// the file has grown past its bound.
    pub fn append(&self, records: &[Record<'_>], now: u64) -> io::Result<()> {
        if records.is_empty() {
            return Ok(());
        }
        let _guard = self.lock(true)?;
        self.append_locked(records, now)
    }

    fn append_locked(&self, records: &[Record<'_>], now: u64) -> io::Result<()> {
        // Never through a symlink, never into a FIFO, never into a file of
        // someone else's: such a journal is refused (readers withhold on it
        // too), and the hook says why.
        let (f, md) = fsx::open_state_md(&self.path(), true, u64::MAX)?.ok_or_else(|| self.missing_error())?;
        let trim = self.write_records(&f, md.len(), None, records)?;
        drop(f);
        if trim {
            self.trim_locked(now)?;
        }
        Ok(())
    }

    /// Write `records` at the end of `f` (the journal, `before` bytes long,
    /// opened for appending under the exclusive lock) in one write. `known`:
    /// the caller knows the file ends with a whole line and its trim
    /// header's `kept`; `None`: both are read from the file. Returns whether
    /// the file has grown past its bound (the caller trims).
    fn write_records(&self, f: &File, before: u64, known: Option<u64>, records: &[Record<'_>]) -> io::Result<bool> {
        // A compaction is stamped no earlier than the newest record already
        // written: if the clock went back since a delivery (or was ahead
        // during it), the compaction must still order after the delivering
        // call's own records (its PostToolUse follows the delivery), or a
        // stub from before the compaction would pass. Erring late only
        // withholds more. Rare event, so the tail read costs nothing typical.
        let floor = if records.iter().any(|r| matches!(r, Record::Compaction { .. })) {
            newest_in_tail(f, before).unwrap_or(0)
        } else {
            0
        };
        let mut buf = String::with_capacity(128 * records.len());
        for r in records {
            match *r {
                Record::Compaction { t, host, conv, reach } if t < floor => {
                    Record::Compaction { t: floor, host, conv, reach }.write_line(&mut buf)
                }
                _ => r.write_line(&mut buf),
            }
        }
        // A tail without its newline (a write cut short by a full disk)
        // must not swallow our first record.
        if before > 0 && known.is_none() {
            let mut last = [0u8; 1];
            if fsx::read_at(f, &mut last, before - 1)? == 1 && last[0] != b'\n' {
                buf.insert(0, '\n');
            }
        }
        let mut w: &File = f;
        if let Err(e) = w.write_all(buf.as_bytes()) {
            // Leave nothing half-written: cut back to where we started.
            let _ = f.set_len(before);
            return Err(e);
        }
        let len = before + buf.len() as u64;
        if len <= TRIM_MIN_BYTES {
            return Ok(false);
        }
        let kept = match known {
            Some(k) => k,
            None => read_kept_header(f).unwrap_or(0),
        };
        Ok(len > MAX_READ_BYTES || len > TRIM_MIN_BYTES.max(kept.saturating_mul(2)))
    }

    /// Rewrite the journal keeping what can still matter. Caller holds the
    /// exclusive lock.
    fn trim_locked(&self, now: u64) -> io::Result<()> {
        // Bounded: a journal grown past what a reader reads (a bug, or a
        // file planted there) is trimmed from its last bytes. What the head
        // held is forgotten in the safe direction: a floor at `now` makes
        // every earlier delivery count as compacted.
        let (text, cut) = self.read_for_trim()?;
        let mut kept = trim(&parse(&text), now);
        if cut {
            kept.push(Record::Floor { t: now });
        }
        let mut body = String::with_capacity(kept.len() * 100);
        for r in &kept {
            r.write_line(&mut body);
        }
        let header = format!("#leanctx-journal v1 kept={:010}\n", body.len() + 40);
        let mut out = header;
        out.push_str(&body);
        fsx::write_atomic(&self.path(), out.as_bytes())?;
        clean_stray_temps(&self.dir, now);
        // Cursor task slots are written through temps in scopes/ as well.
        clean_stray_temps(&self.dir.join(crate::base::paths::SCOPES_DIR), now);
        Ok(())
    }

    /// Force a trim now (tests, `status --trim`).
    pub fn trim_now(&self, now: u64) -> io::Result<()> {
        let _guard = self.lock(true)?;
        self.trim_locked(now)
    }

    /// Size of the journal file in bytes (0 if absent).
    pub fn size(&self) -> u64 {
        fs::metadata(self.path()).map(|m| m.len()).unwrap_or(0)
    }
}

fn missing(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{} is missing while journal.lock exists (deleted?)", path.display()),
    )
}

/// The newest time among the complete records in the last 8 KiB of `f`.
fn newest_in_tail(f: &File, len: u64) -> Option<u64> {
    let start = len.saturating_sub(8192);
    let mut buf = vec![0u8; (len - start) as usize];
    let n = fsx::read_at(f, &mut buf, start).ok()?;
    buf.truncate(n);
    let text = String::from_utf8_lossy(&buf);
    // Past the first newline unless we read from the start: the first
    // line may be cut.
    let body = if start == 0 { &text[..] } else { text.split_once('\n').map(|(_, b)| b).unwrap_or("") };
    parse(body).iter().map(Record::t).max()
}

fn read_kept_header(f: &File) -> Option<u64> {
    let mut head = [0u8; 48];
    let n = fsx::read_at(f, &mut head, 0).ok()?;
    kept_of(&head[..n])
}

/// The `kept` of a trim header at the start of `head` (the journal's first
/// bytes), if it has one.
pub fn kept_of(head: &[u8]) -> Option<u64> {
    let rest = head.strip_prefix(b"#leanctx-journal v1 kept=")?;
    std::str::from_utf8(rest.get(..10)?).ok()?.parse().ok()
}

/// Remove temp files (`.tmp-*`) that a killed writer left behind, once they
/// are older than a minute (a live writer renames its temp within ms).
///
/// Ages are measured against the earlier of `now_ms` and the system clock:
/// a file's mtime comes from the system clock, so an injected or jumped
/// `now` far ahead of it must not make another writer's in-flight temp look
/// a minute old (deleting it made that writer's rename fail with ENOENT and
/// its record was lost; found by tests/it/sim.rs, which runs hooks in
/// virtual time).
pub fn clean_stray_temps(dir: &Path, now_ms: u64) {
    let now_ms = now_ms.min(crate::base::clock::now_ms());
    let Ok(entries) = fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let name = e.file_name();
        if !name.to_string_lossy().starts_with(fsx::TEMP_PREFIX) {
            continue;
        }
        let old = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|m| m.duration_since(std::time::UNIX_EPOCH).ok())
            .is_some_and(|m| now_ms.saturating_sub(m.as_millis() as u64) > 60_000);
        if old {
            let _ = fs::remove_file(e.path());
        }
    }
}

/// Read a file's head (used by tests to inspect the header), as state.
pub fn read_head(path: &Path, n: usize) -> io::Result<String> {
    let Some((f, _)) = fsx::open_state_md(path, false, u64::MAX)? else { return Err(missing(path)) };
    let mut buf = Vec::with_capacity(n);
    f.take(n as u64).read_to_end(&mut buf)?;
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

fn lock_error(e: fsx::LockError) -> io::Error {
    match e {
        fsx::LockError::Busy { waited } => io::Error::new(
            io::ErrorKind::TimedOut,
            format!("journal lock busy for more than {} ms", waited.as_millis()),
        ),
        fsx::LockError::Io(e) => e,
    }
}
