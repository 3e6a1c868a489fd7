//! The long-lived reader: the journal kept open, digested incrementally.

use super::Digest;
use crate::fsx;
use crate::state::journal::{self, Journal};
use std::fs::File;
use std::io::{self, Seek, SeekFrom};
use std::sync::Arc;

/// A claim reader holds the journal open for appending, where files are
/// held open between refreshes ([`fsx::HOLD_OPEN`]), so a claim appends
/// through it.
const CLAIMS_WRITE: bool = fsx::HOLD_OPEN;

/// A journal kept open and digested incrementally.
#[derive(Debug, Default)]
pub struct Reader {
    /// The file read so far (open between refreshes where
    /// [`fsx::HOLD_OPEN`]; Windows closes it, see there).
    file: Option<File>,
    /// Its device and inode (volume and index on Windows).
    id: Option<(u64, u64)>,
    /// Bytes digested: up to the end of the last complete line.
    offset: u64,
    /// The file's length at the last refresh.
    len: u64,
    /// The question ([`crate::identity::readpath`]'s numbering) whose
    /// refresh last read the journal under the lock.
    locked_in: Option<u64>,
    /// `journal.lock`, kept open between refreshes where files are
    /// ([`fsx::HOLD_OPEN`]), with its (device, inode): one `lstat` a
    /// refresh instead of an open, `fstat` and close.
    lock: Option<(File, (u64, u64))>,
    pub(super) digest: Digest,
}

impl Reader {
    pub fn digest(&self) -> &Digest {
        &self.digest
    }

    /// [`Digest::index_claims`].
    pub fn index_claims(&mut self) {
        self.digest.index_claims();
    }

    /// A reader for claims: it only locates call and claim lines.
    pub fn for_claims() -> Reader {
        Reader { digest: Digest { claims_only: true, ..Digest::default() }, ..Reader::default() }
    }

    /// The file read (its device and inode) and the bytes digested: the
    /// same position is the same digest (the journal is only appended to
    /// in place; a trim writes a new file).
    pub fn position(&self) -> Option<((u64, u64), u64)> {
        Some((self.id?, self.offset))
    }

    /// Nothing read yet.
    pub fn is_new(&self) -> bool {
        self.id.is_none()
    }

    /// The `journal.lock` this reader keeps open, with its (device, inode):
    /// a claim takes its exclusive lock there instead of opening the file
    /// again ([`Journal::claim_lock_until`]).
    pub fn kept_lock(&self) -> Option<(&File, (u64, u64))> {
        self.lock.as_ref().map(|(f, id)| (f, *id))
    }

