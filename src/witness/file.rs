//! The witness's files: one state file per conversation in the data dir
//! (`witness/<hash>.json`: the transcript's path, where reading stopped,
//! the ids and offsets of [`Track`], the last turn's time; never content),
//! its lock file (`witness/<hash>.lock`), which also holds the read
//! progress since the state file's last save ([`progress`]), and the
//! host's transcript, read from the saved offset on (`witness/read.rs`).

use super::agent::{self, AgentRead, AgentTrack};
pub use super::ask::{Check, Question};
use super::held::{self, Held};
use super::idle::{self, Return, Settled};
use super::lives::{self, Lives};
use super::owner::{self, Owner};
use super::progress::{self, Log};
use super::read::read_on;
use super::scan::{Pending, Track};
use crate::base::fingerprint::sha256_hex;
use crate::base::host::Host;
use crate::fsx;
use crate::state::journal::Reach;
use crate::state::secret::Secret;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::time::Instant;

mod track_json;

/// The data dir's folder of witness files.
pub const DIR: &str = "witness";
/// Bytes of transcript read for one question at most: beyond it the answer
/// is "withhold" (what was read is kept; the next question reads on).
pub const MAX_READ_BYTES: u64 = 8 << 20;
/// Largest state file (ids and offsets at their bounds fit well inside).
pub const MAX_STATE_BYTES: u64 = 1 << 20;
/// Host processes whose idle clocks one conversation keeps (the oldest
/// clock is dropped past it; its process then falls back to the
/// conversation's clock).
pub const MAX_PROCS: usize = 16;
/// Witness files kept before old ones (a day untouched) are removed.
pub const MAX_FILES: usize = 512;
/// How a transcript is opened: any regular file (it is the host's, not
/// state), never a FIFO or a device; its size is not capped here (the
/// witness reads at most MAX_READ_BYTES on from its offset).
pub(super) const TRANSCRIPT: fsx::ReadRule = fsx::ReadRule::any(u64::MAX);
/// A witness untouched this long is forgotten (with it, every delivery of
/// its conversation: no witness, no stub).
pub const KEEP_MS: u64 = crate::state::ledger::DELIVERY_KEEP_MS;

/// What the witness remembers of one conversation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    /// The transcript's path, as the host's hooks name it.
    pub transcript: String,
    /// Device and inode of the transcript (0, 0: not seen yet; the first
    /// file seen is adopted, read from its start).
    pub file: (u64, u64),
    /// Where the next read starts: always the start of a line.
    pub offset: u64,
    /// Inside a line longer than [`MAX_READ_BYTES`]: skip to its end.
    pub skipping: bool,
    /// The seal of the `TAIL_BYTES` (`witness/read.rs`) before `offset` (empty: not read yet).
    #[serde(default)]
    pub tail: String,
    /// Claude Code processes of the conversation (`CLAUDE_PID`) and each
    /// one's idle clock: its last prompt or stop, or, at a resume, its last
    /// response. Two processes of one session (`--resume` in a second
    /// terminal) each clear old results on their own silence.
    #[serde(default)]
    pub procs: Vec<(u32, u64)>,
    /// Unix ms of the conversation's last prompt or stop (0: none seen).
    pub last_turn_ms: u64,
    /// Unix ms the witness started watching this transcript: a delivery
    /// recorded before it was never watched, and backs no stub.
    pub since_ms: u64,
    /// This save's mark ([`progress::new_save_id`]): the progress records that
    /// extend it name it (0: a file from before records).
    #[serde(default)]
    pub save_id: u64,
    /// The conversation's host processes, as its turn hooks named them
    /// since this witness started (`None`: a state from before they were
    /// kept; no process may then rely on another's result).
    #[serde(default)]
    pub lives: Option<Lives>,
    /// Claude Code subagents whose own transcripts this conversation's
    /// questions read ([`agent`](super::agent)), at most [`super::agent::MAX_AGENTS`]
    /// (omitted when none: a state without subagents is written as before).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<AgentTrack>,
    /// Prompt ids the main agent's hooks named, and whose each is: what
    /// proves which process wrote a compaction boundary ([`owner`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub owners: Vec<Owner>,
    /// Idle returns of processes of a session open in several, each
    /// settled by its own process's next call ([`idle`]; omitted when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub returns: Vec<Return>,
    /// Written beside the fields above; read by [`State::from_json`] only,
    /// on its own: serde's `flatten` buffered every id of it before
    /// building it, two fifths of a one-shot `leanctx stub`'s instructions
    /// once the state held its prompts (callgrind, benches/README.md). A
    /// `State` deserialized any other way has an empty track.
    #[serde(flatten, skip_deserializing)]
    pub track: Track,
}

impl State {
    /// A state file's state: its [`Track`] by hand where it can be, and
    /// the other fields by serde from a copy without the track
    /// (`file/track_json.rs`); else both by serde, each straight from
    /// `bytes` (the other's keys skipped unbuilt).
    pub fn from_json(bytes: &[u8]) -> serde_json::Result<State> {
        if let Some((track, rest)) = track_json::split(bytes) {
            return Ok(State { track, ..serde_json::from_slice::<State>(&rest)? });
        }
        let mut st: State = serde_json::from_slice(bytes)?;
        st.track = serde_json::from_slice(bytes)?;
        Ok(st)
    }

    /// Since when host process `pid` (none: not known) has been silent,
    /// as far as the hooks tell: the conversation's last prompt or stop,
    /// or, before any, the turn that started the witness (a session whose
    /// first prompt hook died has results to cut too); and no later than
    /// the process's own clock (another process's turns do not end its
    /// silence). Both found by tests/it/sim_ledger.rs.
    pub fn silent_since(&self, pid: Option<u32>) -> u64 {
        let conv = self.last_turn_ms.max(self.since_ms);
        match pid.and_then(|p| self.procs.iter().find(|(q, _)| *q == p)) {
            Some(&(_, t)) => t.min(conv),
            None => conv,
        }
    }

