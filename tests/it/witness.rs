//! The transcript witness on real files: what each kind of transcript
//! makes the answer, within bounds (src/witness/, docs/DELIVERY.md §8).

use leanctx::Host;
use leanctx::state::journal::Reach;
use leanctx::witness::file::{MAX_READ_BYTES, load};
use leanctx::witness::{Boundary, Check, Question, Turn, check, on_turn};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub(crate) const T0: u64 = 1_800_000_000_000;
const IDLE: u64 = 3_840_000;

pub(crate) struct W {
    _tmp: tempfile::TempDir,
    pub(crate) data: PathBuf,
    pub(crate) transcript: PathBuf,
    ends: std::cell::Cell<u32>,
}

impl W {
    pub(crate) fn new() -> W {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("data");
        std::fs::create_dir(&data).unwrap();
        crate::support::make_private(&data);
        let transcript = tmp.path().join("t.jsonl");
        std::fs::write(&transcript, "").unwrap();
        W { _tmp: tmp, data, transcript, ends: Default::default() }
    }

    pub(crate) fn turn(&self, turn: Turn, now: u64) -> bool {
        self.turn_by(turn, now, None)
    }

    /// A turn hook of host process `pid` (`CLAUDE_PID`): whether it ended
    /// earlier deliveries (what: [`W::ends_by`]).
    fn turn_by(&self, turn: Turn, now: u64, pid: Option<u32>) -> bool {
        !self.ends_by(turn, now, pid).is_empty()
    }

    /// A prompt hook of host process `pid` naming the prompt id `id`, made
    /// by its own submission: the compaction records it journals.
    fn prompt_by(&self, now: u64, pid: u32, id: &str) -> Vec<Reach<'static>> {
        let t = self.transcript.to_str().unwrap();
        let b = Boundary {
            host: Host::ClaudeCode,
            conv: "S",
            transcript: t,
            turn: Turn::Prompt,
            now,
            pid: Some(pid),
            idle_ms: Some(IDLE),
            prompt: Some((id, true)),
        };
        let mut ended = Vec::new();
        on_turn(&self.data, &b, far(), |e| {
            ended = e.to_vec();
            Ok(())
        })
        .unwrap();
        ended
    }

    /// A question from host process `proc` about a delivery it received
    /// itself, asked by its call `asking`.
    fn ask_own(&self, id: &str, delivered: u64, now: u64, proc: u32, asking: &str) -> Check {
        let q = Question {
            call_id: Some(id),
            delivered_ms: delivered,
            idle_ms: Some(IDLE),
            proc: Some(proc),
            own: Some(proc),
            asking: Some(asking),
            ..Question::catch_up(Host::ClaudeCode, "S", now)
        };
        check(&self.data, &q, far(), |_| {
            self.ends.set(self.ends.get() + 1);
            Ok(())
        })
    }

    /// The compaction records a turn hook of host process `pid` journals.
    fn ends_by(&self, turn: Turn, now: u64, pid: Option<u32>) -> Vec<Reach<'static>> {
        let mut ended = Vec::new();
        let t = self.transcript.to_str().unwrap();
        let b = Boundary {
            host: Host::ClaudeCode,
            conv: "S",
            transcript: t,
            turn,
            now,
            pid,
            idle_ms: Some(IDLE),
            prompt: None,
        };
        on_turn(&self.data, &b, far(), |e| {
            ended = e.to_vec();
            Ok(())
        })
        .unwrap();
        ended
    }

    fn ask_at(&self, id: &str, delivered: u64, now: u64) -> Check {
        self.ask_by(id, delivered, now, None)
    }

    /// A question from host process `proc`.
    fn ask_by(&self, id: &str, delivered: u64, now: u64, proc: Option<u32>) -> Check {
        let q = Question {
            call_id: Some(id),
            delivered_ms: delivered,
            idle_ms: Some(IDLE),
            proc,
            ..Question::catch_up(Host::ClaudeCode, "S", now)
        };
        check(&self.data, &q, far(), |_| {
            self.ends.set(self.ends.get() + 1);
            Ok(())
        })
    }

    pub(crate) fn ask(&self, id: &str) -> Check {
        self.ask_at(id, T0 + 1, T0 + 2)
    }

    pub(crate) fn append(&self, lines: &[&str]) {
        let mut f = std::fs::OpenOptions::new().append(true).open(&self.transcript).unwrap();
        for l in lines {
            writeln!(f, "{l}").unwrap();
        }
    }
}

fn far() -> Instant {
    Instant::now() + Duration::from_millis(500)
}

pub(crate) fn tool_use(id: &str) -> String {
    format!(
        r#"{{"type":"assistant","uuid":"a-{id}","message":{{"content":[{{"type":"tool_use","id":"{id}","name":"mcp__ctx__ctx_read","input":{{}}}}]}}}}"#
    )
}

