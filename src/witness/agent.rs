//! A Claude Code subagent's own transcript as the witness of its context.
//! A subagent's compaction writes its `compact_boundary` (`"isSidechain":true`,
//! its `agentId`) to `<session>/subagents/agent-<id>.jsonl`, next to the
//! session's transcript, never to the session's (Claude Code 2.1.328,
//! docs/DELIVERY.md §8, "Subagents and compaction"; fixture
//! tests/fixtures/payloads/withdrawal/claude/subagent-own-compact/). When its
//! three compaction hooks are all lost, only that file shows it. So a
//! question whose delivery is a subagent's (scope `agent:<id>`) reads that
//! file on too, from an offset of its own ([`AgentTrack`]), within the same
//! byte budget as the session's transcript; a line there that withdraws
//! anything ends that subagent's deliveries ([`Reach::Agent`](crate::state::journal::Reach::Agent)),
//! never the main thread's.
//!
//!
//! A subagent a workflow runs keeps its transcript one level down, in
//! `subagents/workflows/<run id>/` ([`locate`]; docs/HOST-FACTS.md §9): a
//! track not seen yet looks in both places, and keeps the one it found.
//! Found in neither, that subagent's stubs are withheld (its delivery
//! means the host wrote its prompt and that call's line somewhere else, or
//! nowhere: a compaction there could not be seen).
//!
//! Pure parts ([`subagent_path`], [`run_dir`], [`path_in`], [`verdict`],
//! [`AgentTrack::keep`]) are table-tested; [`locate`] and [`read_on`] are
//! the bounded look and read.

use super::file::{MAX_READ_BYTES, TRANSCRIPT};
use super::scan::{Fact, classify};
use crate::fsx;
use crate::state::secret::Secret;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::io;
use std::path::{Path, PathBuf};

/// Subagent transcripts one conversation follows; past it the track asked
/// least recently is dropped, and its deliveries end ([`AgentTrack::keep`]).
pub const MAX_AGENTS: usize = 32;

/// Bytes before the offset read again on every question and compared with
/// their seal: a file rewritten in place is caught there.
pub const TAIL_BYTES: u64 = 256;

/// Where reading one subagent's transcript stopped (offsets, ids and a
/// seal; never content).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentTrack {
    /// The subagent's scope, `agent:<id>`.
    pub scope: String,
    /// Device and inode of its transcript ((0, 0): not seen yet).
    pub file: (u64, u64),
    /// Where the next read starts: the start of a line.
    pub offset: u64,
    /// Inside a line longer than [`MAX_READ_BYTES`]: skip to its end.
    pub skipping: bool,
    /// The seal of the [`TAIL_BYTES`] before `offset` (empty: none).
    pub tail: String,
    /// Unix ms this track was made or last moved on (the bound drops the
    /// oldest).
    pub asked_ms: u64,
    /// The subagent's newest MCP tool-use ids seen in its transcript (at
    /// most [`MAX_TOOL_USES`]): a question waits for its own call's.
    #[serde(default)]
    pub tools: VecDeque<String>,
    /// Where under the session's `subagents/` its transcript was found:
    /// empty for `subagents/` itself, `workflows/<run id>` for a workflow's
    /// agent ([`locate`]).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub dir: String,
}

/// Tool-use ids a track keeps: a subagent asks about its latest call.
pub const MAX_TOOL_USES: usize = 64;

impl AgentTrack {
    /// Has the subagent's transcript caught up with its asking call, pure?
    /// A subagent's lines go through the same per-file queue, in order (its
    /// recorder holds back only an assistant message still streaming, and
    /// every line after it): once its call's tool-use line is on disk, so is
    /// a boundary written before it (docs/DELIVERY.md §8, "Subagents and
    /// compaction"). `None`: nothing to wait for.
    pub fn caught_up(&self, asking: Option<&str>) -> bool {
        asking.is_none_or(|id| self.tools.iter().any(|t| t == id))
    }