    /// Set process `pid`'s idle clock to `t`, within [`MAX_PROCS`].
    fn clock(&mut self, pid: u32, t: u64) {
        self.procs.retain(|(p, _)| *p != pid);
        if self.procs.len() >= MAX_PROCS
            && let Some(i) = self.procs.iter().enumerate().min_by_key(|(_, (_, t))| *t).map(|(i, _)| i)
        {
            self.procs.remove(i);
        }
        self.procs.push((pid, t));
    }
}

/// The conversation's witness files' name, without extension.
fn name(host: Host, conv: &str) -> String {
    let mut n = sha256_hex(format!("leanctx-witness\0{host}\0{conv}").as_bytes());
    n.truncate(32);
    n
}

/// The dir, host and conversation [`paths`] last answered, and its answer.
type LastPaths = (PathBuf, Host, String, (PathBuf, PathBuf));

/// The conversation's state file and lock file in `dir`.
fn paths(dir: &Path, host: Host, conv: &str) -> (PathBuf, PathBuf) {
    thread_local! {
        /// The last conversation's files on this thread (one: bounded): a
        /// server asks about one conversation question after question, and
        /// each name is a SHA-256 in portable code (~2,000 instructions),
        /// the paths three joins and two formats (~1,500 more).
        static LAST: std::cell::RefCell<Option<LastPaths>> = const { std::cell::RefCell::new(None) };
    }
    LAST.with_borrow_mut(|last| {
        // The dir compared as given (not by components): the paths are
        // those its joins make.
        if let Some((d, h, c, p)) = last.as_ref()
            && *h == host
            && c == conv
            && d.as_os_str() == dir.as_os_str()
        {
            return p.clone();
        }
        let n = name(host, conv);
        let d = dir.join(DIR);
        let p = (d.join(format!("{n}.json")), d.join(format!("{n}.lock")));
        *last = Some((dir.to_path_buf(), host, conv.to_string(), p.clone()));
        p
    })
}

/// The conversation's lock file, open for appending (it holds the
/// progress records too), created if missing.
fn open_lock(lock: &Path) -> io::Result<(File, u64, (u64, u64))> {
    let (f, md) =
        fsx::open_state_md(lock, true, MAX_LOCK_FILE_BYTES)?.ok_or_else(|| io::Error::other("lock file missing"))?;
    let id = fsx::handle_id(&f, &md)?;
    Ok((f, md.len(), id))
}

/// Largest lock file opened: its records are bounded far below
/// ([`progress::MAX_LOG_BYTES`]); more than that is read as stale.
const MAX_LOCK_FILE_BYTES: u64 = 1 << 20;

fn lock_on(f: &File, deadline: Instant) -> io::Result<fsx::LockRef<'_>> {
    fsx::lock_ref(f, fsx::LockKind::Exclusive, deadline).map_err(|e| match e {
        fsx::LockError::Busy { waited } => io::Error::other(format!("busy for {} ms", waited.as_millis())),
        fsx::LockError::Io(e) => e,
    })
}

/// The lock file's bytes, read under the lock, and whether there were more
/// than records ever make (then none are read: stale, dropped at the next
/// record). `size`: its length at the open (`fstat`): a short read that
/// reaches it is the end (no second `pread` for the 0; a record appended
/// since would have been read with it). The buffer starts at `size` + 1,
/// at most 4 KiB, and grows when filled: a lock file is a header and a few
/// records, and zeroing 4 KiB for them was ~4,000 instructions a question.
fn read_log(f: &File, size: u64) -> io::Result<(Vec<u8>, bool)> {
    let cap = (progress::MAX_LOG_BYTES as usize) + progress::MAX_RECORD_BYTES;
    let mut buf = vec![0u8; usize::try_from(size).unwrap_or(usize::MAX).saturating_add(1).min(4096)];
    let mut got = 0;
    loop {
        if got == buf.len() {
            if buf.len() > cap {
                return Ok((Vec::new(), true));
            }
            buf.resize(buf.len() * 2, 0);
        }
        match fsx::read_at(f, &mut buf[got..], got as u64)? {
            0 => break,
            n => got += n,
        }
        // Short of the room given, at the length `fstat` said.
        if got < buf.len() && got as u64 == size {
            break;
        }
    }
    buf.truncate(got);
    Ok((buf, false))
}

/// The state file's state with the progress records of `log` applied.
fn with_log(mut st: State, log: &(Vec<u8>, bool)) -> (State, Log) {
    if log.1 {
        return (st, Log { len: u64::MAX, stale: true, dirty: false });
    }
    let l = progress::replay(&mut st, &log.0);
    (st, l)
}

/// The state of a conversation: `None` when it has none.
pub fn load(dir: &Path, host: Host, conv: &str) -> io::Result<Option<State>> {
    let (path, lock) = paths(dir, host, conv);
    let Some(st) = load_at(&path)? else { return Ok(None) };
    let log = match fsx::open_state_md(&lock, false, MAX_LOCK_FILE_BYTES)? {
        Some((f, md)) => read_log(&f, md.len())?,
        None => (Vec::new(), false),
    };
    Ok(Some(with_log(st, &log).0))
}

fn load_at(path: &Path) -> io::Result<Option<State>> {
    let Some(bytes) = fsx::read_state(path, MAX_STATE_BYTES)? else { return Ok(None) };
    State::from_json(&bytes).map(Some).map_err(|e| io::Error::other(format!("{}: {e}", path.display())))
}

/// Save `st` whole, as a new save ([`State::save_id`]; the progress records of
/// older saves no longer apply), never into a file held open (see [`held`]);
/// the file saved, kept open where files are held open, with its (device, inode).
fn save(path: &Path, st: &mut State) -> io::Result<Option<(File, (u64, u64))>> {
    st.save_id = progress::new_save_id();
    let bytes = serde_json::to_vec(st).map_err(io::Error::other)?;
    let Some(f) = fsx::write_recycled_kept(path, &bytes)? else { return Ok(None) };
    let id = fsx::handle_id(&f, &f.metadata()?)?;
    Ok(Some((f, id)))
}