pub(crate) fn prompt(uuid: &str) -> String {
    format!(r#"{{"type":"user","uuid":"{uuid}","message":{{"role":"user","content":"read it"}}}}"#)
}

fn unavailable(c: &Check) -> bool {
    matches!(c, Check::Unavailable(_))
}

#[test]
fn a_cut_withdraws_exactly_its_ids_and_a_rewind_what_follows_its_prompt() {
    let w = W::new();
    w.turn(Turn::Start { idle_s: None }, T0);
    w.append(&[&prompt("u1"), &tool_use("t1"), &prompt("u2"), &tool_use("t2"), &tool_use("t3")]);
    assert_eq!(w.ask("t1"), Check::Present);
    w.append(&[r#"{"type":"attachment","attachment":{"type":"tool_results_cut","callIds":["t3"]}}"#]);
    assert!(matches!(w.ask("t3"), Check::Withdrawn(_)));
    assert_eq!(w.ask("t2"), Check::Present);
    w.append(&[r#"{"type":"last-prompt","leafUuid":null,"rewound":true,"cutUuid":"u2"}"#, &prompt("u3")]);
    assert!(matches!(w.ask("t2"), Check::Withdrawn(_)));
    assert_eq!(w.ask("t1"), Check::Present);
    assert_eq!(w.ends.get(), 0, "nothing ended every delivery");
    // A rewind to a prompt the witness never saw ends them all.
    w.append(&[r#"{"type":"last-prompt","rewound":true,"cutUuid":"before-the-witness"}"#]);
    assert!(matches!(w.ask("t1"), Check::EndedAll(_)));
    assert_eq!(w.ends.get(), 1);
    // Read once: the next question reads nothing new.
    assert_eq!(w.ask("t1"), Check::Present);
    assert_eq!(w.ends.get(), 1);
}

#[test]
fn clearing_and_compaction_end_every_delivery_and_the_journal_records_it_first() {
    for line in [
        r#"{"type":"assistant","message":{"context_management":{"applied_edits":[{"type":"clear_tool_uses_20250919","cleared_tool_uses":20}]}}}"#,
        r#"{"type":"system","subtype":"compact_boundary"}"#,
    ] {
        let w = W::new();
        w.turn(Turn::Start { idle_s: None }, T0);
        w.append(&[line]);
        // The journal could not record the end: no answer, and the offset
        // stays, so the next question sees it again.
        let q =
            Question { call_id: Some("t1"), delivered_ms: T0 + 1, ..Question::catch_up(Host::ClaudeCode, "S", T0 + 2) };
        let c = check(&w.data, &q, far(), |_| Err(std::io::Error::other("disk full")));
        assert!(unavailable(&c), "{c:?}");
        assert!(matches!(w.ask("t1"), Check::EndedAll(_)), "{line}");
        assert_eq!(w.ends.get(), 1);
    }
}

#[test]
fn bad_transcripts_withhold_in_bounded_time() {
    // Missing.
    let w = W::new();
    w.turn(Turn::Start { idle_s: None }, T0);
    std::fs::remove_file(&w.transcript).unwrap();
    assert!(unavailable(&w.ask("t1")));
    // A FIFO where the transcript was: never opened for a blocking read.
    mkfifo(&w.transcript);
    let started = Instant::now();
    assert!(unavailable(&w.ask("t1")));
    assert!(started.elapsed() < Duration::from_secs(1), "{:?}", started.elapsed());
    // A directory.
    std::fs::remove_file(&w.transcript).unwrap();
    std::fs::create_dir(&w.transcript).unwrap();
    assert!(unavailable(&w.ask("t1")));

    // Not JSON: every delivery ends (nothing in it can be ruled out).
    let w = W::new();
    w.turn(Turn::Start { idle_s: None }, T0);
    w.append(&["this is not json"]);
    assert!(matches!(w.ask("t1"), Check::EndedAll(_)));

    // Shrunk, then replaced by another file: each ends every delivery.
    let w = W::new();
    w.turn(Turn::Start { idle_s: None }, T0);
    w.append(&[&prompt("u1"), &tool_use("t1")]);
    assert_eq!(w.ask("t1"), Check::Present);
    std::fs::OpenOptions::new().write(true).open(&w.transcript).unwrap().set_len(3).unwrap();
    assert!(matches!(w.ask("t1"), Check::EndedAll(_)));
    let other = w.transcript.with_extension("new");
    std::fs::write(&other, format!("{}\n", prompt("u9"))).unwrap();
    std::fs::rename(&other, &w.transcript).unwrap();
    assert!(matches!(w.ask("t1"), Check::EndedAll(_)));
    assert_eq!(w.ask("t1"), Check::Present);

    // No turn hook named a transcript: nothing to read.
    let w = W::new();
    assert!(unavailable(&w.ask("t1")));
}

#[test]
fn the_read_budget_withholds_reads_on_and_a_huge_line_ends_every_delivery() {
    let w = W::new();
    w.turn(Turn::Start { idle_s: None }, T0);
    let line = format!(r#"{{"type":"progress","data":"{}"}}"#, "x".repeat(100_000));
    let n = (MAX_READ_BYTES as usize / line.len()) + 3;
    let lines: Vec<&str> = std::iter::repeat_n(line.as_str(), n).collect();
    w.append(&lines);
    w.append(&[r#"{"type":"attachment","attachment":{"type":"tool_results_cut","callIds":["t1"]}}"#]);
    let first = w.ask("t1");
    assert!(unavailable(&first), "over the budget: {first:?}");
    assert!(matches!(w.ask("t1"), Check::Withdrawn(_)), "read on, and the cut found");

    // One line longer than the whole budget cannot be read whole.
    let w = W::new();
    w.turn(Turn::Start { idle_s: None }, T0);
    let huge = format!(r#"{{"data":"{}"}}"#, "y".repeat(MAX_READ_BYTES as usize));
    w.append(&[&huge, &tool_use("t2")]);
    assert!(matches!(w.ask("t1"), Check::EndedAll(_)));
    assert_eq!(w.ask("t1"), Check::Present, "the rest of the line is skipped");
    assert_eq!(load(&w.data, Host::ClaudeCode, "S").unwrap().unwrap().track.tools.len(), 1);
}

/// The transcript is read in pieces into one buffer (src/witness/read.rs):
/// lines that cross a piece's edge, or are longer than a piece, are read
/// whole at their offsets, and the bytes before the offset are sealed
/// across pieces (a wrong seal would read as a rewrite at the next question).
#[test]
fn lines_across_the_read_pieces_are_read_whole_at_their_offsets() {
    let w = W::new();
    w.turn(Turn::Start { idle_s: None }, T0);
    let (mut seed, mut lines, mut tools) = (7u64, Vec::new(), Vec::new());
    let mut at = std::fs::metadata(&w.transcript).unwrap().len();
    for i in 0..60 {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let pad = format!(r#"{{"type":"progress","data":"{}"}}"#, "x".repeat(1 + (seed >> 33) as usize % 90_000));
        at += pad.len() as u64 + 1;
        lines.push(pad);
        let line = if i % 2 == 0 { prompt(&format!("u{i}")) } else { tool_use(&format!("t{i}")) };
        if i % 2 == 1 {
            tools.push((format!("t{i}"), at));
        }
        at += line.len() as u64 + 1;
        lines.push(line);
    }
    // Shorter than the sealed tail: the seal spans it and the line before.
    lines.push(r#"{"type":"progress"}"#.into());
    w.append(&lines.iter().map(String::as_str).collect::<Vec<_>>());
    let len = std::fs::metadata(&w.transcript).unwrap().len();
    assert!(len > 2 << 20, "{len}");

    assert_eq!(w.ask("t1"), Check::Present);
    let st = load(&w.data, Host::ClaudeCode, "S").unwrap().unwrap();
    assert_eq!(st.offset, len, "read to the end in one question");
    let got: Vec<(String, u64)> = st.track.tools.iter().map(|(t, o)| (t.to_string(), o)).collect();
    assert_eq!(got, tools, "every tool use, at its line's offset");
    assert_eq!(st.track.prompts.len(), 30);
    assert_eq!(w.ask("t1"), Check::Present, "nothing new: the seal of the bytes before the offset holds");

    // A rewind to u30: the tool uses after it are withdrawn, those before not.
    w.append(&[r#"{"type":"last-prompt","leafUuid":null,"rewound":true,"cutUuid":"u30"}"#]);
    assert!(matches!(w.ask("t31"), Check::Withdrawn(_)));
    assert_eq!(w.ask("t29"), Check::Present);
    assert_eq!(w.ends.get(), 0);

    // A byte rewritten 200 bytes before the offset (in the line before the
    // last two): every delivery ends.
    let len = std::fs::metadata(&w.transcript).unwrap().len();
    let f = std::fs::OpenOptions::new().write(true).open(&w.transcript).unwrap();
    std::os::unix::fs::FileExt::write_at(&f, b"y", len - 200).unwrap();
    assert!(matches!(w.ask("t29"), Check::EndedAll(_)));
}

#[test]
fn a_line_being_written_is_read_once_it_ends() {
    let w = W::new();
    w.turn(Turn::Start { idle_s: None }, T0);
    let cut = r#"{"type":"attachment","attachment":{"type":"tool_results_cut","callIds":["t1"]}}"#;
    let (a, b) = cut.split_at(30);
    let mut f = std::fs::OpenOptions::new().append(true).open(&w.transcript).unwrap();
    f.write_all(a.as_bytes()).unwrap();
    assert_eq!(w.ask("t1"), Check::Present);
    writeln!(f, "{b}").unwrap();
    assert!(matches!(w.ask("t1"), Check::Withdrawn(_)));
}

#[test]
fn the_witness_starts_at_the_transcripts_end_and_earlier_deliveries_are_not_witnessed() {
    let w = W::new();
    // Already in the transcript before any hook named it: not read (it
    // concerns calls no witness watched) ...
    w.append(&[
        r#"{"type":"system","subtype":"compact_boundary"}"#,
        r#"{"type":"last-prompt","rewound":true,"cutUuid":"x""#,
    ]);
    w.turn(Turn::Prompt, T0);
    // ... and a delivery older than the witness is not vouched for.
    assert!(unavailable(&w.ask_at("t1", T0 - 1, T0 + 1)));
    assert_eq!(w.ask_at("t1", T0 + 1, T0 + 2), Check::Present);
    assert_eq!(w.ends.get(), 0);
}

#[test]
fn silence_past_the_idle_threshold_ends_earlier_deliveries() {
    // Rows: (turns before, the turn, ends every earlier delivery).
    let h = 1000;
    #[rustfmt::skip]
    type Row = (Vec<(Turn, u64)>, (Turn, u64), bool);
    let rows: Vec<Row> = vec![
        (vec![(Turn::Stop, T0)], (Turn::Prompt, T0 + IDLE), true),
        (vec![(Turn::Stop, T0)], (Turn::Prompt, T0 + IDLE - 1), false),
        (vec![(Turn::Stop, T0), (Turn::Prompt, T0 + IDLE - h)], (Turn::Prompt, T0 + IDLE + h), false),
        // A start does not time the silence: a resume carries its own.
        (vec![(Turn::Stop, T0), (Turn::Start { idle_s: None }, T0 + IDLE)], (Turn::Prompt, T0 + IDLE + 1), true),
        (vec![(Turn::Stop, T0)], (Turn::Start { idle_s: Some(IDLE / 1000) }, T0 + 5), true),
        (vec![(Turn::Stop, T0)], (Turn::Start { idle_s: Some(IDLE / 1000 - 1) }, T0 + 5), false),
        // No earlier turn: nothing to time.
        (vec![], (Turn::Prompt, T0 + 10 * IDLE), false),
        // Only a start before (the first prompt's hook died): timed from it.
        (vec![(Turn::Start { idle_s: None }, T0)], (Turn::Prompt, T0 + IDLE), true),
        (vec![(Turn::Start { idle_s: None }, T0)], (Turn::Prompt, T0 + IDLE - 1), false),
    ];
    for (i, (before, (turn, at), want)) in rows.into_iter().enumerate() {
        let w = W::new();
        for (t, at) in before {
            w.turn(t, at);
        }
        assert_eq!(w.turn(turn, at), want, "row {i}");
    }
    // And on the read path: silent since the last turn hook, no stub (the
    // prompt that ends the silence may have lost its hook).
    let w = W::new();
    w.turn(Turn::Stop, T0);
    assert_eq!(w.ask_at("t1", T0 + 1, T0 + IDLE - 1), Check::Present);
    assert!(unavailable(&w.ask_at("t1", T0 + 1, T0 + IDLE)));
    // Two processes of one session: each is silent on its own clock. P2
    // resumed at T0 (its last response then); P1 prompts on.
    let two = || {
        let w = W::new();
        w.turn_by(Turn::Prompt, T0, Some(1));
        w.turn_by(Turn::Start { idle_s: Some(0) }, T0, Some(2));
        w.turn_by(Turn::Prompt, T0 + IDLE - 1_000, Some(1));
        w
    };
    let w = two();
    assert_eq!(
        w.ends_by(Turn::Prompt, T0 + IDLE + 1_000, Some(2)),
        [Reach::Proc(2)],
        "P2's prompt after its own silence ends P2's contexts"
    );
    let w = two();
    assert!(!w.turn_by(Turn::Prompt, T0 + IDLE + 1_000, Some(1)), "P1 was not silent");
    // A process with no clock of its own while others are known: the
    // conversation's clock is theirs, its own silence is not known.
    assert_eq!(two().ends_by(Turn::Prompt, T0 + IDLE + 1_000, Some(3)), [Reach::Proc(3)]);
    // With no process named, by the conversation's clock, as before.
    assert!(!two().turn_by(Turn::Prompt, T0 + IDLE + 1_000, None));
    let w = two();
    assert!(unavailable(&w.ask_by("t1", T0 + 1, T0 + IDLE + 5, Some(2))), "P2 asks after its silence");
    assert_eq!(w.ask_by("t1", T0 + 1, T0 + IDLE + 5, Some(1)), Check::Present);
    // A resume's clock is the last response it loaded.
    let w = W::new();
    w.turn_by(Turn::Prompt, T0, Some(1));
    w.turn_by(Turn::Start { idle_s: Some(IDLE / 1000 - 10) }, T0 + 5_000, Some(2));
    w.turn_by(Turn::Prompt, T0 + 6_000, Some(1));
    assert_eq!(w.ends_by(Turn::Prompt, T0 + 20_000, Some(2)), [Reach::Proc(2)], "P2 resumed 10 s before the threshold");
    // No prompt or stop hook yet: silent since the witness started.
    let w = W::new();
    w.turn(Turn::Start { idle_s: None }, T0);
    assert_eq!(w.ask_at("t1", T0 + 1, T0 + IDLE - 1), Check::Present);
    assert!(unavailable(&w.ask_at("t1", T0 + 1, T0 + IDLE)));
}

#[test]
fn a_turn_naming_another_transcript_ends_every_earlier_delivery() {
    // Codex's rewind (`thread/revert`) goes on in a new rollout file under
    // the same session id: what was delivered before is in the old history.
    let w = W::new();
    assert!(!w.turn(Turn::Start { idle_s: None }, T0), "a first witness ends nothing");
    assert!(!w.turn(Turn::Prompt, T0 + 1));
    let other = w.transcript.with_file_name("t2.jsonl");
    std::fs::write(&other, "").unwrap();
    let turn_on = |t: &Path, at: u64| {
        let mut ended = false;
        let transcript = t.to_str().unwrap();
        let b = Boundary {
            host: Host::Codex,
            conv: "S",
            transcript,
            turn: Turn::Start { idle_s: None },
            now: at,
            pid: None,
            idle_ms: None,
            prompt: None,
        };
        on_turn(&w.data, &b, far(), |e| {
            ended = !e.is_empty();
            Ok(())
        })
        .unwrap();
        ended
    };
    assert!(!turn_on(&w.transcript, T0 + 2), "the first turn of another host's conversation");
    assert!(turn_on(&other, T0 + 3), "another transcript for the same conversation");
    assert!(!turn_on(&other, T0 + 4), "the new transcript again");
}

#[test]
fn a_state_file_holds_ids_and_offsets_only_and_is_private() {
    let w = W::new();
    w.turn(Turn::Prompt, T0);
    w.append(&[r#"{"type":"user","uuid":"u1","message":{"role":"user","content":"SECRET-PROMPT"}}"#, &tool_use("t1")]);
    assert_eq!(w.ask("t1"), Check::Present);
    let dir = w.data.join("witness");
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let text = std::fs::read_to_string(e.path()).unwrap();
        assert!(!text.contains("SECRET"), "{text}");
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(e.metadata().unwrap().permissions().mode() & 0o777, 0o600, "{}", e.path().display());
    }
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
}

/// A state file is read in two passes (`State::from_json`: its own fields,
/// then its track's): what one holds reads back whole, the withdrawn ids
/// included, from the file as a fresh process loads it.
#[test]
fn a_saved_state_reads_back_whole_with_its_track() {
    let w = W::new();
    w.turn(Turn::Start { idle_s: None }, T0);
    w.append(&[&prompt("u1"), &tool_use("t1"), &tool_use("t2")]);
    w.append(&[r#"{"type":"attachment","attachment":{"type":"tool_results_cut","callIds":["t2"]}}"#]);
    assert!(matches!(w.ask("t2"), Check::Withdrawn(_)));
    let st = load(&w.data, Host::ClaudeCode, "S").unwrap().unwrap();
    assert!(st.track.is_withdrawn("t2") && !st.track.is_withdrawn("t1"));
    assert_eq!(st.track.prompts.len(), 1);
    let json = serde_json::to_vec(&st).unwrap();
    assert_eq!(leanctx::witness::file::State::from_json(&json).unwrap(), st);
}

/// Dropping an older save's progress records cuts the lock file back to
/// its header, never to 0: ext4 flushes a file cut to 0 at its close, and
/// the next cut waited for that write (benches/README.md, "Seventh pass").
/// The records after the header still apply: every answer stands.
#[test]
fn an_older_saves_records_are_dropped_down_to_the_header() {
    let w = W::new();
    w.turn(Turn::Start { idle_s: None }, T0);
    let lock = std::fs::read_dir(w.data.join("witness"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "lock"))
        .expect("the conversation's lock file");
    let (mut cuts, mut last) = (0, 0);
    for i in 0..60 {
        let (u, t) = (format!("u{i}"), format!("t{i}"));
        w.append(&[&prompt(&u), &tool_use(&t)]);
        assert_eq!(w.ask(&t), Check::Present, "question {i}");
        let bytes = std::fs::read(&lock).unwrap();
        assert!(
            bytes.starts_with(leanctx::witness::progress::HEADER),
            "question {i}: {:?}",
            String::from_utf8_lossy(&bytes[..bytes.len().min(40)])
        );
        cuts += usize::from(bytes.len() < last);
        last = bytes.len();
    }
    assert!(cuts >= 2, "the records were dropped at saves: {cuts}");
    let st = load(&w.data, Host::ClaudeCode, "S").unwrap().unwrap();
    assert_eq!(st.track.tools.len(), 60, "every record applied");
}

/// A server keeps a conversation's witness state between its questions
/// (src/witness/held.rs). A save by another process (here a real hook, at
/// the prompt that ends a long silence) replaces the state file, and the
/// next question must read it: answered from what it kept, the idle rule
/// would still see the silence.
#[test]
fn a_kept_state_gives_way_to_another_processs_save() {
    let sb = crate::support::Sandbox::new();
    let transcript = sb.tmp.path().join("t.jsonl");
    std::fs::write(&transcript, "").unwrap();
    let mut payload: serde_json::Value =
        serde_json::from_str(&crate::support::payload("claude/baseline/03-UserPromptSubmit.json")).unwrap();
    payload["transcript_path"] = serde_json::json!(transcript);
    let conv = payload["session_id"].as_str().unwrap().to_string();
    let prompt_at = |t: u64| {
        let o = sb.hook("claude-code", payload.to_string()).env("LEAN_CTX_NOW_MS", t.to_string()).run();
        assert_eq!(o.code, 0, "{o:?}");
    };
    let ask = |delivered: u64, now: u64| {
        let q = Question {
            call_id: Some("t1"),
            delivered_ms: delivered,
            idle_ms: Some(IDLE),
            ..Question::catch_up(Host::ClaudeCode, &conv, now)
        };
        check(&sb.data, &q, far(), |_| Ok(()))
    };
    prompt_at(T0);
    assert_eq!(ask(T0 + 1, T0 + 2), Check::Present);
    assert!(unavailable(&ask(T0 + 1, T0 + IDLE + 5)), "silent past the idle threshold");
    prompt_at(T0 + IDLE + 10);
    for _ in 0..3 {
        assert_eq!(ask(T0 + IDLE + 11, T0 + IDLE + 12), Check::Present, "the hook's save was read");
    }
}

fn mkfifo(p: &Path) {
    let _ = std::fs::remove_file(p);
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo {}", p.display());
}

fn answer(cm: &str) -> String {
    format!(
        r#"{{"type":"assistant","uuid":"a","message":{{"content":[{{"type":"text","text":"ok"}}],"context_management":{cm}}}}}"#
    )
}

/// An idle return of a conversation's only host process is provisional
/// (docs/DELIVERY.md §8): earlier deliveries back no stub until the host's
/// first answer after the returning prompt is on disk, and then as that
/// answer and the lines before it say. Before, every return ended every
/// earlier delivery, cut or not.
#[test]
fn an_idle_return_of_one_process_is_settled_by_the_hosts_first_answer() {
    let back = T0 + 10 + IDLE + 1;
    // Rows: lines the host writes after the returning prompt's hook, then
    // the answers for t1 and t2 (each delivered before the return).
    #[rustfmt::skip]
    type Row = (&'static str, Vec<String>, fn(&Check) -> bool, fn(&Check) -> bool);
    let present: fn(&Check) -> bool = |c| *c == Check::Present;
    let withdrawn: fn(&Check) -> bool = |c| matches!(c, Check::Withdrawn(_));
    let ended: fn(&Check) -> bool = |c| matches!(c, Check::EndedAll(_));
    let rows: Vec<Row> = vec![
        ("nothing on disk yet", vec![], unavailable, unavailable),
        ("the prompt only", vec![prompt("u2")], unavailable, unavailable),
        ("no cut, no edit", vec![prompt("u2"), answer("null")], present, present),
        (
            "the cut record, then the answer counting it",
            vec![
                prompt("u2"),
                r#"{"type":"attachment","attachment":{"type":"tool_results_cut","callIds":["t1"]}}"#.into(),
                answer(r#"{"applied_edits":[],"client_cut_tool_uses":1}"#),
            ],
            withdrawn,
            present,
        ),
        // Every delivery ends, once: the journal records it (`ends`).
        (
            "a cut counted, no record",
            vec![prompt("u2"), answer(r#"{"applied_edits":[],"client_cut_tool_uses":18}"#)],
            ended,
            present,
        ),
        (
            "a clearing edit sent",
            vec![prompt("u2"), answer(r#"{"applied_edits":[],"client_sent_keep_tool_uses":12}"#)],
            ended,
            present,
        ),
        // An earlier turn's answer flushed late, before the prompt line.
        ("an answer before the prompt line", vec![answer("null"), prompt("u2")], unavailable, unavailable),
    ];
    for (what, lines, t1, t2) in rows {
        let w = W::new();
        w.turn_by(Turn::Prompt, T0, Some(7));
        w.append(&[&prompt("u1"), &tool_use("t1"), &tool_use("t2")]);
        w.turn_by(Turn::Stop, T0 + 10, Some(7));
        assert!(!w.turn_by(Turn::Prompt, back, Some(7)), "{what}: nothing ends at the return itself");
        w.append(&lines.iter().map(String::as_str).collect::<Vec<_>>());
        let a1 = w.ask_by("t1", T0 + 1, back + 5, Some(7));
        let a2 = w.ask_by("t2", T0 + 2, back + 6, Some(7));
        assert!(t1(&a1) && t2(&a2), "{what}: {a1:?} {a2:?}");
        assert_eq!(w.ends.get(), ended(&a1) as u32, "{what}");
        // A delivery after the return is not in doubt.
        assert_eq!(w.ask_by("t9", back + 1, back + 7, Some(7)), Check::Present, "{what}");
    }
    // Not provisional: a second process of the session known to the
    // witness (its answers could be the ones on disk): the returning
    // process's contexts end; a process not named: everything ends; a turn
    // of another process while a return is pending: the returning
    // process's contexts end.
    let w = W::new();
    w.turn_by(Turn::Prompt, T0, Some(7));
    w.turn_by(Turn::Start { idle_s: Some(0) }, T0, Some(8));
    assert_eq!(w.ends_by(Turn::Prompt, back, Some(7)), [Reach::Proc(7)], "two processes");
    let w = W::new();
    w.turn(Turn::Prompt, T0);
    assert_eq!(w.ends_by(Turn::Prompt, back, None), [Reach::All], "no CLAUDE_PID");
    let w = W::new();
    w.turn_by(Turn::Prompt, T0, Some(7));
    assert!(!w.turn_by(Turn::Prompt, back, Some(7)));
    assert_eq!(w.ends_by(Turn::Stop, back + 1, Some(8)), [Reach::Proc(7)], "another process while pending");
}

/// The asking call's own line (an MCP call of the main agent) is the
/// return's first answer or comes after it, in the host's queue order: a
/// question during a pending return waits for it (`NotYet`) instead of
/// withholding at once, and is settled by it; a line that settles nothing
/// (it came before the returning prompt's line) ends the wait, withheld
/// as before. Before, a pending return withheld at once.
#[test]
fn a_pending_return_waits_for_the_asking_calls_line() {
    let back = T0 + 10 + IDLE + 1;
    let ask = |w: &W| {
        let q = Question {
            call_id: Some("t1"),
            delivered_ms: T0 + 1,
            idle_ms: Some(IDLE),
            proc: Some(7),
            asking: Some("t3"),
            ..Question::catch_up(Host::ClaudeCode, "S", back + 5)
        };
        check(&w.data, &q, far(), |_| Ok(()))
    };
    let returned = || {
        let w = W::new();
        w.turn_by(Turn::Prompt, T0, Some(7));
        w.append(&[&prompt("u1"), &tool_use("t1")]);
        w.turn_by(Turn::Stop, T0 + 10, Some(7));
        assert!(!w.turn_by(Turn::Prompt, back, Some(7)), "provisional");
        w
    };
    let w = returned();
    assert_eq!(ask(&w), Check::NotYet, "nothing on disk yet");
    w.append(&[&prompt("u2")]);
    assert_eq!(ask(&w), Check::NotYet, "the prompt only");
    w.append(&[&tool_use("t3")]);
    assert_eq!(ask(&w), Check::Present, "settled by the call's own answer");
    let w = returned();
    w.append(&[&tool_use("t3"), &prompt("u2")]);
    assert!(unavailable(&ask(&w)), "caught up, not settled: withheld, no longer waited");
}

/// A resume after the idle threshold (`SessionStart` with
/// `seconds_since_last_response` past it) by the only process the witness
/// knows, the earlier ones having said `SessionEnd`: the host cuts at the
/// resumed process's first prompt (the `idle-cut` fixture, resumed), so
/// that prompt's return is provisional as in a live process, settled by the
/// host's first answer. Before, the start ended every earlier delivery. A
/// process that did not end (its `SessionEnd` hook lost, or still running)
/// keeps the old rule.
#[test]
fn a_resume_after_the_old_process_ended_is_settled_by_the_hosts_first_answer() {
    let gap_s = IDLE / 1000 + 100;
    let start = T0 + 10 + gap_s * 1000;
    let setup = |end_old: bool| {
        let w = W::new();
        w.turn_by(Turn::Prompt, T0, Some(7));
        w.append(&[&prompt("u1"), &tool_use("t1"), &tool_use("t2")]);
        w.turn_by(Turn::Stop, T0 + 10, Some(7));
        if end_old {
            assert!(!w.turn_by(Turn::End, T0 + 20, Some(7)), "an end ends nothing");
        }
        w
    };
    let w = setup(true);
    assert!(!w.turn_by(Turn::Start { idle_s: Some(gap_s) }, start, Some(8)), "nothing ends at the start");
    // Until the returning prompt's answer: silent past the threshold, no stub.
    assert!(unavailable(&w.ask_by("t1", T0 + 1, start + 1, Some(8))));
    assert!(!w.turn_by(Turn::Prompt, start + 2_000, Some(8)), "the return is provisional");
    assert!(unavailable(&w.ask_by("t1", T0 + 1, start + 2_001, Some(8))));
    w.append(&[
        &prompt("u2"),
        r#"{"type":"attachment","attachment":{"type":"tool_results_cut","callIds":["t1"]}}"#,
        &answer(r#"{"applied_edits":[],"client_cut_tool_uses":1}"#),
    ]);
    assert!(matches!(w.ask_by("t1", T0 + 1, start + 2_005, Some(8)), Check::Withdrawn(_)));
    assert_eq!(w.ask_by("t2", T0 + 2, start + 2_006, Some(8)), Check::Present);
    assert_eq!(w.ends.get(), 0);
    // A clearing sent at the return ends everything, as for a live process.
    let w = setup(true);
    w.turn_by(Turn::Start { idle_s: Some(gap_s) }, start, Some(8));
    w.turn_by(Turn::Prompt, start + 2_000, Some(8));
    w.append(&[&prompt("u2"), &answer(r#"{"applied_edits":[],"client_sent_keep_tool_uses":12}"#)]);
    assert!(matches!(w.ask_by("t2", T0 + 2, start + 2_005, Some(8)), Check::EndedAll(_)));
    // The old process never said it ended: the start ends nothing, the
    // resumed process's first prompt ends its contexts (not provisional:
    // the other's lines may interleave).
    let w = setup(false);
    assert!(!w.turn_by(Turn::Start { idle_s: Some(gap_s) }, start, Some(8)), "another process known");
    assert!(unavailable(&w.ask_by("t1", T0 + 1, start + 1, Some(8))), "silent past the threshold");
    assert_eq!(w.ends_by(Turn::Prompt, start + 2_000, Some(8)), [Reach::Proc(8)]);
    // No CLAUDE_PID on the start: as before.
    let w = setup(true);
    assert!(w.turn(Turn::Start { idle_s: Some(gap_s) }, start), "no CLAUDE_PID");
    // Under the threshold: nothing ends, the prompt is no return.
    let w = setup(true);
    assert!(!w.turn_by(Turn::Start { idle_s: Some(60) }, T0 + 70_000, Some(8)));
    // Another process known, or its end while a return is pending: the
    // returning process's contexts end.
    let w = setup(true);
    w.turn_by(Turn::Start { idle_s: Some(0) }, T0 + 30, Some(9));
    w.turn_by(Turn::Start { idle_s: Some(gap_s) }, start, Some(8));
    assert_eq!(w.ends_by(Turn::Prompt, start + 2_000, Some(8)), [Reach::Proc(8)], "process 9 is known: not alone");
    let w = setup(true);
    w.turn_by(Turn::Start { idle_s: Some(gap_s) }, start, Some(8));
    assert!(!w.turn_by(Turn::Prompt, start + 2_000, Some(8)));
    assert_eq!(w.ends_by(Turn::End, start + 2_001, Some(5)), [Reach::Proc(8)], "another process's end while pending");
    assert!(load(&w.data, Host::ClaudeCode, "S").unwrap().unwrap().track.pending.is_none(), "the moot return is over");
    // An end with no witness yet writes nothing of its own.
    let w = W::new();
    assert!(!w.turn_by(Turn::End, T0, Some(7)));
    assert!(load(&w.data, Host::ClaudeCode, "S").unwrap().is_none());
}

/// An idle return of one host process of two, its prompt hook naming the
/// prompt id its prompt line carries: provisional for that process only.
/// The other process's own deliveries stand meanwhile; the returning
/// process's wait for its own next call's line after its prompt line, and
/// are settled by what was read from that prompt line on
/// (`witness::idle`). Before, the return ended every delivery of both.
#[test]
fn a_return_of_one_process_of_several_is_settled_by_its_own_next_call() {
    let back = T0 + IDLE + 100;
    let line = |id: &str, uuid: &str| {
        format!(r#"{{"type":"user","uuid":"{uuid}","promptId":"{id}","message":{{"role":"user","content":"x"}}}}"#)
    };
    let cut =
        |id: &str| format!(r#"{{"type":"attachment","attachment":{{"type":"tool_results_cut","callIds":["{id}"]}}}}"#);
    // (what, the lines after the return's hook, 7's re-read of t1, of t2, journaled ends;
    // once an end is journaled the witness has nothing more to say: the
    // read path's journal ends t2, `Reach::Proc(7)`)
    type Row = (&'static str, Vec<String>, fn(&Check) -> bool, fn(&Check) -> bool, u32);
    let present: fn(&Check) -> bool = |c| *c == Check::Present;
    let withdrawn: fn(&Check) -> bool = |c| matches!(c, Check::Withdrawn(_));
    let ended: fn(&Check) -> bool = |c| matches!(c, Check::EndedAll(_));
    let unavailable: fn(&Check) -> bool = |c| matches!(c, Check::Unavailable(_));
    #[rustfmt::skip]
    let rows: Vec<Row> = vec![
        ("its cut, counted", vec![line("r7", "u7"), cut("t1"), answer(r#"{"client_cut_tool_uses":1}"#), tool_use("t9")], withdrawn, present, 0),
        ("nothing cut", vec![line("r7", "u7"), answer("null"), tool_use("t9")], present, present, 0),
        ("a clearing edit sent", vec![line("r7", "u7"), answer(r#"{"client_sent_keep_tool_uses":12}"#), tool_use("t9")], ended, present, 1),
        ("cut results counted, no record", vec![line("r7", "u7"), answer(r#"{"client_cut_tool_uses":2}"#), tool_use("t9")], ended, present, 1),
        // The other's answer, between: it can only make it end more.
        ("the other's answer with an edit", vec![line("r7", "u7"), answer(r#"{"client_sent_keep_tool_uses":12}"#), answer("null"), tool_use("t9")], ended, present, 1),
        // Its call's line before its prompt line: an earlier turn's.
        ("its call before its prompt line", vec![tool_use("t9"), line("r7", "u7"), answer("null")], unavailable, unavailable, 0),
        ("another's prompt line only", vec![line("r8", "u8"), answer("null"), tool_use("t9")], unavailable, unavailable, 0),
    ];
    for (what, lines, t1, t2, ends) in rows {
        let w = W::new();
        w.turn_by(Turn::Prompt, T0, Some(7));
        w.append(&[&prompt("u1"), &tool_use("t1"), &tool_use("t2")]);
        w.turn_by(Turn::Stop, T0 + 10, Some(7));
        w.turn_by(Turn::Start { idle_s: Some(0) }, T0 + 20, Some(8));
        w.append(&[&tool_use("t8")]);
        w.turn_by(Turn::Prompt, back - 1_000, Some(8));
        assert!(w.prompt_by(back, 7, "r7").is_empty(), "{what}: nothing ends at the return itself");
        // Before its lines: 8's own delivery stands, 7's waits.
        assert_eq!(w.ask_own("t8", T0 + 21, back + 1, 8, "t8"), Check::Present, "{what}");
        assert_eq!(w.ask_own("t1", T0 + 1, back + 2, 7, "t9"), Check::NotYet, "{what}");
        // Not known whose (a copy loaded, a window naming no process): waits too.
        assert!(matches!(w.ask_by("t8", T0 + 21, back + 3, Some(8)), Check::NotYet | Check::Unavailable(_)), "{what}");
        w.append(&lines.iter().map(String::as_str).collect::<Vec<_>>());
        let a1 = w.ask_own("t1", T0 + 1, back + 5, 7, "t9");
        let a2 = w.ask_own("t2", T0 + 2, back + 6, 7, "t9");
        assert!(t1(&a1) && t2(&a2), "{what}: {a1:?} {a2:?}");
        assert_eq!(w.ends.get(), ends, "{what}");
        assert_eq!(w.ask_own("t8", T0 + 21, back + 7, 8, "t8"), Check::Present, "{what}: the other's stands");
    }
    // The prompt id named by the other process's hook too: it no longer
    // proves whose the prompt line is, and the return is not settled.
    let w = W::new();
    w.turn_by(Turn::Prompt, T0, Some(7));
    w.append(&[&prompt("u1"), &tool_use("t1")]);
    w.turn_by(Turn::Stop, T0 + 10, Some(7));
    w.turn_by(Turn::Start { idle_s: Some(0) }, T0 + 20, Some(8));
    w.turn_by(Turn::Prompt, back - 1_000, Some(8));
    assert!(w.prompt_by(back, 7, "r7").is_empty());
    assert!(w.prompt_by(back + 1, 8, "r7").is_empty());
    w.append(&[&line("r7", "u7"), &answer("null"), &tool_use("t9")]);
    assert!(matches!(w.ask_own("t1", T0 + 1, back + 5, 7, "t9"), Check::Unavailable(_)), "a shared prompt id");
}

/// What a turn does to earlier deliveries, pure ([`turn_end`]): the rows
/// of docs/DELIVERY.md §8 for starts, prompts and ends, by which host
/// processes the witness knows, whether every turn hook named its process
/// ([`Lives`]), and whether a return is pending. The rows marked "was All"
/// ended every delivery of the conversation before an idle return was
/// narrowed to the returning process (`TurnEnd::Proc`).
#[test]
fn turn_end_table() {
    use leanctx::witness::file::{State, TurnEnd, TurnEnds, turn_end};
    use leanctx::witness::idle::{MAX_RETURNS, Return};
    use leanctx::witness::lives::{Lives, Seen};
    use leanctx::witness::scan::Pending;
    const T: &str = "/t.jsonl";
    // How the turn hooks named their processes: each (`Named`), one did
    // not (`Anonymous`), more than kept (`Crowded`), or a state from before
    // they were kept (`Unkept`).
    #[derive(Clone, Copy)]
    enum L {
        Named,
        Anonymous,
        Crowded,
        Unkept,
    }
    let back = T0 + IDLE;
    let st = |procs: &[(u32, u64)], pending: Option<u32>, l: L| {
        let lives = match l {
            L::Unkept => None,
            l => {
                let mut v = Lives::default();
                for &(p, _) in procs {
                    v.saw(Some(p), Seen::Turn, T0);
                }
                match l {
                    L::Anonymous => v.saw(None, Seen::Turn, T0),
                    L::Crowded => v.crowded = true,
                    _ => {}
                }
                Some(v)
            }
        };
        State {
            transcript: T.into(),
            procs: procs.to_vec(),
            last_turn_ms: procs.iter().map(|&(_, t)| t).max().unwrap_or(T0),
            since_ms: T0,
            lives,
            track: leanctx::witness::scan::Track {
                pending: pending.map(|pid| Pending { from: 1, at_ms: T0, pid, due: 1, seen: 0, cut_seen: false }),
                ..Default::default()
            },
            ..State::default()
        }
    };
    let quiet = |ps: &[u32]| ps.iter().map(|&p| (p, T0)).collect::<Vec<_>>();
    let past = Turn::Start { idle_s: Some(IDLE / 1000) };
    let ends = |turn, moot| TurnEnds { turn, moot };
    let (nothing, all, prov) = (ends(TurnEnd::None, None), ends(TurnEnd::All, None), ends(TurnEnd::Provisional, None));
    let proc = |p| ends(TurnEnd::Proc(p), None);
    use L::*;
    #[rustfmt::skip]
    let rows: Vec<(&str, State, Turn, Option<u32>, TurnEnds)> = vec![
        ("resume past the threshold, the only process", st(&[], None, Named), past, Some(8), nothing),
        ("resume past, itself known already", st(&quiet(&[8]), None, Named), past, Some(8), nothing),
        // Its first prompt decides (its clock: the last response it loaded).
        ("resume past, another process known (was All)", st(&quiet(&[7]), None, Named), past, Some(8), nothing),
        ("resume past, another known, a hook named none", st(&quiet(&[7]), None, Anonymous), past, Some(8), all),
        ("resume past, another known, more than kept", st(&quiet(&[7]), None, Crowded), past, Some(8), all),
        ("resume past, another known, a state from before", st(&quiet(&[7]), None, Unkept), past, Some(8), all),
        ("resume past, no CLAUDE_PID", st(&[], None, Named), past, None, all),
        ("resume past, another's return pending (was All)", st(&[], Some(7), Named), past, Some(8), ends(TurnEnd::None, Some(7))),
        ("resume past, another's return pending, unkept", st(&[], Some(7), Unkept), past, Some(8), all),
        ("resume under the threshold, another known", st(&quiet(&[7]), None, Named), Turn::Start { idle_s: Some(60) }, Some(8), nothing),
        ("prompt after the silence, alone", st(&quiet(&[8]), None, Named), Turn::Prompt, Some(8), prov),
        ("prompt after the silence, alone, unkept", st(&quiet(&[8]), None, Unkept), Turn::Prompt, Some(8), prov),
        ("prompt after the silence, two known (was All)", st(&quiet(&[7, 8]), None, Named), Turn::Prompt, Some(8), proc(8)),
        ("prompt after the silence, two known, a hook named none", st(&quiet(&[7, 8]), None, Anonymous), Turn::Prompt, Some(8), all),
        ("prompt after the silence, two known, more than kept", st(&quiet(&[7, 8]), None, Crowded), Turn::Prompt, Some(8), all),
        ("prompt after the silence, two known, unkept", st(&quiet(&[7, 8]), None, Unkept), Turn::Prompt, Some(8), all),
        ("prompt after the silence, no CLAUDE_PID", st(&quiet(&[7, 8]), None, Named), Turn::Prompt, None, all),
        ("prompt of a process not silent, the other silent", st(&[(7, T0), (8, back - 1)], None, Named), Turn::Prompt, Some(8), nothing),
        ("prompt of the silent one, the other not", st(&[(7, back - 1), (8, T0)], None, Named), Turn::Prompt, Some(8), proc(8)),
        // The conversation's clock is the other's: this one's silence is unknown.
        ("prompt of a process with no clock, another active", st(&[(7, back - 1)], None, Named), Turn::Prompt, Some(9), proc(9)),
        ("end of the only process", st(&quiet(&[7]), None, Named), Turn::End, Some(7), nothing),
        ("end of another while a return is pending (was All)", st(&quiet(&[7, 8]), Some(8), Named), Turn::End, Some(7), ends(TurnEnd::None, Some(8))),
        ("end of another while a return is pending, unkept", st(&quiet(&[7, 8]), Some(8), Unkept), Turn::End, Some(7), all),
        ("end of the returning process itself", st(&quiet(&[8]), Some(8), Named), Turn::End, Some(8), nothing),
        ("stop of another while a return is pending", st(&[(7, back - 1), (8, T0)], Some(8), Named), Turn::Stop, Some(7), ends(TurnEnd::None, Some(8))),
        // Its return cannot be settled while another's lines may interleave.
        ("a return alone while another's is pending", st(&quiet(&[8]), Some(7), Named), Turn::Prompt, Some(8), ends(TurnEnd::Proc(8), Some(7))),
    ];
    for (what, old, turn, pid, want) in rows {
        assert_eq!(turn_end(Some(&old), T, turn, back, pid, Some(IDLE), false), want, "{what}");
    }
    assert_eq!(turn_end(None, T, Turn::End, back, Some(7), Some(IDLE), false), nothing, "no witness yet");
    // A prompt hook naming the prompt id its process made (its line carries
    // it): the return of one process of several is provisional for it.
    let waiting = |mut s: State, pids: &[u32]| {
        s.returns = pids.iter().map(|&pid| Return { pid, prompt_id: format!("p{pid}"), ..Return::default() }).collect();
        s
    };
    let two = || st(&quiet(&[7, 8]), None, Named);
    let of = |p| ends(TurnEnd::ProvisionalOf(p), None);
    let full: Vec<u32> = (100..100 + MAX_RETURNS as u32).collect();
    #[rustfmt::skip]
    let minted: Vec<(&str, State, Turn, Option<u32>, TurnEnds)> = vec![
        ("prompt after the silence, two known", two(), Turn::Prompt, Some(8), of(8)),
        ("... alone: as before", st(&quiet(&[8]), None, Named), Turn::Prompt, Some(8), prov),
        ("... a hook named none", st(&quiet(&[7, 8]), None, Anonymous), Turn::Prompt, Some(8), all),
        ("... its own return still waiting", waiting(two(), &[8]), Turn::Prompt, Some(8), proc(8)),
        ("... another's return waiting: not moot", waiting(two(), &[7]), Turn::Prompt, Some(8), of(8)),
        ("... as many returns waiting as kept", waiting(two(), &full), Turn::Prompt, Some(8), proc(8)),
        ("a prompt of another, not silent, a return waiting", waiting(st(&[(7, back - 1), (8, T0)], None, Named), &[8]), Turn::Prompt, Some(7), nothing),
        ("its own prompt, not silent, its return waiting", waiting(st(&[(7, T0), (8, back - 1)], None, Named), &[8]), Turn::Prompt, Some(8), nothing),
        ("its start while its return waits", waiting(two(), &[8]), Turn::Start { idle_s: Some(0) }, Some(8), proc(8)),
        ("its end while its return waits", waiting(two(), &[8]), Turn::End, Some(8), proc(8)),
        ("another's end while a return waits", waiting(two(), &[8]), Turn::End, Some(7), nothing),
    ];
    for (what, old, turn, pid, want) in minted {
        assert_eq!(turn_end(Some(&old), T, turn, back, pid, Some(IDLE), true), want, "{what}");
    }
    // What is journaled: the widest end first, each process once.
    #[rustfmt::skip]
    let journaled: [(TurnEnds, Vec<Reach<'static>>); 6] = [
        (nothing, vec![]),
        (ends(TurnEnd::All, Some(7)), vec![Reach::All]),
        (ends(TurnEnd::Proc(8), Some(7)), vec![Reach::Proc(8), Reach::Proc(7)]),
        (ends(TurnEnd::Proc(8), Some(8)), vec![Reach::Proc(8)]),
        (ends(TurnEnd::Provisional, Some(7)), vec![Reach::Proc(7)]),
        (ends(TurnEnd::ProvisionalOf(8), None), vec![]),
    ];
    for (e, want) in journaled {
        assert_eq!(e.reaches(), want, "{e:?}");
    }
}