    /// Append `records` under the exclusive lock the caller holds and this
    /// claim reader was refreshed under ([`Reader::refresh_held`]). When it
    /// holds the journal open for appending and has read it to the end of
    /// its last line, it knows all an append needs (the length, that no torn
    /// tail is left, the trim header, which it read at the start of its
    /// text): one `write`. Otherwise the journal is opened and looked at as
    /// [`Journal::append_held`] does.
    pub fn append_held(
        &mut self,
        journal: &Journal,
        held: &journal::WriteLock<'_>,
        records: &[journal::Record<'_>],
        now: u64,
    ) -> io::Result<()> {
        match self.file.as_ref() {
            Some(f) if CLAIMS_WRITE && self.digest.claims_only && self.offset == self.len && self.len > 0 => {
                let kept = journal::kept_of(self.digest.text.as_bytes()).unwrap_or(0);
                // The line is read back at the next refresh like any other
                // (after a trim, the new file from its start).
                let r = journal.append_known(held, f, self.len, kept, records, now);
                if r.is_err() {
                    self.reset();
                }
                r
            }
            _ => journal.append_held(held, records, now),
        }
    }

    /// A claim reader that starts where this one is (same call and claim
    /// lines, same offset) on its own handle of the same file, or `None`
    /// when the journal is no longer the file this one read. Call under a
    /// journal lock, so the file cannot be replaced meanwhile.
    pub fn for_claims_from(&self, journal: &Journal) -> Option<Reader> {
        let id = self.id?;
        let (f, md) = fsx::open_state_md(journal.path().as_path(), CLAIMS_WRITE, u64::MAX).ok()??;
        if fsx::handle_id(&f, &md).ok()? != id {
            return None;
        }
        let d = &self.digest;
        let digest = Digest {
            claims_only: true,
            text: Arc::clone(&d.text),
            calls: d.calls.clone(),
            claims: d.claims.clone(),
            claim_index: d.claim_index.clone(),
            ..Digest::default()
        };
        Some(Reader {
            file: Some(f),
            id: Some(id),
            offset: self.offset,
            len: self.len,
            locked_in: None,
            digest,
            lock: None,
        })
    }

    fn reset(&mut self) {
        let claims_only = self.digest.claims_only;
        *self = Reader::default();
        self.digest.claims_only = claims_only;
    }

    /// Bring the digest up to date under the shared lock. Errors as
    /// [`Journal::read`]: a missing journal (or lock file with no journal)
    /// is empty; a journal that cannot be read is an error.
    pub fn refresh(&mut self, journal: &Journal) -> io::Result<()> {
        self.refresh_until(journal, std::time::Instant::now() + journal::LOCK_WAIT)
    }

    /// [`Reader::refresh_until`] for one question of the read path
    /// (`question`: its number, unique in the process). The first refresh
    /// of a question takes the shared lock as ever; a later one in the same
    /// question (a decision reads the journal again after the slot, a stub
    /// after the witness) skips the lock and the `lstat` of `journal.lock`
    /// when the locked refresh would read nothing: the journal's path names
    /// the file held open, at the length read to (the end of its last
    /// line). One `lstat` instead of four system calls (benches/README.md,
    /// "Tenth pass, in process"). Those are the locked refresh's own checks
    /// (a trim replaces the file: another inode; a writer only grows it), so
    /// the digest is what it would have made. What the lock guards besides
    /// is left to the question's first read: a writer stuck holding it (the
    /// question withholds), a `journal.lock` deleted (state that cannot be
    /// trusted). An append that completed before this call (a hook's, before
    /// it wrote the slot the question read since; the witness's journaled
    /// end, before its lock was let go) has grown the file: the `lstat`
    /// sees it, and the refresh takes the lock.
    pub fn refresh_in(
        &mut self,
        journal: &Journal,
        deadline: std::time::Instant,
        question: Option<u64>,
    ) -> io::Result<()> {
        if fsx::HOLD_OPEN && question.is_some() && self.locked_in == question && self.unchanged(journal) {
            return Ok(());
        }
        let r = self.refresh_until(journal, deadline);
        self.locked_in = if r.is_ok() { question } else { None };
        r
    }

    /// Whether a locked refresh would read nothing: the journal's path names
    /// the file this reader holds open (its device and inode), a regular
    /// file of ours, not empty, whose length is where the last refresh
    /// stopped (no torn tail to read again, nothing appended, not cut).
    fn unchanged(&self, journal: &Journal) -> bool {
        let (Some(_), Some(id)) = (self.file.as_ref(), self.id) else { return false };
        if self.len != self.offset || self.len == 0 {
            return false;
        }
        let path = journal.path();
        fsx::lstat(&path).is_ok_and(|md| {
            md.len() == self.offset
                && fsx::state_problem(&md, journal::MAX_READ_BYTES).is_none()
                && fsx::path_id(&path, &md).is_ok_and(|now| now == id)
        })
    }

    /// [`Reader::refresh`], waiting for the lock until `deadline` at most.
    pub fn refresh_until(&mut self, journal: &Journal, deadline: std::time::Instant) -> io::Result<()> {
        if !fsx::HOLD_OPEN {
            let Some(_guard) = journal.read_lock_until(deadline)? else {
                self.reset();
                return Ok(());
            };
            return self.refresh_held(journal);
        }
        let held = self.lock.take().filter(|(_, id)| journal.lock_is(*id));
        let Some((lock, id)) = (match held {
            Some(l) => Some(l),
            None => journal.open_read_lock()?,
        }) else {
            self.reset();
            return Ok(());
        };
        let r = journal.read_lock_held(&lock, deadline).and_then(|_guard| self.refresh_held(journal));
        // Kept whatever the refresh made of the digest (a reset included).
        self.lock = Some((lock, id));
        r
    }

    /// [`Reader::refresh`] under a lock the caller holds (the exclusive one,
    /// for a claim). The lock file exists, so hooks have run: a journal that
    /// is missing, empty, not a regular file of ours (a symlink to
    /// `/dev/null`, a FIFO) or larger than a reader reads is an error, as
    /// for [`Journal::read`], and the reader starts over.
    pub fn refresh_held(&mut self, journal: &Journal) -> io::Result<()> {
        let r = self.refresh_open(journal);
        if !fsx::HOLD_OPEN {
            self.file = None;
        }
        r
    }

    fn refresh_open(&mut self, journal: &Journal) -> io::Result<()> {
        let path = journal.path();
        let empty = || "is empty while journal.lock exists (emptied?)".to_string();
        // A reader that has read nothing (every one-shot process's) has no
        // file to compare the path with: it opens it at once, and the same
        // checks are made on the handle (`open_state_md`, then the length):
        // one `lstat` less a question.
        let md = if self.id.is_none() {
            None
        } else {
            let md = match fsx::lstat(&path) {
                Ok(m) => m,
                Err(e) => {
                    self.reset();
                    return Err(if e.kind() == io::ErrorKind::NotFound { journal.missing_error() } else { e });
                }
            };
            if let Some(p) = fsx::state_problem(&md, journal::MAX_READ_BYTES).or_else(|| (md.len() == 0).then(empty)) {
                self.reset();
                return Err(fsx::untrusted(&path, &p));
            }
            Some(md)
        };
        let same = md.as_ref().is_some_and(|md| {
            self.id.is_some_and(|id| fsx::path_id(&path, md).is_ok_and(|now| now == id)) && md.len() >= self.offset
        });
        // The same file still open: the path's `lstat` gave its length (no
        // `fstat` of the handle).
        let mut len = md.as_ref().map_or(0, |m| m.len());
        let opened = !same || self.file.is_none();
        if opened {
            // A new file, or (where the reader closes it between refreshes)
            // the same one opened again: the lock held keeps it in place,
            // and the handle's own id says which file was opened.
            let write = CLAIMS_WRITE && self.digest.claims_only;
            let (f, fmd) =
                fsx::open_state_md(&path, write, journal::MAX_READ_BYTES)?.ok_or_else(|| journal.missing_error())?;
            if fmd.len() == 0 {
                self.reset();
                return Err(fsx::untrusted(&path, &empty()));
            }
            let id = fsx::handle_id(&f, &fmd)?;
            if !same || self.id != Some(id) {
                self.reset();
            }
            len = fmd.len();
            self.file = Some(f);
            self.id = Some(id);
        }
        self.len = len;
        let Some(f) = self.file.as_ref() else { return Ok(()) };
        let len = len.min(journal::MAX_READ_BYTES);
        if len <= self.offset {
            return Ok(());
        }
        let want = (len - self.offset) as usize;
        let mut file: &File = f;
        // A handle opened just now is at 0: no `lseek` to get there.
        if (self.offset > 0 || !opened)
            && let Err(e) = file.seek(SeekFrom::Start(self.offset))
        {
            self.reset();
            return Err(e);
        }
        // Onto the digest's text: a first read (every one-shot process's)
        // moves its bytes in, one `read` for the whole journal
        // ([`fsx::read_up_to`]; `read_to_string` on a `take` read 77 KB in
        // four); a later one appends what it validated. Text that is not
        // UTF-8 is decoded lossily like Journal::read does. Complete lines
        // only: a torn tail is read again next time.
        let from = self.digest.text.len();
        let mut buf = Vec::new();
        if let Err(e) = fsx::read_up_to(file, &mut buf, want) {
            self.reset();
            return Err(e);
        }
        let end = buf.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        buf.truncate(end);
        if from == 0 {
            match String::from_utf8(buf) {
                Ok(t) => self.digest.text = Arc::new(t),
                Err(e) => self.digest.text = Arc::new(String::from_utf8_lossy(e.as_bytes()).into_owned()),
            }
        } else {
            match std::str::from_utf8(&buf) {
                Ok(t) => Arc::make_mut(&mut self.digest.text).push_str(t),
                Err(_) => Arc::make_mut(&mut self.digest.text).push_str(&String::from_utf8_lossy(&buf)),
            }
        }
        let consumed = end;
        self.digest.fold_from(from);
        self.offset += consumed as u64;
        Ok(())
    }
}