/// Append a progress record to the lock file `f` (under its lock), whose
/// bytes were `held`: the records of an older save are dropped first, by
/// cutting the file back to its [`progress::HEADER`] (to 0 and writing the
/// header when it has none). What the file holds after is `held` too.
fn append_record(f: &File, log: &mut Log, held: &mut Vec<u8>, rec: &[u8]) -> io::Result<()> {
    let mut line = rec;
    let with_header;
    if log.stale {
        // Never cut to 0 when it can be helped: see progress::HEADER.
        let keep = if held.starts_with(progress::HEADER) { progress::HEADER.len() } else { 0 };
        f.set_len(keep as u64)?;
        *log = Log { len: keep as u64, ..Log::default() };
        held.truncate(keep);
        if keep == 0 {
            with_header = [progress::HEADER, rec].concat();
            line = &with_header;
        }
    }
    // One write of the whole line (O_APPEND); a short one leaves a torn
    // record, which loading reads as the end of the good ones.
    log.dirty = true;
    (&*f).write_all(line)?;
    log.dirty = false;
    log.len += line.len() as u64;
    held.extend_from_slice(line);
    Ok(())
}

const NO_WITNESS: &str = "no transcript recorded for this conversation (no prompt, stop or start hook yet)";

/// A turn boundary the host's hooks report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Turn {
    /// `SessionStart`; `idle_s`: its `seconds_since_last_response`.
    Start {
        idle_s: Option<u64>,
    },
    Prompt,
    Stop,
    /// `SessionEnd`: the hook's host process leaves the conversation (it
    /// exits, or `/clear` moves it to a new session), so it writes no more
    /// of this transcript and is no longer a second process of it.
    End,
    /// A compaction hook of the main thread (`PreCompact`, `PostCompact`):
    /// no turn, only the prompt id it names ([`Boundary::prompt`]).
    Compact,
}

/// What a turn does to the earlier deliveries of its conversation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TurnEnd {
    None,
    /// Every earlier delivery ends now.
    All,
    /// An idle return: earlier deliveries wait for the transcript ([`Pending`]).
    Provisional,
    /// An idle return of this host process while others are known: every
    /// earlier delivery of its contexts ends now ([`Reach::Proc`]); another
    /// process's own deliveries stand (the host cuts and clears only the
    /// returning process's requests: docs/DELIVERY.md §8).
    Proc(u32),
    /// The same return, provisional for that process: its earlier
    /// deliveries wait for its own next call's line ([`Return`]).
    ProvisionalOf(u32),
}

/// What a turn ends: by its own kind ([`TurnEnd`]), and the idle return of
/// another host process left pending, which this turn makes moot (that
/// process's earlier deliveries end: [`Reach::Proc`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TurnEnds {
    pub turn: TurnEnd,
    pub moot: Option<u32>,
}

impl TurnEnds {
    fn only(turn: TurnEnd) -> TurnEnds {
        TurnEnds { turn, moot: None }
    }

    /// The compaction records to journal, widest first (none: nothing ends).
    pub fn reaches(self) -> Vec<Reach<'static>> {
        let mut r = match self.turn {
            TurnEnd::All => return vec![Reach::All],
            TurnEnd::Proc(p) => vec![Reach::Proc(p)],
            TurnEnd::None | TurnEnd::Provisional | TurnEnd::ProvisionalOf(_) => Vec::new(),
        };
        if let Some(m) = self.moot
            && !r.contains(&Reach::Proc(m))
        {
            r.push(Reach::Proc(m));
        }
        r
    }
}