    /// The track of `scope` among `tracks`, made if missing (at `now`); with it, the
    /// scope of a track dropped to make room (whose deliveries must end:
    /// nothing follows its transcript any more), pure.
    pub fn keep<'t>(tracks: &'t mut Vec<AgentTrack>, scope: &str, now: u64) -> (&'t mut AgentTrack, Option<String>) {
        let mut dropped = None;
        let i = match tracks.iter().position(|t| t.scope == scope) {
            Some(i) => i,
            None => {
                if tracks.len() >= MAX_AGENTS
                    && let Some(old) = tracks.iter().enumerate().min_by_key(|(_, t)| t.asked_ms).map(|(i, _)| i)
                {
                    dropped = Some(tracks.remove(old).scope);
                }
                tracks.push(AgentTrack { scope: scope.to_string(), asked_ms: now, ..AgentTrack::default() });
                tracks.len() - 1
            }
        };
        (&mut tracks[i], dropped)
    }
}

/// The transcript of the subagent of `scope` (`agent:<id>`), beside the
/// session's transcript `session` (`<dir>/<session>.jsonl` ->
/// `<dir>/<session>/subagents/agent-<id>.jsonl`, as Claude Code 2.1.328 lays
/// it out: the fixture's `subagents/`, and `SubagentStop`'s
/// `agent_transcript_path`), pure. `None` when either name could lead
/// anywhere else: an id of other than ASCII letters, digits, `-` and `_`
/// (no separator, no `..`), or a session path that is not a `.jsonl` file
/// name.
pub fn subagent_path(session: &str, scope: &str) -> Option<PathBuf> {
    let id = scope.strip_prefix("agent:")?;
    let plain = |s: &str| {
        !s.is_empty() && s.len() <= 128 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    if !plain(id) {
        return None;
    }
    let session = Path::new(session);
    let stem = session.file_name()?.to_str()?.strip_suffix(".jsonl")?;
    if stem.is_empty() || stem.starts_with('.') {
        return None;
    }
    Some(session.parent()?.join(stem).join("subagents").join(format!("agent-{id}.jsonl")))
}

/// The directory under a session's `subagents/` that holds one directory
/// per workflow run, each with the transcripts of the agents that run
/// spawned (Claude Code 2.1.328: `transcriptSubdir: workflows/<run id>`,
/// docs/HOST-FACTS.md §9).
pub const RUNS: &str = "workflows";

/// Workflow runs one question looks through for a subagent's transcript
/// (one directory per run the session started); past it the listing is not
/// cut but refused, and that subagent's stubs are withheld.
pub const MAX_RUNS: usize = 256;

/// Whether `name` is a workflow run's directory as the host names it, pure:
/// `wf_` and at least six of `a-z`, `0-9`, `-` (the host's own check of a
/// run id to resume, `/^wf_[a-z0-9-]{6,}$/`; a new run's id is `wf_` and
/// the first 12 characters of a random UUID), at most 64 bytes. So the name
/// is one path component that cannot lead anywhere else.
pub fn run_dir(name: &str) -> bool {
    name.len() <= 64
        && name.strip_prefix("wf_").is_some_and(|id| {
            id.len() >= 6 && id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        })
}

/// The transcript at `dir` (a track's [`AgentTrack::dir`]) of the subagent
/// whose transcript directly under `subagents/` would be `flat`, pure.
/// `None` for a `dir` the host never makes (a state written by hand).
pub fn path_in(flat: &Path, dir: &str) -> Option<PathBuf> {
    if dir.is_empty() {
        return Some(flat.to_path_buf());
    }
    let run = dir.strip_prefix(RUNS)?.strip_prefix('/')?;
    if !run_dir(run) {
        return None;
    }
    Some(flat.parent()?.join(RUNS).join(run).join(flat.file_name()?))
}

/// Where the transcript of the subagent whose flat path is `flat` is: its
/// [`AgentTrack::dir`] (`Some("")`: `flat` itself), `None` when in no place
/// the host puts one. Bounded: one `lstat` of `flat`, one listing of
/// `subagents/workflows/` of at most [`MAX_RUNS`] entries, one `lstat` in
/// each run's directory. An error, so that subagent's stubs are withheld:
/// the transcript in two places (which one the host writes cannot be
/// told), more runs than the bound, or anything that cannot be listed or
/// looked at (a FIFO, a loop, no permission).
pub fn locate(flat: &Path) -> io::Result<Option<String>> {
    let there = |p: &Path| match std::fs::symlink_metadata(p) {
        Ok(_) => Ok(true),
        Err(e) if fsx::is_absent(&e) => Ok(false),
        Err(e) => Err(e),
    };
    let mut found = there(flat)?.then(String::new);
    let (Some(subagents), Some(file)) = (flat.parent(), flat.file_name()) else { return Ok(found) };
    let runs = subagents.join(RUNS);
    for name in fsx::list_dir(&runs, MAX_RUNS)?.unwrap_or_default() {
        let Some(name) = name.to_str().filter(|n| run_dir(n)) else { continue };
        if there(&runs.join(name).join(file))? {
            if found.is_some() {
                return Err(io::Error::other("the subagent's transcript is in two places"));
            }
            found = Some(format!("{RUNS}/{name}"));
        }
    }
    Ok(found)
}

/// What a line of a subagent's own transcript means for its deliveries,
/// pure: `Some(why)` when they end. Its compaction boundary ends them;
/// so does anything else that withdraws (a cut, a clearing, a rewind:
/// none was seen in a subagent's transcript, and whose context such a line
/// would concern there is not known) and a line that is not JSON.
/// Prompts and tool uses end nothing.
pub fn verdict(fact: &Fact) -> Option<&'static str> {
    match fact {
        // A compaction's summary line: its boundary, before it, ends them.
        Fact::Nothing | Fact::Prompt(_) | Fact::Summary { .. } | Fact::ToolUses(_) | Fact::Answer { .. } => None,
        Fact::Compacted { .. } => Some("the subagent's own transcript shows it compacted"),
        Fact::Cut(_) | Fact::Cleared | Fact::Rewound(_) => {
            Some("the subagent's own transcript shows results withdrawn")
        }
        Fact::NotJson => Some("a line of the subagent's own transcript is not JSON"),
    }
}