/// What a turn does to the earlier deliveries of its conversation, pure.
/// After the host's idle threshold (`idle_ms`) of silence the host may
/// clear old results without a hook and record it late (docs/DELIVERY.md
/// §8, "the race"). A prompt that long after this process's last prompt or
/// stop is provisional when one host process is all the witness knows of
/// the conversation (with two on one transcript, the other's answer proves
/// nothing); with others known it ends this process's earlier deliveries
/// now ([`TurnEnd::Proc`]: each process's context is its own, and the cut
/// and the clearing act on the returning process's requests only). A
/// resume that long after the last response is decided at its first
/// prompt, the same way. Narrowing to one process needs the hook to name
/// it (`CLAUDE_PID`) and every turn hook seen to have named its process
/// ([`Lives`]: a hook with none, or more processes than kept, leaves an
/// unknown writer): else every earlier delivery ends, as before. Another
/// process's turn while a return is pending makes it moot (its settling
/// lines may interleave with this one's). A hook naming another
/// transcript: the history was replaced (Codex's rewind,
/// [`crate::hosts::profile::HostProfile::history_file`]). A first witness
/// ends nothing: [`State::since_ms`] judges the older.
pub fn turn_end(
    old: Option<&State>,
    transcript: &str,
    turn: Turn,
    now: u64,
    pid: Option<u32>,
    idle_ms: Option<u64>,
    minted: bool,
) -> TurnEnds {
    let Some(old) = old else { return TurnEnds::only(TurnEnd::None) };
    if old.transcript != transcript {
        return TurnEnds::only(TurnEnd::All);
    }
    // Whose context an idle return touched can be said: the hook names its
    // process and no unnamed or uncounted process wrote this transcript.
    let named = pid.filter(|_| old.lives.as_ref().is_some_and(|l| !l.anonymous && !l.crowded));
    let mut moot = None;
    if let Some(p) = &old.track.pending
        && pid != Some(p.pid)
    {
        if named.is_none() {
            return TurnEnds::only(TurnEnd::All);
        }
        moot = Some(p.pid);
    }
    // This process's own return still waiting: another start, return or
    // its end settles it no more (its contexts end).
    let waiting = pid.filter(|p| old.returns.iter().any(|r| r.pid == *p));
    if let (Some(p), Turn::Start { .. } | Turn::End) = (waiting, turn) {
        return TurnEnds { turn: TurnEnd::Proc(p), moot };
    }
    let Some(idle) = idle_ms else { return TurnEnds { turn: TurnEnd::None, moot } };
    let alone = pid.is_some_and(|p| old.procs.iter().all(|(q, _)| *q == p));
    // Its own idle clock: with others known, the conversation's clock
    // (their turns) says nothing of this process's silence.
    let own_clock = pid.is_some_and(|p| old.procs.iter().any(|(q, _)| *q == p));
    let idle_return = match turn {
        // A resume that long after the last response: the host cuts at its
        // first prompt, not at the start (the `idle-cut` fixture, resumed),
        // so that prompt decides (this process's clock is the last response
        // it loaded); until it the read path's silence rule withholds this
        // process's questions. Unless the process is not named: every
        // earlier delivery ends now.
        Turn::Start { idle_s } => {
            let past = idle_s.is_some_and(|s| s.saturating_mul(1000) >= idle);
            let turn = if past && !alone && named.is_none() { TurnEnd::All } else { TurnEnd::None };
            return TurnEnds { turn, moot };
        }
        Turn::Prompt => now.saturating_sub(old.silent_since(pid)) >= idle || (named.is_some() && !alone && !own_clock),
        Turn::Stop | Turn::End | Turn::Compact => false,
    };
    let room = old.returns.len() < idle::MAX_RETURNS;
    let turn = match (idle_return, alone, named) {
        (false, _, _) => TurnEnd::None,
        (true, _, Some(p)) if waiting.is_some() => TurnEnd::Proc(p),
        // A return alone, but another's left pending: its lines may
        // interleave with this one's, so this one ends now too.
        (true, true, Some(p)) if moot.is_some() => TurnEnd::Proc(p),
        (true, true, _) => TurnEnd::Provisional,
        // Its prompt line names the prompt id its hook named, made by its
        // own submission: what ties its lines to it.
        (true, false, Some(p)) if minted && room => TurnEnd::ProvisionalOf(p),
        (true, false, Some(p)) => TurnEnd::Proc(p),
        (true, false, None) => TurnEnd::All,
    };
    TurnEnds { turn, moot }
}

/// One turn boundary a hook reports: the conversation, the transcript its
/// payload names, which turn, when, and the host's idle threshold
/// ([`crate::hosts::profile::HostProfile::idle_clear_ms`]).
#[derive(Clone, Copy, Debug)]
pub struct Boundary<'a> {
    pub host: Host,
    pub conv: &'a str,
    pub transcript: &'a str,
    pub turn: Turn,
    pub now: u64,
    /// The hook's host process (`CLAUDE_PID`), if named: its own idle clock.
    pub pid: Option<u32>,
    pub idle_ms: Option<u64>,
    /// The `prompt_id` the hook names, and whether the hook is the
    /// process's own submission of it (`UserPromptSubmit`, a manual
    /// `PreCompact`): [`owner::note`].
    pub prompt: Option<(&'a str, bool)>,
}