/// What one read on of a subagent's transcript found.
#[derive(Debug, PartialEq, Eq)]
pub enum AgentRead {
    /// Nothing in it ends the subagent's deliveries, or there is no file
    /// (its track's `file` is then still (0, 0)): what that means, the
    /// caller decides ([`super::file::check`] withholds: a subagent with a
    /// delivery has a transcript on the host).
    Clear,
    /// Its deliveries end (why).
    Ended(String),
    /// Bytes left unread (over the budget): no proof either way.
    Behind(u64),
}

/// Read on the transcript at `path` from where `t` stopped, at most
/// [`MAX_READ_BYTES`], into `buf`. Bounded as the session's read is: a FIFO
/// or a device is refused at the open, the read is `pread` of a known
/// length. Errors (unreadable, gone after it was seen): withhold.
pub fn read_on(t: &mut AgentTrack, path: &Path, secret: &Secret, buf: &mut Vec<u8>) -> io::Result<AgentRead> {
    let Some((f, md)) = fsx::open_file(path, &TRANSCRIPT)? else {
        if t.file == (0, 0) {
            return Ok(AgentRead::Clear);
        }
        return Err(io::Error::new(io::ErrorKind::NotFound, "the subagent's transcript is gone"));
    };
    let id = fsx::handle_id(&f, &md)?;
    let len = md.len();
    let mut ended = None;
    if t.file == (0, 0) {
        // The subagent's whole history is in it, from its first prompt on:
        // read from the start (a boundary before a delivery also ends it,
        // the safe side).
        t.file = id;
    } else if t.file != id || len < t.offset {
        // Replaced or shrunk: what changed cannot be known. Start again at
        // its end.
        (t.file, t.offset, t.skipping, t.tail) = (id, len, false, String::new());
        t.tools.clear();
        ended = Some("the subagent's transcript was replaced or shrank".to_string());
    }
    let back = t.offset.min(TAIL_BYTES);
    let want = (len - t.offset).min(MAX_READ_BYTES);
    let total = (back + want) as usize;
    buf.clear();
    buf.resize(total, 0);
    let mut got = 0;
    while got < total {
        match fsx::read_at(&f, &mut buf[got..], t.offset - back + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    if (got as u64) < back {
        return Err(io::Error::other("the subagent's transcript shrank while it was read"));
    }
    let seal = |b: &[u8]| if b.is_empty() { String::new() } else { secret.seal_bytes("witness-agent-tail", b) };
    let back = back as usize;
    if ended.is_none() && !t.tail.is_empty() && seal(&buf[..back]) != t.tail {
        (t.offset, t.skipping, t.tail) = (len, false, String::new());
        return Ok(AgentRead::Ended("the subagent's transcript was rewritten".into()));
    }
    let start = t.offset;
    // Whole lines only; a line still being written is read next time.
    let mut lo = back;
    if t.skipping {
        // The rest of a line longer than the budget (already judged).
        match crate::base::bytes::find(b'\n', &buf[lo..got]) {
            Some(nl) => (lo, t.skipping) = (lo + nl + 1, false),
            None => lo = got,
        }
    }
    let mut done = lo;
    while let Some(nl) = crate::base::bytes::find(b'\n', &buf[lo..got]) {
        let fact = classify(&buf[lo..lo + nl]);
        if let Fact::ToolUses(ids) = &fact {
            for i in ids {
                if t.tools.len() == MAX_TOOL_USES {
                    t.tools.pop_front();
                }
                t.tools.push_back(i.clone());
            }
        }
        if ended.is_none()
            && let Some(why) = verdict(&fact)
        {
            ended = Some(why.to_string());
        }
        lo += nl + 1;
        done = lo;
    }
    if done == back && got - back == MAX_READ_BYTES as usize {
        // One line fills the budget: nothing in it can be ruled out.
        done = got;
        t.skipping = true;
        ended.get_or_insert_with(|| format!("a line of the subagent's transcript longer than {MAX_READ_BYTES} bytes"));
    }
    t.offset += (done - back) as u64;
    t.tail = seal(&buf[done.saturating_sub(TAIL_BYTES as usize)..done]);
    // Not read at all: past the budget, or a file shorter than its length said.
    let behind = len - start - (got - back) as u64;
    Ok(match ended {
        Some(why) => AgentRead::Ended(why),
        None if behind > 0 => AgentRead::Behind(behind),
        None => AgentRead::Clear,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_subagent_path_stays_beside_the_session() {
        let s = "/h/.claude/projects/p/6091c47c-8969.jsonl";
        #[rustfmt::skip]
        let rows: [(&str, &str, Option<&str>); 10] = [
            (s, "agent:a048568baafb7b422", Some("/h/.claude/projects/p/6091c47c-8969/subagents/agent-a048568baafb7b422.jsonl")),
            (s, "agent:a_b-1",             Some("/h/.claude/projects/p/6091c47c-8969/subagents/agent-a_b-1.jsonl")),
            (s, "agent:",                  None),
            (s, "agent:../x",              None),
            (s, "agent:a/b",               None),
            (s, "agent:a.b",               None),
            (s, "task:a",                  None),
            ("/h/p/s.json",  "agent:a",    None),
            ("/h/p/.jsonl",  "agent:a",    None),
            ("s.jsonl",      "agent:a",    Some("s/subagents/agent-a.jsonl")),
        ];
        for (session, scope, want) in rows {
            assert_eq!(subagent_path(session, scope), want.map(PathBuf::from), "{session} {scope}");
        }
    }

    /// The layout the host wrote: `SubagentStop` names both transcripts.
    #[test]
    fn the_path_is_the_one_the_host_names_at_subagent_stop() {
        let f = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/payloads/withdrawal/claude/subagent-own-compact/hooks/020-SubagentStop.json"
        );
        let h: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
        let scope = format!("agent:{}", h["agent_id"].as_str().unwrap());
        let got = subagent_path(h["transcript_path"].as_str().unwrap(), &scope).unwrap();
        assert_eq!(got, PathBuf::from(h["agent_transcript_path"].as_str().unwrap()));
    }

    #[test]
    fn a_workflow_runs_directory_is_named_as_the_host_names_it() {
        #[rustfmt::skip]
        let rows: [(&str, bool); 12] = [
            ("wf_1a2b3c4d-5e6", true),  // a new run: `wf_` and 12 characters of a UUID
            ("wf_abcdef", true),        // the host's own check: six or more
            ("wf_abcde", false),
            ("wf_", false),
            ("wf_ABCDEF", false),
            ("wf_abc_def", false),
            ("wf_../abc", false),
            ("wf_abc/def", false),
            ("wf_abc.def", false),
            ("xf_abcdef", false),
            ("", false),
            (&"wf_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"[..65], false),
        ];
        for (name, ok) in rows {
            assert_eq!(run_dir(name), ok, "{name}");
        }
        assert!(run_dir(&format!("wf_{}", "a".repeat(61))));
    }

    #[test]
    fn a_tracks_directory_names_only_places_the_host_uses() {
        let flat = Path::new("/h/p/s/subagents/agent-a.jsonl");
        #[rustfmt::skip]
        let rows: [(&str, Option<&str>); 7] = [
            ("",                         Some("/h/p/s/subagents/agent-a.jsonl")),
            ("workflows/wf_1a2b3c4d-5e6", Some("/h/p/s/subagents/workflows/wf_1a2b3c4d-5e6/agent-a.jsonl")),
            ("workflows/wf_1a2b3c4d-5e6/x", None),
            ("workflows/..",             None),
            ("workflows/",               None),
            ("workflowswf_1a2b3c4d",     None),
            ("other/wf_1a2b3c4d-5e6",    None),
        ];
        for (dir, want) in rows {
            assert_eq!(path_in(flat, dir), want.map(PathBuf::from), "{dir}");
        }
    }

    /// Where a transcript not seen yet is looked for: beside the others, or
    /// in one workflow run's directory; two places, more runs than the
    /// bound, or a runs directory that cannot be listed, is an error (that
    /// subagent's stubs withheld), in bounded time.
    #[test]
    fn a_transcript_is_found_in_one_place_or_withheld() {
        let d = tempfile::tempdir().unwrap();
        let subs = d.path().join("s").join("subagents");
        let flat = subs.join("agent-a.jsonl");
        let runs = subs.join(RUNS);
        let found = || {
            let start = std::time::Instant::now();
            let r = locate(&flat).map_err(|e| e.to_string());
            assert!(start.elapsed() < std::time::Duration::from_secs(5));
            r
        };
        assert_eq!(found(), Ok(None), "no subagents directory yet");
        std::fs::create_dir_all(&subs).unwrap();
        std::fs::write(subs.join("agent-b.jsonl"), "").unwrap();
        assert_eq!(found(), Ok(None), "another subagent's");
        std::fs::write(&flat, "").unwrap();
        assert_eq!(found(), Ok(Some(String::new())));
        // A workflow's agent: its run's directory; other runs, and names the
        // host never makes, are passed over.
        std::fs::remove_file(&flat).unwrap();
        for run in ["wf_00000000-000", "wf_11111111-111", "notes", "wf_x"] {
            std::fs::create_dir_all(runs.join(run)).unwrap();
        }
        std::fs::write(runs.join("wf_00000000-000").join("agent-b.jsonl"), "").unwrap();
        std::fs::write(runs.join("wf_x").join("agent-a.jsonl"), "").unwrap();
        std::fs::write(runs.join("notes").join("agent-a.jsonl"), "").unwrap();
        std::fs::write(runs.join("journal.jsonl"), "").unwrap();
        assert_eq!(found(), Ok(None));
        std::fs::write(runs.join("wf_11111111-111").join("agent-a.jsonl"), "").unwrap();
        assert_eq!(found(), Ok(Some("workflows/wf_11111111-111".into())));
        assert_eq!(
            path_in(&flat, "workflows/wf_11111111-111"),
            Some(runs.join("wf_11111111-111").join("agent-a.jsonl"))
        );
        // In two places: which one the host writes cannot be told.
        std::fs::write(&flat, "").unwrap();
        assert!(found().unwrap_err().contains("two places"));
        std::fs::remove_file(&flat).unwrap();
        std::fs::create_dir_all(runs.join("wf_22222222-222")).unwrap();
        std::fs::write(runs.join("wf_22222222-222").join("agent-a.jsonl"), "").unwrap();
        assert!(found().unwrap_err().contains("two places"));
        std::fs::remove_dir_all(runs.join("wf_22222222-222")).unwrap();
        // More runs than the bound: not cut, refused.
        let n = std::fs::read_dir(&runs).unwrap().count();
        for i in n..MAX_RUNS {
            std::fs::create_dir(runs.join(format!("wf_{i:08}-000"))).unwrap();
        }
        assert_eq!(found(), Ok(Some("workflows/wf_11111111-111".into())), "at the bound");
        std::fs::create_dir(runs.join("wf_99999999-999")).unwrap();
        assert!(found().unwrap_err().contains("more than 256 entries"));
        // Something there that is not a directory: a FIFO, a symlink loop.
        #[cfg(unix)]
        {
            std::fs::remove_dir_all(&runs).unwrap();
            let c = std::ffi::CString::new(runs.to_str().unwrap()).unwrap();
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
            assert!(found().is_err(), "a FIFO");
            std::fs::remove_file(&runs).unwrap();
            std::os::unix::fs::symlink(&runs, &runs).unwrap();
            assert!(found().is_err(), "a symlink loop");
        }
    }

    #[test]
    fn what_a_subagent_line_ends() {
        let rows: [(Fact, bool); 9] = [
            (Fact::Nothing, false),
            (Fact::Prompt("u".into()), false),
            (Fact::ToolUses(vec!["t".into()]), false),
            (Fact::Compacted { main: false, uuid: None }, true),
            // A boundary in its file is its own, whatever the line says.
            (Fact::Compacted { main: true, uuid: Some("b".into()) }, true),
            (Fact::Cut(vec!["t".into()]), true),
            (Fact::Cleared, true),
            (Fact::Rewound(None), true),
            (Fact::NotJson, true),
        ];
        for (fact, ends) in rows {
            assert_eq!(verdict(&fact).is_some(), ends, "{fact:?}");
        }
    }

    /// The bounded read: what each state of the file answers, in order,
    /// on one track (and one FIFO), each in bounded time.
    #[test]
    fn every_file_state_answers_in_bounded_time() {
        let d = tempfile::tempdir().unwrap();
        let secret = Secret::load_or_create(d.path()).unwrap();
        let p = d.path().join("agent-a.jsonl");
        let mut t = AgentTrack { scope: "agent:a".into(), ..AgentTrack::default() };
        let mut buf = Vec::new();
        let mut read = |t: &mut AgentTrack| {
            let start = std::time::Instant::now();
            let r = read_on(t, &p, &secret, &mut buf).map_err(|e| e.to_string());
            assert!(start.elapsed() < std::time::Duration::from_secs(5));
            r
        };
        let add = |s: &str| {
            use std::io::Write;
            std::fs::OpenOptions::new().create(true).append(true).open(&p).unwrap().write_all(s.as_bytes()).unwrap();
        };
        let ended = |r: Result<AgentRead, String>| matches!(r, Ok(AgentRead::Ended(_)));
        // No file yet: the host wrote nothing of this subagent.
        assert_eq!(read(&mut t), Ok(AgentRead::Clear));
        add(r#"{"type":"user","isSidechain":true,"uuid":"u1","message":{"content":"go"}}"#);
        add("\n");
        add(
            r#"{"type":"assistant","isSidechain":true,"message":{"content":[{"type":"tool_use","id":"t1","name":"mcp__ctx__ctx_read"}]}}"#,
        );
        add("\n{\"type\":\"user\",\"par");
        // Whole lines read; the one being written waits.
        assert!(!t.caught_up(Some("t1")));
        assert_eq!(read(&mut t), Ok(AgentRead::Clear));
        assert!(t.caught_up(Some("t1")) && !t.caught_up(Some("t2")) && t.caught_up(None));
        let at = t.offset;
        add("tial\":1}\n");
        assert_eq!(read(&mut t), Ok(AgentRead::Clear));
        assert!(t.offset > at);
        // Its own compaction.
        add(
            r#"{"parentUuid":null,"logicalParentUuid":"x","isSidechain":true,"agentId":"a","type":"system","subtype":"compact_boundary"}"#,
        );
        add("\n");
        assert!(ended(read(&mut t)));
        assert_eq!(read(&mut t), Ok(AgentRead::Clear), "read once, then moved past");
        // Not JSON.
        add("garbage\n");
        assert!(ended(read(&mut t)));
        // Rewritten in place, the same length and more.
        let len = std::fs::metadata(&p).unwrap().len() as usize;
        let mut bytes = std::fs::read(&p).unwrap();
        bytes[len - 3] = b'G';
        bytes.extend_from_slice(b"{}\n");
        std::fs::write(&p, &bytes).unwrap();
        assert!(ended(read(&mut t)));
        // Shrunk.
        std::fs::write(&p, b"{}\n").unwrap();
        assert!(ended(read(&mut t)));
        // More than the budget at once: what is left is behind.
        let line = format!("{{\"type\":\"progress\",\"x\":\"{}\"}}\n", "y".repeat(1 << 20));
        for _ in 0..9 {
            add(&line);
        }
        assert!(matches!(read(&mut t), Ok(AgentRead::Behind(n)) if n > 0));
        assert_eq!(read(&mut t), Ok(AgentRead::Clear));
        // One line longer than the budget: ended, then skipped to its end.
        add(&"z".repeat(MAX_READ_BYTES as usize + 10));
        assert!(ended(read(&mut t)));
        add("zz\n{}\n");
        assert_eq!(read(&mut t), Ok(AgentRead::Clear));
        // Gone after it was seen.
        std::fs::remove_file(&p).unwrap();
        assert!(read(&mut t).is_err());
        // A FIFO is refused without blocking.
        #[cfg(unix)]
        {
            let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
            let mut fresh = AgentTrack::default();
            assert!(read(&mut fresh).is_err());
        }
    }

    /// A track keeps its subagent's newest [`MAX_TOOL_USES`] tool-use ids:
    /// a question about an older call finds it not caught up (it waits,
    /// then withholds: the safe side), one about a recent call does.
    #[test]
    fn a_tracks_tool_uses_are_bounded_to_the_newest() {
        let d = tempfile::tempdir().unwrap();
        let secret = Secret::load_or_create(d.path()).unwrap();
        let p = d.path().join("agent-a.jsonl");
        let mut lines = String::new();
        for i in 0..MAX_TOOL_USES + 6 {
            lines.push_str(&format!(
                r#"{{"type":"assistant","isSidechain":true,"message":{{"content":[{{"type":"tool_use","id":"t{i}","name":"mcp__ctx__ctx_read"}}]}}}}"#
            ));
            lines.push('\n');
        }
        std::fs::write(&p, lines).unwrap();
        let mut t = AgentTrack { scope: "agent:a".into(), ..AgentTrack::default() };
        assert_eq!(read_on(&mut t, &p, &secret, &mut Vec::new()).unwrap(), AgentRead::Clear);
        assert_eq!(t.tools.len(), MAX_TOOL_USES);
        assert!(!t.caught_up(Some("t5")), "past the bound: forgotten");
        assert!(t.caught_up(Some("t6")) && t.caught_up(Some(&format!("t{}", MAX_TOOL_USES + 5))));
    }

    #[test]
    fn tracks_are_bounded_and_the_dropped_one_is_named() {
        let mut v = Vec::new();
        for i in 0..MAX_AGENTS as u64 {
            let (_, dropped) = AgentTrack::keep(&mut v, &format!("agent:a{i}"), 100 + i);
            assert_eq!(dropped, None);
        }
        // A track moved on later is kept longer: a1 is then the oldest.
        AgentTrack::keep(&mut v, "agent:a0", 1_000).0.asked_ms = 1_000;
        let (t, dropped) = AgentTrack::keep(&mut v, "agent:new", 1_001);
        assert_eq!((t.scope.as_str(), t.asked_ms, dropped.as_deref()), ("agent:new", 1_001, Some("agent:a1")));
        assert_eq!(v.len(), MAX_AGENTS);
        let (t, dropped) = AgentTrack::keep(&mut v, "agent:a0", 1_002);
        assert_eq!((t.asked_ms, dropped), (1_000, None));
    }
}