/// A hook's turn boundary: record the transcript (a new witness starts at
/// its current end), apply the idle rule, and remember the time. `append`
/// writes the hook's journal records, with a compaction record when every
/// earlier delivery ends; the state is saved once they are written.
pub fn on_turn(
    dir: &Path,
    b: &Boundary<'_>,
    deadline: Instant,
    append: impl FnOnce(&[Reach<'static>]) -> io::Result<()>,
) -> io::Result<()> {
    let mut append = Some(append);
    let r = turn_locked(dir, b, deadline, &mut append);
    match append.take() {
        // The witness failed before the hook's records were written: write
        // them, ending every earlier delivery (nothing watches them now).
        Some(a) => a(&[Reach::All]).and(r),
        None => r,
    }
}

fn turn_locked<F: FnOnce(&[Reach<'static>]) -> io::Result<()>>(
    dir: &Path,
    b: &Boundary<'_>,
    deadline: Instant,
    append: &mut Option<F>,
) -> io::Result<()> {
    let &Boundary { host, conv, transcript, turn, now, pid, idle_ms, prompt } = b;
    let wdir = fsx::ensure_private_subdir(dir, DIR)?;
    let (path, lock) = paths(dir, host, conv);
    let (lf, size, _) = open_lock(&lock)?;
    let _held = lock_on(&lf, deadline)?;
    // An unreadable state is replaced: ending every earlier delivery
    // covers whatever it said. Its read progress is part of it: saved
    // whole without it, the offset would move back, and a transcript
    // truncated or rewritten between the two offsets go unseen.
    let log = read_log(&lf, size)?;
    let old = load_at(&path).ok().flatten().map(|st| with_log(st, &log).0);
    if turn == Turn::End && old.is_none() {
        // Nothing watched: nothing to forget.
        return (append.take().expect("appended once"))(&[]);
    }
    if turn == Turn::Compact {
        // No turn: the hook's records, and the prompt id it names noted
        // where this transcript is watched.
        (append.take().expect("appended once"))(&[])?;
        let Some(mut st) = old.filter(|o| o.transcript == transcript) else { return Ok(()) };
        let (Some(p), Some((id, minted))) = (pid, prompt) else { return Ok(()) };
        owner::note(&mut st.owners, id, p, minted);
        return save(&path, &mut st).map(drop);
    }
    let minted = prompt.is_some_and(|(_, m)| m);
    let TurnEnds { turn: mut end, moot } = turn_end(old.as_ref(), transcript, turn, now, pid, idle_ms, minted);
    // The return's own lines begin at the transcript's length now (unknown:
    // all end, or the returning process's).
    let from = match end {
        TurnEnd::Provisional | TurnEnd::ProvisionalOf(_) => {
            std::fs::metadata(transcript).ok().filter(|m| m.is_file()).map(|m| m.len())
        }
        _ => None,
    };
    match (end, from) {
        (TurnEnd::Provisional, None) => end = TurnEnd::All,
        (TurnEnd::ProvisionalOf(p), None) => end = TurnEnd::Proc(p),
        _ => {}
    }
    let mut st = match old.filter(|o| o.transcript == transcript) {
        Some(o) => o,
        None => {
            forget_old(&wdir, now);
            let mut st = State {
                transcript: transcript.to_string(),
                since_ms: now,
                lives: Some(Lives::default()),
                ..State::default()
            };
            // Start at the transcript's end: what is already in it concerns
            // deliveries this witness did not watch, which end now.
            // The bounded open (fsx::open_file): a FIFO or a link to a
            // device is refused without blocking; the size is the witness's
            // own business (it reads on from an offset).
            if let Ok(Some((f, md))) = fsx::open_file(Path::new(transcript), &TRANSCRIPT) {
                st.file = fsx::handle_id(&f, &md)?;
                st.offset = md.len();
                // At the end, or in a line being written: skip to its end.
                if md.len() > 0 {
                    let mut b = [0u8; 1];
                    st.skipping = fsx::read_at(&f, &mut b, md.len() - 1)? == 1 && b[0] != b'\n';
                }
            }
            st
        }
    };
    // A pending return keeps its start and counts its process's prompts;
    // a new one is saved before the hook's records (unsaved: all end, or
    // the returning process's). A return of another process made moot
    // stays in it until its end is journaled: only more withholding.
    let mine = st.track.pending.as_ref().is_some_and(|p| Some(p.pid) == pid);
    if turn == Turn::Prompt
        && matches!(end, TurnEnd::None | TurnEnd::Provisional)
        && mine
        && let Some(p) = st.track.pending.as_mut()
    {
        p.due = p.due.saturating_add(1);
        p.at_ms = if end == TurnEnd::Provisional { now } else { p.at_ms };
    } else if let (TurnEnd::Provisional, Some(from), Some(pid)) = (end, from, pid) {
        st.track.pending = Some(Pending { from, at_ms: now, pid, due: 1, seen: 0, cut_seen: false });
        if save(&path, &mut st).is_err() {
            end = TurnEnd::All;
        }
    } else if let (TurnEnd::ProvisionalOf(p), Some(from), Some((id, _))) = (end, from, prompt) {
        st.returns.push(Return { pid: p, prompt_id: id.to_string(), from, at_ms: now, ..Return::default() });
        if save(&path, &mut st).is_err() {
            st.returns.retain(|r| r.pid != p);
            end = TurnEnd::Proc(p);
        }
    }
    (append.take().expect("appended once"))(&TurnEnds { turn: end, moot }.reaches())?;
    // What ended is journaled: the returns it made moot are over.
    match end {
        TurnEnd::All => {
            st.track.pending = None;
            st.returns.clear();
        }
        TurnEnd::Proc(p) => {
            st.returns.retain(|r| r.pid != p);
            if st.track.pending.as_ref().is_some_and(|q| q.pid == p) {
                st.track.pending = None;
            }
        }
        _ => {}
    }
    if moot.is_some() {
        st.track.pending = None;
    }
    // A start is no activity of the conversation's own (a resume after a
    // long pause starts too): only prompts and stops time the silence.
    if matches!(turn, Turn::Prompt | Turn::Stop) {
        st.last_turn_ms = now;
    }
    if let (Some(p), Some((id, minted))) = (pid, prompt) {
        owner::note(&mut st.owners, id, p, minted);
    }
    if let Some(l) = st.lives.as_mut() {
        let seen = match turn {
            Turn::Start { .. } => lives::Seen::Start,
            Turn::End => lives::Seen::End,
            Turn::Prompt | Turn::Stop | Turn::Compact => lives::Seen::Turn,
        };
        l.saw(pid, seen, now);
    }
    // A process's own clock: its turns, or the last response it loaded.
    match (pid, turn) {
        (Some(p), Turn::Prompt | Turn::Stop) => st.clock(p, now),
        (Some(p), Turn::End) => st.procs.retain(|(q, _)| *q != p),
        (Some(p), Turn::Start { idle_s: Some(s) }) => st.clock(p, now.saturating_sub(s.saturating_mul(1000))),
        _ => {}
    }
    save(&path, &mut st).map(drop)
}

/// Remove witness files untouched for [`KEEP_MS`] once there are more than
/// [`MAX_FILES`]. Best effort: a removed witness only means "withhold".
fn forget_old(wdir: &Path, now: u64) {
    let Ok(rd) = std::fs::read_dir(wdir) else { return };
    let entries: Vec<_> = rd.flatten().collect();
    if entries.len() <= MAX_FILES {
        return;
    }
    for e in entries {
        let old = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|m| m.duration_since(std::time::UNIX_EPOCH).ok())
            .is_some_and(|m| now.saturating_sub(m.as_millis() as u64) > KEEP_MS);
        if old {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// Read what the host appended to the conversation's transcript since the
/// last question, and say whether the delivery `q` names is still in the
/// context. When every delivery ends, `end_all` records it (a compaction
/// record in the journal) before the offset moves on. Bounded: one lock
/// wait until `deadline`, non-blocking opens, at most [`MAX_READ_BYTES`].
/// A long-lived process keeps the state between questions ([`held`]).
/// `end_all` is told what ended: everything, or the main thread's
/// deliveries only ([`Reach::Main`]).
pub fn check(
    dir: &Path,
    q: &Question<'_>,
    deadline: Instant,
    end_all: impl FnMut(Reach<'_>) -> io::Result<()>,
) -> Check {
    let (path, lock) = paths(dir, q.host, q.conv);
    let unavailable = |why: String| Check::Unavailable(why);
    // The lock file this process kept open, locked, while the path still
    // names it (checked once locked: one deleted, by `forget_old`, and made
    // again is another file, whose lockers this lock would not exclude) and
    // it is a lock file we may read (a regular file of ours, not too large);
    // its length from that `lstat`, taken under the lock. Anything else:
    // opened at the path as before.
    let kept = held::take_lock(&lock);
    let reused = kept.as_ref().and_then(|(f, id)| {
        let g = lock_on(f, deadline).ok()?;
        let md = fsx::lstat(&lock).ok()?;
        let same = fsx::state_problem(&md, MAX_LOCK_FILE_BYTES).is_none()
            && fsx::path_id(&lock, &md).is_ok_and(|now| now == *id);
        same.then_some((g, md.len()))
    });
    let mut opened = None;
    let (lf, id, held_lock, size) = match (reused, kept.as_ref()) {
        (Some((g, size)), Some((f, id))) => (f, *id, g, size),
        _ => {
            let (f, size, id) = match open_lock(&lock) {
                Ok(f) => f,
                // No witness folder: no hook named a transcript yet.
                Err(e) if fsx::is_absent(&e) => return unavailable(NO_WITNESS.into()),
                Err(e) => return unavailable(format!("the witness lock: {e}")),
            };
            let f = opened.insert(f);
            match lock_on(f, deadline) {
                Ok(g) => (&*f, id, g, size),
                Err(e) => return unavailable(format!("the witness lock: {e}")),
            }
        }
    };
    let answer = check_locked(dir, q, end_all, &path, lf, size);
    // Unlocked before it is kept: another thread takes it only then.
    drop(held_lock);
    if let Some(f) = opened.or(kept.map(|k| k.0)) {
        held::keep_lock(lock, f, id);
    }
    answer
}

/// [`check`] under the conversation's lock, held on `lf` (`size`: its
/// length once locked).
fn check_locked(
    dir: &Path,
    q: &Question<'_>,
    mut end_all: impl FnMut(Reach<'_>) -> io::Result<()>,
    path: &Path,
    lf: &File,
    size: u64,
) -> Check {
    let unavailable = |why: String| Check::Unavailable(why);
    let log = match read_log(lf, size) {
        Ok(l) => l,
        Err(e) => return unavailable(format!("the witness lock: {e}")),
    };
    let mut h = match load_held(path, held::take(path), log) {
        Ok(Some(h)) => h,
        Ok(None) => return unavailable(NO_WITNESS.into()),
        Err(e) => return unavailable(format!("the witness state: {e}")),
    };
    let secret = match Secret::load_or_create(dir) {
        Ok(s) => s,
        Err(e) => return unavailable(format!("the data dir's secret: {e}")),
    };
    // What a read changes moves these too (facts come only with the bytes
    // that carry them; a start-over also ends every delivery), so
    // comparing them says whether to save, without a copy of the state.
    let before = (h.state.file, h.state.offset, h.state.skipping, h.state.tail.clone());
    // On every early return below `h` is dropped, not kept: the next
    // question reads the state from its files again.
    let r = match read_on(&mut h, &secret) {
        Ok(r) => r,
        Err(e) => return unavailable(format!("the transcript {}: {e}", h.state.transcript)),
    };
    if let Some(why) = &r.ended
        && let Err(e) = end_all(r.reach)
    {
        return unavailable(format!("{why}, and the journal could not record it: {e}"));
    }
    // A subagent's delivery: its own transcript too (journaled before its
    // offset moves on, as above).
    let agents_before = q.agent.map(|_| h.state.agents.clone());
    let returns_before = h.state.returns.clone();
    let sub = q.agent.map(|scope| read_agent(&mut h, scope, q.now, &secret, &mut end_all));
    let agents_moved = agents_before.is_some_and(|a| a != h.state.agents);
    // The asking process's own idle return, settled by its call's line
    // ([`idle`]) while its prompt id is still proven its own ([`owner`]: no
    // other process's hook named it); what it ends is journaled before the
    // state is saved.
    let mut settled = None;
    if let (Some(p), Some(x)) = (q.proc, q.asking)
        && let Some(i) = h.state.returns.iter().position(|r| r.pid == p)
        && owner::owner_of(&h.state.owners, Some(&h.state.returns[i].prompt_id)) == Some(p)
        && let Some(s) = h.state.returns[i].settle(h.state.track.tool_at(x))
    {
        if s == Settled::Ended {
            if let Err(e) = end_all(Reach::Proc(p)) {
                return unavailable(format!(
                    "host process {p}'s idle return may have withdrawn results, and the journal could not record it: {e}"
                ));
            }
            settled = Some(p);
        }
        h.state.returns.remove(i);
    }
    if settled.is_some()
        || returns_before != h.state.returns
        || agents_moved
        || r.ended.is_some()
        || (before.0, before.1, before.2, before.3.as_str())
            != (h.state.file, h.state.offset, h.state.skipping, h.state.tail.as_str())
    {
        // Only read on: a record in the lock file; else a new save (the
        // records carry the session's track only).
        let seen = r.seen.filter(|_| !agents_moved);
        let rec = seen.filter(|_| can_append(&h)).and_then(|seen| progress::record(&h.state, before.1, seen));
        let room = |rec: &[u8]| h.log.stale || h.log.len + rec.len() as u64 <= progress::MAX_LOG_BYTES;
        let saved = match rec {
            // `log_bytes`: what the lock file now holds, for the next question's check.
            Some(rec) if room(&rec) => append_record(lf, &mut h.log, &mut h.log_bytes, &rec),
            _ => save(path, &mut h.state).map(|f| {
                h.file = f;
                // The records there now extend an older save.
                h.log.stale = true;
                h.log.dirty = false;
            }),
        };
        // The facts were applied (the journal has any end); the next
        // question reads the same bytes again.
        if let Err(e) = saved {
            return unavailable(format!("the witness state could not be saved: {e}"));
        }
    }
    // The main thread's compaction did not reach a subagent's context, nor
    // one process's the context of another asking about its own delivery,
    // asked by a process this conversation's hooks named (not the parent
    // of a server several processes share).
    let own = q.own.filter(|o| h.state.lives.as_ref().is_some_and(|l| l.procs.iter().any(|x| x.pid == *o)));
    let ends = match r.reach {
        Reach::Main => !q.subagent,
        Reach::MainOf(p) => !q.subagent && own.is_none_or(|o| o == p),
        Reach::Proc(p) => own.is_none_or(|o| o == p),
        Reach::All | Reach::Agent(_) => true,
    };
    let ended = r.ended.filter(|_| ends).or_else(|| {
        settled.filter(|&p| own.is_none_or(|o| o == p)).map(|p| {
            format!("host process {p} returned from a silence past the host's idle threshold and its answer shows results withdrawn")
        })
    });
    let answer = match sub {
        Some(Err(why)) => Check::Unavailable(why),
        Some(Ok(AgentRead::Ended(why))) => Check::EndedAll(why),
        Some(Ok(AgentRead::Behind(n))) => Check::Unavailable(format!(
            "{n} bytes of the subagent's transcript not yet read (over the {MAX_READ_BYTES}-byte budget)"
        )),
        // A subagent's call waits for its own line in its own transcript,
        // not the session's.
        Some(Ok(AgentRead::Clear)) => match h.state.agents.iter().find(|t| Some(t.scope.as_str()) == q.agent) {
            // In neither place the host puts one: a subagent with a delivery
            // has its prompt and that call's line there on Claude Code
            // 2.1.328, written before the call was made and drained within
            // 100 ms, long before a hook confirmed it; so the host keeps it
            // elsewhere or writes none, and its compaction, hooks lost,
            // could not be seen. Not waited for: no later line would tell
            // where (docs/DELIVERY.md §8, "A workflow's agents"). What the
            // session's transcript ended is said first.
            Some(t) if t.file == (0, 0) => match ended {
                Some(why) => Check::EndedAll(why),
                None => Check::Unavailable(format!(
                    "the subagent {}'s own transcript is in neither place the host keeps one (subagents/, \
                     subagents/{}/<run id>/): its compaction could not be seen",
                    t.scope,
                    agent::RUNS
                )),
            },
            Some(t) if !t.caught_up(q.asking) => Check::NotYet,
            _ => judge(&h.state, &Question { asking: None, ..q.clone() }, ended, r.behind),
        },
        None => judge(&h.state, q, ended, r.behind),
    };
    held::keep(h);
    answer
}

/// Read on the own transcript of the subagent of `scope` (docs/DELIVERY.md
/// §8, "Subagents and compaction"): what ends its deliveries is journaled
/// (`end`, [`Reach::Agent`]) before its track moves on; so is the end of a
/// track the bound drops. `Err`: why nothing can be said (its deliveries
/// back no stub now; the track, if moved, is saved).
fn read_agent(
    h: &mut Held,
    scope: &str,
    now: u64,
    secret: &Secret,
    end: &mut impl FnMut(Reach<'_>) -> io::Result<()>,
) -> Result<AgentRead, String> {
    let Some(flat) = agent::subagent_path(&h.state.transcript, scope) else {
        return Err(format!("no transcript of its own can be named for the subagent {scope}"));
    };
    // Changed on a copy, kept only when everything it ended was journaled.
    let mut tracks = h.state.agents.clone();
    let (t, dropped) = AgentTrack::keep(&mut tracks, scope, now);
    let was = t.clone();
    if let Some(d) = dropped.as_deref() {
        end(Reach::Agent(d))
            .map_err(|e| format!("the journal could not record the end of a subagent no longer followed: {e}"))?;
    }
    // Not seen yet: it may be in either place the host puts one (a
    // workflow's agent one level down); once seen, it stays where it was.
    if t.file == (0, 0) {
        t.dir = agent::locate(&flat).map_err(|e| format!("the subagent's transcript: {e}"))?.unwrap_or_default();
    }
    let Some(path) = agent::path_in(&flat, &t.dir) else {
        return Err(format!("the subagent's transcript was kept in a place the host does not use: {}", t.dir));
    };
    // A buffer of its own: the held one stays the session's read size.
    let r = agent::read_on(t, &path, secret, &mut Vec::new()).map_err(|e| format!("the subagent's transcript: {e}"))?;
    if let AgentRead::Ended(why) = &r {
        end(Reach::Agent(scope)).map_err(|e| format!("{why}, and the journal could not record it: {e}"))?;
    }
    if (t.file, t.offset, t.skipping) != (was.file, was.offset, was.skipping) {
        t.asked_ms = now;
    }
    h.state.agents = tracks;
    Ok(r)
}

/// Whether a read that only read on may be recorded in the lock file: where
/// files are held open (not Windows, whose locks are mandatory), onto a
/// state file saved with a mark, whose records read whole.
fn can_append(h: &Held) -> bool {
    fsx::HOLD_OPEN && h.state.save_id != 0 && !h.log.dirty
}

/// The conversation's state: what this process kept, while the state
/// file's path still names the file it came from (one `lstat`) and the
/// lock file holds the records it last saw; else read from the files (the
/// state file is then kept open). `None`: no state.
fn load_held(path: &Path, kept: Option<Held>, log: (Vec<u8>, bool)) -> io::Result<Option<Held>> {
    let (mut transcript, mut buf) = (None, Vec::new());
    if let Some(h) = kept {
        match fsx::lstat(path) {
            Ok(md) if held::is_current(&h, &md) && !log.1 && log.0 == h.log_bytes => return Ok(Some(h)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            _ => (transcript, buf) = (h.transcript, h.buf),
        }
    }
    let Some((f, md)) = fsx::open_state_md(path, false, MAX_STATE_BYTES)? else { return Ok(None) };
    let bytes = fsx::read_opened(path, &f, &md, &fsx::ReadRule::state(MAX_STATE_BYTES))?;
    let state = State::from_json(&bytes).map_err(|e| io::Error::other(format!("{}: {e}", path.display())))?;
    let (state, l) = with_log(state, &log);
    let id = fsx::handle_id(&f, &md)?;
    // Where files are not held between calls, not even through the save.
    let file = fsx::HOLD_OPEN.then_some((f, id));
    let log_bytes = if log.1 { Vec::new() } else { log.0 };
    Ok(Some(Held { path: path.to_path_buf(), state, file, transcript, buf, log: l, log_bytes }))
}

/// The witness's answer once the transcript was read on.
fn judge(st: &State, q: &Question<'_>, ended: Option<String>, behind: u64) -> Check {
    if let Some(why) = ended {
        return Check::EndedAll(why);
    }
    if behind > 0 {
        return Check::Unavailable(format!(
            "{behind} bytes of transcript not yet read (over the {MAX_READ_BYTES}-byte budget)"
        ));
    }
    if q.delivered_ms < st.since_ms {
        return Check::Unavailable("delivered before the transcript was watched".into());
    }
    // Silent past the idle threshold since the last prompt or stop hook:
    // the prompt that ends the silence may clear old results, and its own
    // hook (which would have ended them) may have died.
    if let Some(idle) = q.idle_ms
        && q.now.saturating_sub(st.silent_since(q.proc)) >= idle
    {
        return Check::Unavailable(format!(
            "no prompt or stop hook for {} s (the host clears old results after {} s of silence)",
            q.now.saturating_sub(st.silent_since(q.proc)) / 1000,
            idle / 1000
        ));
    }
    // An idle return the transcript has not settled yet. The asking call's
    // own line is the return's first answer or comes after it (one queue,
    // written in order: docs/DELIVERY.md §8), so until it shows, the
    // settling lines may still be queued: wait for them as for a rewind.
    // The same for one process of several ([`idle`]): its own deliveries,
    // and any not known to be another's (the asker relies on having loaded
    // it, or its window names no process).
    let own = q.own.filter(|o| st.lives.as_ref().is_some_and(|l| l.procs.iter().any(|x| x.pid == *o)));
    if let Some(r) = st.returns.iter().find(|r| q.delivered_ms < r.at_ms && own.is_none_or(|o| o == r.pid)) {
        if !st.track.caught_up(q.asking) {
            return Check::NotYet;
        }
        return Check::Unavailable(format!(
            "host process {} returned from a silence past the host's idle threshold ({} s) and the transcript does \
             not show yet what the host withdrew from its context then",
            r.pid,
            q.idle_ms.unwrap_or(0) / 1000
        ));
    }
    if let Some(p) = &st.track.pending
        && q.delivered_ms < p.at_ms
    {
        if !st.track.caught_up(q.asking) {
            return Check::NotYet;
        }
        return Check::Unavailable(format!(
            "the conversation returned from a silence past the host's idle threshold ({} s) and its transcript \
             does not show yet what the host withdrew then",
            q.idle_ms.unwrap_or(0) / 1000
        ));
    }
    if let Some(&(owner, loader, _)) =
        q.relied.iter().find(|&&(owner, loader, at)| !st.lives.as_ref().is_some_and(|l| l.may_rely(owner, loader, at)))
    {
        return Check::NotLoaded(format!(
            "host process {loader} resumed after process {owner}'s result was confirmed, but another process of \
             the session may have written the line it resumed from (its hooks do not rule it out)"
        ));
    }
    match q.call_id {
        Some(id) if st.track.is_withdrawn(id) => {
            Check::Withdrawn("the host withdrew this result (its transcript says so)")
        }
        _ if !st.track.caught_up(q.asking) => Check::NotYet,
        _ => Check::Present,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whatever length the caller saw, the log is read to its end: a file
    /// grown since (a record appended between the `fstat` and the lock),
    /// cut since, or empty; past the cap, none of it (stale).
    #[test]
    fn the_log_is_read_whole_whatever_length_was_seen() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("lock");
        let cap = progress::MAX_LOG_BYTES as usize + progress::MAX_RECORD_BYTES;
        for len in [0, 1, 100, 4095, 4096, 4097, 6000, cap] {
            let bytes: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
            std::fs::write(&p, &bytes).unwrap();
            let f = File::open(&p).unwrap();
            for seen in [0, len as u64 / 2, len as u64, len as u64 + 10] {
                assert_eq!(read_log(&f, seen).unwrap(), (bytes.clone(), false), "{len} bytes, {seen} seen");
            }
        }
        std::fs::write(&p, vec![b'x'; 2 * cap + 1]).unwrap();
        let f = File::open(&p).unwrap();
        assert_eq!(read_log(&f, 10).unwrap(), (Vec::new(), true));
    }

    /// The remembered paths are those of that dir, host and conversation only.
    #[test]
    fn paths_stay_per_dir_conversation_and_host() {
        let fresh = |dir: &str, host: Host, conv: &str| {
            let n = &sha256_hex(format!("leanctx-witness\0{host}\0{conv}").as_bytes())[..32];
            let d = Path::new(dir).join(DIR);
            (d.join(format!("{n}.json")), d.join(format!("{n}.lock")))
        };
        let asks = [
            ("/d", Host::ClaudeCode, "a"),
            ("/d", Host::ClaudeCode, "a"),
            ("/d", Host::ClaudeCode, "b"),
            ("/d", Host::Codex, "b"),
            ("/e", Host::Codex, "b"),
            ("/e//", Host::Codex, "b"),
            ("/d", Host::ClaudeCode, "a"),
        ];
        for (dir, host, conv) in asks {
            let p = paths(Path::new(dir), host, conv);
            assert_eq!(p, fresh(dir, host, conv), "{dir} {host} {conv}");
            assert_eq!(p.0.as_os_str(), fresh(dir, host, conv).0.as_os_str(), "{dir} {host} {conv}");
        }
        assert_ne!(name(Host::ClaudeCode, "b"), name(Host::Codex, "b"));
    }
}
