//! leanctx benchmark harness (targets and method: benches/README.md).
//!
//! `cargo bench --bench hooks` runs, in one go and on this machine:
//! 1. processes: every candidate spawned as a host spawns a hook (fresh
//!    process, payload on stdin, stdout read, reaped), round-robin so drift
//!    hits all alike, against a floor binary built here with the release
//!    profile; p50/p90/p99, ratio to the floor, peak RSS;
//! 2. the read path in process, with 100 / 10,000 / 1,000,000 events
//!    written before it;
//! 3. scale: 64 hook processes at once, with readers running.
//!
//! Medians and ratios are reported; nothing here fails on a slow machine.
//! `LEANCTX_BENCH_SMOKE=1` (or `-- --smoke`): a few iterations, for CI.
//! `-- --out FILE`: also write the report (markdown) to FILE.

mod micro;
mod quiet;
mod scale;
mod serve;
mod spawn;
mod stats;

use spawn::{Spec, Stats, Tools, fmt_dur};
use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The leanctx under test: the release build cargo made for this bench, or
/// `$LEANCTX_BENCH_BIN`.
pub fn bin() -> PathBuf {
    std::env::var_os("LEANCTX_BENCH_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_leanctx")))
}

/// This thread's CPU time: what the work cost, whatever else the machine
/// runs (the shared machines these runs share are often 8x oversubscribed,
/// where wall time measures the scheduler).
#[cfg(unix)]
pub fn cpu() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid timespec to fill, and a clock every Unix here has.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

#[cfg(not(unix))]
pub fn cpu() -> Duration {
    Duration::ZERO
}

/// Wall and thread CPU time of one timed region.
pub struct Timer {
    wall: Instant,
    cpu: Duration,
}

impl Timer {
    pub fn start() -> Timer {
        let cpu = cpu();
        Timer { wall: Instant::now(), cpu }
    }

    /// (wall, CPU) since [`Timer::start`].
    pub fn stop(self) -> (Duration, Duration) {
        let wall = self.wall.elapsed();
        (wall, cpu().saturating_sub(self.cpu))
    }
}

/// How much to run.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    pub smoke: bool,
    /// Timed rounds (each candidate once per round).
    pub rounds: usize,
    pub warmup: usize,
    /// RSS samples per candidate.
    pub rss_runs: usize,
    /// In-process iterations per operation and journal size.
    pub micro_iters: usize,
    pub micro_sizes: &'static [usize],
    /// Bursts of 64 processes (each for the floor and for leanctx).
    pub bursts: usize,
}

impl Config {
    fn full() -> Config {
        Config {
            smoke: false,
            rounds: 1500,
            warmup: 50,
            rss_runs: 5,
            micro_iters: 5000,
            micro_sizes: &[100, 10_000, 1_000_000],
            bursts: 30,
        }
    }

    fn smoke() -> Config {
        Config {
            smoke: true,
            rounds: 15,
            warmup: 3,
            rss_runs: 1,
            micro_iters: 30,
            micro_sizes: &[100, 1_000, 10_000],
            bursts: 1,
        }
    }
}

/// Which §8 target a row is held to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    /// Hook invocation: p50 ≤ 1.25× floor, p99 ≤ 2× floor, RSS ≤ 6 MiB.
    Hook,
    /// CLI decision: p50 ≤ 1.3× floor.
    Cli,
    None,
}

struct Candidate {
    name: String,
    group: &'static str,
    spec: Spec,
    target: Target,
    /// Exit codes that mean "worked".
    ok_codes: &'static [i32],
    samples: Vec<Duration>,
    /// CPU time and minor page faults of each timed run (rusage).
    cpu: Vec<Duration>,
    faults: Vec<u64>,
    rss_kib: Option<u64>,
    /// Judged against this floor candidate (by name) instead of the first:
    /// a floor fed the same stdin, for a payload far larger than the usual.
    own_floor: Option<&'static str>,
    /// Append this many bytes of transcript lines to this file before each
    /// run (untimed): a host's transcript growing between questions.
    grow: Option<(PathBuf, usize)>,
}

/// The transcript the witness benchmark starts from, and what is appended
/// before each question (issue 22: 50 MB, 100 KB).
const TRANSCRIPT_BYTES: usize = 50 << 20;
const GROWTH_BYTES: usize = 100 << 10;

fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// Transcript-like JSON lines (assistant text, tool results, request
/// replays of 1-8 KB, no withdrawal record), `n` bytes or a little more.
fn transcript_lines(n: usize, seed: &mut u64) -> String {
    let mut s = String::with_capacity(n + 9000);
    while s.len() < n {
        *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let len = 1000 + (*seed >> 33) as usize % 7000;
        let kind = ["assistant", "user", "api-request-blob", "progress"][(*seed >> 20) as usize % 4];
        s.push_str(&format!(
            r#"{{"type":"{kind}","uuid":"u{}","message":{{"role":"x","content":[{{"type":"text","text":"{}"}}]}}}}"#,
            *seed,
            "x".repeat(len)
        ));
        s.push('\n');
    }
    s
}

fn write_transcript(path: &Path, n: usize) {
    let mut seed = 7;
    let mut text = String::new();
    while text.len() < n {
        text.push_str(&transcript_lines(1 << 20, &mut seed));
    }
    std::fs::write(path, text).unwrap_or_else(|e| fail(&format!("{}: {e}", path.display())));
}

/// Appends the assistant line naming `call`'s `_meta["claudecode/toolUseId"]`.
fn host_writes_call(transcript: &Path, call: &[u8]) {
    use std::io::Write as _;
    let call: serde_json::Value = serde_json::from_slice(call).unwrap_or_else(|e| fail(&format!("call payload: {e}")));
    let id = call["params"]["_meta"]["claudecode/toolUseId"]
        .as_str()
        .unwrap_or_else(|| fail("call payload: no claudecode/toolUseId"));
    let line = serde_json::json!({"type": "assistant", "message": {"content": [
        {"type": "tool_use", "id": id, "name": "mcp__ctx__ctx_read", "input": {}}]}});
    let mut f =
        std::fs::OpenOptions::new().append(true).open(transcript).unwrap_or_else(|e| fail(&format!("transcript: {e}")));
    writeln!(f, "{line}").unwrap_or_else(|e| fail(&format!("transcript: {e}")));
}

fn grow(path: &Path, n: usize) {
    use std::io::Write as _;
    static SEED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(11);
    let mut seed = SEED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap_or_else(|e| fail(&format!("{e}")));
    f.write_all(transcript_lines(n, &mut seed).as_bytes()).unwrap_or_else(|e| fail(&format!("{e}")));
}

fn payloads_dir() -> PathBuf {
    if let Some(p) = std::env::var_os("LEANCTX_BENCH_PAYLOADS") {
        return PathBuf::from(p);
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/payloads");
    if dir.is_dir() {
        return dir;
    }
    fail("host payload fixtures not found (tests/fixtures/payloads or $LEANCTX_BENCH_PAYLOADS)")
}

pub fn fail(msg: &str) -> ! {
    eprintln!("\nleanctx bench: {msg}");
    std::process::exit(1)
}

fn read_payload(dir: &Path, rel: &str) -> Vec<u8> {
    std::fs::read(dir.join(rel)).unwrap_or_else(|e| fail(&format!("{rel}: {e}")))
}

/// The environment every candidate gets: nothing from ours but PATH.
fn base_env(home: &Path, data: &Path) -> Vec<(OsString, OsString)> {
    vec![
        ("PATH".into(), std::env::var_os("PATH").unwrap_or_default()),
        ("HOME".into(), home.into()),
        ("LEAN_CTX_DATA_DIR".into(), data.into()),
    ]
}

/// The session of the Claude Code fixtures.
const CLAUDE_SESSION: &str = "68bfdc56-c5ac-4f7e-b000-18c5bbb6c9d7";

/// The MCP call the Cursor fixture's hook saw (same tool and arguments).
const CURSOR_CALL: &[u8] = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ctx_read","arguments":{"path":"src/main.rs","mode":"map"}}}"#;

/// A policy like a user would write: two rules, the second matches ctx_*.
const POLICY: &str = r#"{ "rules": [
  { "server": "github", "tool": "delete_*", "action": "deny", "message": "No deletes from agents" },
  { "tool": "ctx_*", "action": "allow" }
] }
"#;

/// (host, gated MCP call, session start, compaction)
const HOSTS: &[(&str, &str, &str, &str)] = &[
    (
        "claude-code",
        "claude/baseline/07-PreToolUse.json",
        "claude/baseline/01-SessionStart.json",
        "claude/resume-compact/15-PreCompact.json",
    ),
    (
        "codex",
        "codex/baseline/05-PreToolUse.json",
        "codex/baseline/01-SessionStart.json",
        "codex/resume-compact/11-PreCompact.json",
    ),
    (
        "cursor",
        "cursor/composed/03-beforeMCPExecution-string-input.json",
        "cursor/composed/01-sessionStart.json",
        "cursor/composed/07-preCompact.json",
    ),
    (
        "codebuddy",
        "codebuddy/composed/03-PreToolUse-mcp.json",
        "codebuddy/composed/01-SessionStart.json",
        "codebuddy/composed/04-PreCompact.json",
    ),
];

/// Find the real python3 (not a pyenv/asdf shim script, which would add a
/// shell and the version manager to every run).
fn find_python() -> Option<PathBuf> {
    let o = std::process::Command::new("python3").args(["-c", "import sys; print(sys.executable)"]).output().ok()?;
    let p = PathBuf::from(String::from_utf8_lossy(&o.stdout).trim());
    (o.status.success() && p.is_file()).then_some(p)
}

fn have(prog: &str) -> bool {
    std::process::Command::new(prog)
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

struct Sandbox {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
    project: PathBuf,
}

impl Sandbox {
    fn new() -> Sandbox {
        let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
        let _ = std::fs::create_dir_all(base);
        let tmp = tempfile::Builder::new()
            .prefix("leanctx-bench-")
            .tempdir_in(base)
            .unwrap_or_else(|e| fail(&format!("temp dir: {e}")));
        let root = tmp.path().to_path_buf();
        let home = root.join("home");
        let project = root.join("project");
        for d in [&home, &project] {
            std::fs::create_dir_all(d).unwrap_or_else(|e| fail(&format!("{}: {e}", d.display())));
        }
        Sandbox { _tmp: tmp, root, home, project }
    }

    /// A data dir (0700, as leanctx wants it).
    fn data_dir(&self, name: &str) -> PathBuf {
        let d = self.root.join(name);
        leanctx::fsx::create_private_dir(&d, true).unwrap_or_else(|e| fail(&format!("{}: {e}", d.display())));
        d
    }
}

fn cand(name: String, group: &'static str, spec: Spec, target: Target, ok_codes: &'static [i32]) -> Candidate {
    Candidate {
        name,
        group,
        spec,
        target,
        ok_codes,
        samples: Vec::new(),
        cpu: Vec::new(),
        faults: Vec::new(),
        rss_kib: None,
        own_floor: None,
        grow: None,
    }
}

fn candidates(sb: &Sandbox, tools: &Tools, peers_wanted: bool, notes: &mut Vec<String>) -> Vec<Candidate> {
    let pl = payloads_dir();
    let data = sb.data_dir("data");
    let data_policy = sb.data_dir("data-policy");
    std::fs::write(data_policy.join("gate.json"), POLICY).unwrap_or_else(|e| fail(&format!("gate.json: {e}")));
    let peer_data = sb.data_dir("peer-data");
    let leanctx = bin();
    let spec = |program: &Path, args: &[&str], data: &Path, stdin: Vec<u8>| Spec {
        program: program.to_path_buf(),
        args: args.iter().map(OsString::from).collect(),
        env: base_env(&sb.home, data),
        cwd: sb.project.clone(),
        stdin,
    };
    let mut out = Vec::new();
    let mcp_payload = read_payload(&pl, HOSTS[0].1);
    out.push(cand(
        "floor (reads stdin, prints {})".into(),
        "floor",
        spec(&tools.floor, &[], &data, mcp_payload),
        Target::None,
        &[0],
    ));
    if let Some(f) = &tools.floor_static {
        let p = read_payload(&pl, HOSTS[0].1);
        out.push(cand(STATIC_FLOOR.into(), "floor", spec(f, &[], &data, p), Target::None, &[0]));
    }

    for &(host, mcp, _, _) in HOSTS {
        let p = read_payload(&pl, mcp);
        out.push(cand(
            format!("hook {host}: gated MCP call"),
            "hook",
            spec(&leanctx, &["hook", host], &data, p.clone()),
            Target::Hook,
            &[0],
        ));
        out.push(cand(
            format!("hook {host}: gated MCP call, policy file"),
            "hook",
            spec(&leanctx, &["hook", host], &data_policy, p),
            Target::Hook,
            &[0],
        ));
    }
    for &(host, _, start, _) in HOSTS {
        out.push(cand(
            format!("hook {host}: session start"),
            "hook",
            spec(&leanctx, &["hook", host], &data, read_payload(&pl, start)),
            Target::Hook,
            &[0],
        ));
    }
    for &(host, _, _, compact) in HOSTS {
        out.push(cand(
            format!("hook {host}: compaction"),
            "hook",
            spec(&leanctx, &["hook", host], &data, read_payload(&pl, compact)),
            Target::Hook,
            &[0],
        ));
    }

    let at = (leanctx::base::clock::now_ms() - 60_000).to_string();

    // The read path through the CLI, against the state the hooks above keep
    // writing (a live slot, four hosts' conversations, call records).
    let claude_session = CLAUDE_SESSION;
    out.push(cand(
        "cli scope check --delivered --at (slot)".into(),
        "cli",
        spec(&leanctx, &["scope", "check", "--delivered", claude_session, "--at", &at], &data, Vec::new()),
        Target::Cli,
        &[0, 1],
    ));
    out.push(cand(
        "cli scope check --call - (Claude tool-use id)".into(),
        "cli",
        spec(
            &leanctx,
            &["scope", "check", "--delivered", claude_session, "--at", &at, "--call", "-"],
            &data,
            read_payload(&pl, "claude/baseline/mcp-tools-call-1.json"),
        ),
        Target::Cli,
        &[0, 1],
    ));
    out.push(cand(
        "cli scope current --call - (Codex _meta)".into(),
        "cli",
        spec(
            &leanctx,
            &["scope", "current", "--call", "-"],
            &data,
            read_payload(&pl, "codex/baseline/mcp-tools-call-1.json"),
        ),
        Target::Cli,
        &[0, 1],
    ));
    let cursor_call = CURSOR_CALL;
    out.push(cand(
        "cli scope current --call - (Cursor fingerprint)".into(),
        "cli",
        spec(&leanctx, &["scope", "current", "--call", "-"], &data, cursor_call.to_vec()),
        Target::Cli,
        &[0, 1],
    ));

    ledger_candidates(sb, &pl, &data, &tools.floor, &spec, &mut out);
    if let Some(other) = compare_bin() {
        compare_rows(&other, &mut out);
        let (data_b, result_file) = (sb.data_dir("data-b"), sb.root.join("ledger-result.json"));
        witness_rows(sb, &pl, &other, "[B] ", &data_b, &result_file, &spec, &mut out);
    }

    if peers_wanted {
        peers(sb, &pl, &peer_data, notes, &mut out);
    } else {
        skip_peer(notes, "bash + jq and python3", "--no-peers given");
    }
    private_copies(sb, &mut out);
    out
}

/// Builds a candidate's spec: program, arguments, data dir, stdin.
type SpecFn<'a> = dyn Fn(&Path, &[&str], &Path, Vec<u8>) -> Spec + 'a;

/// The delivery ledger through the CLI, one process per read as a server
/// runs it, and the hook that carries what the model got of a 60 KB result.
/// The floor linked statically, as leanctx is on Linux (glibc): shown
/// beside the judge (the first row, the ordinary dynamically linked floor).
const STATIC_FLOOR: &str = "floor, statically linked (shown, not the judge)";

/// The floor fed the 60 KB `PostToolBatch` payload.
const BIG_FLOOR: &str = "floor, fed the 60 KB PostToolBatch payload";

fn ledger_candidates(sb: &Sandbox, pl: &Path, data: &Path, floor: &Path, spec: &SpecFn<'_>, out: &mut Vec<Candidate>) {
    let leanctx = bin();
    // A delivery of README.md to the Claude baseline call, acknowledged by
    // its PostToolBatch: what `stub` finds confirmed.
    let post = read_json_payload(pl, "claude/baseline/08-PostToolUse.json");
    let result = serde_json::json!({ "content": post["tool_response"] }).to_string();
    let result_file = sb.root.join("ledger-result.json");
    std::fs::write(&result_file, &result).unwrap_or_else(|e| fail(&format!("{}: {e}", result_file.display())));
    // The witness rows' still dir is its own: the hook rows compact the
    // fixtures' conversation and name their transcript, which turned the
    // row, once it shared `data`, into a "not delivered" answer.
    witness_rows(sb, pl, &leanctx, "", &sb.data_dir("data-still"), &result_file, spec, out);
    let rf = result_file.to_str().unwrap_or_else(|| fail("non-UTF-8 temp path"));
    let codex_call = read_payload(pl, "codex/baseline/mcp-tools-call-1.json");
    out.push(cand(
        "cli stub --call - --result FILE (Codex, not delivered: records)".into(),
        "cli",
        spec(
            &leanctx,
            &["stub", "--call", "-", "--key", "src/new.rs", "--version", "v1", "--result", rf],
            data,
            codex_call.clone(),
        ),
        Target::Cli,
        &[1],
    ));
    out.push(cand(
        "cli deliver --call - --result FILE (Codex)".into(),
        "cli",
        spec(
            &leanctx,
            &["deliver", "--call", "-", "--key", "src/other.rs", "--version", "v1", "--result", rf],
            data,
            codex_call,
        ),
        Target::Cli,
        &[0],
    ));
    // The 60 KB payload has to cross the pipe and be read whatever the hook
    // does with it: its own floor reads the same bytes, and the row is
    // judged against that floor (the first floor's ratio is shown too).
    let big = read_payload(pl, "claude/size-60k-annot500k/09-PostToolBatch.json");
    out.push(cand(BIG_FLOOR.into(), "floor", spec(floor, &[], data, big.clone()), Target::None, &[0]));
    let mut hook = cand(
        "hook claude-code: PostToolBatch with a 60 KB result (acknowledged)".into(),
        "hook",
        spec(&leanctx, &["hook", "claude-code"], data, big),
        Target::Cli,
        &[0],
    );
    hook.own_floor = Some(BIG_FLOOR);
    out.push(hook);
}

/// The session and tool-use id of the two `stub` rows' conversation: not
/// the fixtures' own, which the hook rows (and the filler below) use, so
/// that neither their compactions nor their transcript paths reach it.
const WITNESS_SESSION: &str = "5e55a0b1-57b5-4d2e-9c1a-0b3e7c9d2f41";
const WITNESS_TOOL_USE: &str = "toolu_bench_witness_0000000001";

/// A Claude fixture's bytes with its session and tool-use id made the
/// witness rows' own.
fn witness_payload(pl: &Path, rel: &str) -> Vec<u8> {
    let text = String::from_utf8(read_payload(pl, rel)).unwrap_or_else(|e| fail(&format!("{rel}: {e}")));
    text.replace(CLAUDE_SESSION, WITNESS_SESSION).replace("toolu_mock_3ea9fac1ab1948ea", WITNESS_TOOL_USE).into_bytes()
}

/// Fill `data`'s journal with the hook rows' own traffic (every host's
/// gated MCP call, session start and compaction, in turn) until what a
/// trim keeps has stopped growing (its call records at their bound) and
/// the journal stands just under its next trim point (`max(TRIM_MIN_BYTES,
/// 2 × kept)`, less `SEED_ROOM` for the records the seeding then adds):
/// the largest the journal of a data dir in such use gets, which every
/// question in it reads whole.
fn fill_journal(pl: &Path, leanctx: &Path, data: &Path, spec: &SpecFn<'_>) {
    use leanctx::state::journal::TRIM_MIN_BYTES;
    /// Room left under the trim point for the seeding's own records (a
    /// prompt, a call, a delivery, its acknowledgement: under 1 KiB).
    const SEED_ROOM: u64 = 4 << 10;
    let payloads: Vec<(&str, Vec<u8>)> = HOSTS
        .iter()
        .flat_map(|&(host, call, start, compact)| [call, start, compact].map(|p| (host, read_payload(pl, p))))
        .collect();
    let journal = data.join(leanctx::base::paths::JOURNAL_FILE);
    let state = || {
        let head = std::fs::read(&journal).unwrap_or_default();
        let kept = head
            .strip_prefix(b"#leanctx-journal v1 kept=")
            .and_then(|r| std::str::from_utf8(r.get(..10)?).ok()?.parse::<u64>().ok());
        (head.len() as u64, kept)
    };
    // What the trims kept, in order: steady once the last two agree.
    let (mut trims, mut last): (Vec<u64>, u64) = (Vec::new(), 0);
    for _ in 0..4_000 {
        for (host, payload) in &payloads {
            let s = spec(leanctx, &["hook", host], data, payload.clone());
            let ok = s
                .command()
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::null())
                .spawn()
                .and_then(|mut c| {
                    use std::io::Write as _;
                    c.stdin.take().map(|mut i| i.write_all(payload));
                    c.wait()
                })
                .is_ok_and(|st| st.success());
            if !ok {
                fail("filling the witness rows' journal: a hook failed");
            }
            let (len, kept) = state();
            // A trim just happened: the file shrank to what it kept.
            let shrank = len < last;
            last = len;
            let Some(kept) = kept else { continue };
            if shrank {
                trims.push(kept);
            }
            let steady = matches!(trims.as_slice(), [.., a, b] if b * 20 <= a * 21);
            if steady && len + SEED_ROOM >= TRIM_MIN_BYTES.max(2 * kept) {
                return;
            }
        }
    }
    fail("filling the witness rows' journal: it never reached its trim point");
}

/// The two `stub` rows that ask Claude Code's transcript (src/witness/): a
/// 50 MB transcript, still or growing, seeded by `leanctx` itself in data
/// dirs of its own (`tag` non-empty: the `--compare` binary's, whose state
/// files may be of another format), named `tag` + the row. The still row's
/// dir holds a journal at its bound ([`fill_journal`]).
#[allow(clippy::too_many_arguments)]
fn witness_rows(
    sb: &Sandbox,
    pl: &Path,
    leanctx: &Path,
    tag: &str,
    data: &Path,
    result_file: &Path,
    spec: &SpecFn<'_>,
    out: &mut Vec<Candidate>,
) {
    let claude_call = witness_payload(pl, "claude/baseline/mcp-tools-call-1.json");
    let leanctx = leanctx.to_path_buf();
    // Claude Code stubs also need the transcript's word (src/witness/): a
    // 50 MB transcript, named by the turn's prompt hook (the witness starts
    // at its end), in each of two data dirs: one whose transcript stays as
    // it is, one that grows by 100 KB before every question.
    let seed = |data: &Path, name: &str| -> (PathBuf, u64) {
        let transcript = sb.root.join(format!("{}{name}", if tag.is_empty() { "" } else { "b-" }));
        write_transcript(&transcript, TRANSCRIPT_BYTES);
        let mut prompt: serde_json::Value =
            serde_json::from_slice(&witness_payload(pl, "claude/baseline/03-UserPromptSubmit.json"))
                .unwrap_or_else(|e| fail(&format!("prompt payload: {e}")));
        prompt["transcript_path"] = serde_json::json!(transcript);
        let r = |args: &[&str], stdin: &[u8]| {
            let s = spec(&leanctx, args, data, stdin.to_vec());
            let o =
                s.command().stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::null()).spawn().and_then(
                    |mut c| {
                        use std::io::Write as _;
                        c.stdin.take().map(|mut i| i.write_all(stdin));
                        c.wait()
                    },
                );
            o.unwrap_or_else(|e| fail(&format!("seeding the ledger: {e}")))
        };
        r(&["hook", "claude-code"], prompt.to_string().as_bytes());
        r(&["hook", "claude-code"], &witness_payload(pl, "claude/baseline/07-PreToolUse.json"));
        // Claude Code writes the call's tool use to the transcript before it
        // makes the call; a stub question waits until it shows (docs/DELIVERY.md §8).
        host_writes_call(&transcript, &claude_call);
        let rf = result_file.to_str().unwrap_or_else(|| fail("non-UTF-8 temp path"));
        let status =
            r(&["deliver", "--call", "-", "--key", "README.md", "--version", "v1", "--result", rf], &claude_call);
        if !status.success() {
            fail("seeding the ledger: deliver did not record");
        }
        r(&["hook", "claude-code"], &witness_payload(pl, "claude/baseline/09-PostToolBatch.json"));
        let st = r(&["stub", "--call", "-", "--key", "README.md", "--version", "v1"], &claude_call);
        if st.code() != Some(0) {
            fail("seeding the ledger: the seeded delivery does not back a stub");
        }
        (transcript, now_ms())
    };
    fill_journal(pl, &leanctx, data, spec);
    let (_, seeded_at) = seed(data, "transcript-still.jsonl");
    // Each question of the build under test must be answered with the
    // stub (exit 0): a withheld answer is another path than the row names.
    // 1 too for a `--compare` build, which may predate the ledger.
    let served: &'static [i32] = if tag.is_empty() { &[0] } else { &[0, 1] };
    // "Now" pinned a second after seeding: a run longer than the host's idle
    // threshold would otherwise withhold (the idle rule), measuring another path.
    let pinned = |mut s: Spec, at: u64| {
        s.env.push(("LEAN_CTX_NOW_MS".into(), (at + 1000).to_string().into()));
        s
    };
    out.push(cand(
        format!("{tag}cli stub --call - (Claude tool-use id, confirmed delivery; 50 MB transcript, nothing new)"),
        "cli",
        pinned(
            spec(
                &leanctx,
                &["stub", "--call", "-", "--key", "README.md", "--version", "v1"],
                data,
                claude_call.clone(),
            ),
            seeded_at,
        ),
        Target::Cli,
        served,
    ));
    let grow_data = sb.data_dir(&format!("data-witness{}", if tag.is_empty() { "" } else { "-b" }));
    let (grown, seeded_at) = seed(&grow_data, "transcript-growing.jsonl");
    let mut c = cand(
        format!("{tag}cli stub --call - (Claude, confirmed delivery; 50 MB transcript +100 KB before each question)"),
        "cli",
        pinned(
            spec(&leanctx, &["stub", "--call", "-", "--key", "README.md", "--version", "v1"], &grow_data, claude_call),
            seeded_at,
        ),
        Target::Cli,
        served,
    );
    c.grow = Some((grown, GROWTH_BYTES));
    out.push(c);
}

fn read_json_payload(dir: &Path, rel: &str) -> serde_json::Value {
    serde_json::from_slice(&read_payload(dir, rel)).unwrap_or_else(|e| fail(&format!("{rel}: {e}")))
}

/// What users run today for the slot alone.
fn peers(sb: &Sandbox, pl: &Path, peer_data: &Path, notes: &mut Vec<String>, out: &mut Vec<Candidate>) {
    let spec = |program: &Path, data: &Path, stdin: Vec<u8>| Spec {
        program: program.to_path_buf(),
        args: Vec::new(),
        env: base_env(&sb.home, data),
        cwd: sb.project.clone(),
        stdin,
    };
    let peers = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/peers");
    let mcp = read_payload(pl, HOSTS[0].1);
    if !have("jq") && std::env::var_os("LEANCTX_BENCH_INSTALL_PEERS").is_some() {
        eprintln!("leanctx bench: jq missing; apt-get install -y jq");
        let _ = std::process::Command::new("apt-get").args(["install", "-y", "jq"]).status();
    }
    match (which("bash"), have("jq")) {
        (Some(bash), true) => {
            let mut s = spec(&bash, peer_data, mcp.clone());
            s.args = vec![peers.join("hook.sh").into()];
            out.push(cand("peer: bash + jq hook (slot only)".into(), "peer", s, Target::None, &[0]));
        }
        _ => skip_peer(
            notes,
            "bash + jq",
            "bash or jq not found (apt-get install -y jq, or set LEANCTX_BENCH_INSTALL_PEERS=1)",
        ),
    }
    if find_python().is_none() && std::env::var_os("LEANCTX_BENCH_INSTALL_PEERS").is_some() {
        eprintln!("leanctx bench: python3 missing; apt-get install -y python3");
        let _ = std::process::Command::new("apt-get").args(["install", "-y", "python3"]).status();
    }
    match find_python() {
        Some(py) => {
            let mut s = spec(&py, peer_data, mcp);
            s.args = vec![peers.join("hook.py").into()];
            notes.push(format!("python peer runs {}", py.display()));
            out.push(cand("peer: python3 hook (slot only)".into(), "peer", s, Target::None, &[0]));
        }
        None => skip_peer(
            notes,
            "python3",
            "python3 not found (apt-get install -y python3, or set LEANCTX_BENCH_INSTALL_PEERS=1)",
        ),
    }
}

/// Give every candidate that runs a leanctx build its own copy of the
/// binary. Each round runs each candidate once; if twenty candidates shared
/// one file it would run twenty times a round, its pages always hot, while
/// the floor ran once: measured here as 10–15 % in leanctx's favour. With a
/// copy each, every program file runs once a round, like the floor.
fn private_copies(sb: &Sandbox, cands: &mut [Candidate]) {
    for (i, c) in cands.iter_mut().enumerate() {
        if c.group != "hook" && c.group != "cli" {
            continue;
        }
        let dir = sb.root.join(format!("bin/{i:02}"));
        let dst = dir.join("leanctx");
        std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::copy(&c.spec.program, &dst))
            .unwrap_or_else(|e| fail(&format!("copy {}: {e}", c.spec.program.display())));
        c.spec.program = dst;
    }
}

/// `--compare OTHER_LEANCTX`: every hook and CLI row again through another
/// build (before/after a change), in the same run and rounds, on the same
/// data dirs and inputs: only ratios from one run mean anything on a shared
/// machine. Each row is named `[B] <row>` and judged against the same floor.
fn compare_rows(other: &Path, out: &mut Vec<Candidate>) {
    let mirrored: Vec<Candidate> = out
        .iter()
        // The witness rows are seeded for the other binary apart (witness_rows).
        .filter(|c| (c.group == "hook" || c.group == "cli") && !c.name.contains("50 MB transcript"))
        .map(|c| {
            let mut spec = c.spec.clone();
            spec.program = other.to_path_buf();
            Candidate {
                name: format!("[B] {}", c.name),
                spec,
                samples: Vec::new(),
                cpu: Vec::new(),
                faults: Vec::new(),
                rss_kib: None,
                grow: c.grow.clone(),
                ..*c
            }
        })
        .collect();
    out.extend(mirrored);
}

fn compare_bin() -> Option<PathBuf> {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == "--compare").and_then(|i| args.get(i + 1)).map(PathBuf::from)
}

fn which(prog: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join(prog))
        .find(|p| p.is_file())
}

fn skip_peer(notes: &mut Vec<String>, what: &str, why: &str) {
    eprintln!("\n!!! SKIPPING PEER {what}: {why}\n");
    notes.push(format!("**peer {what} skipped**: {why}"));
}

/// First run of each candidate: it must work, or the numbers mean nothing.
fn validate(c: &Candidate) {
    let o =
        spawn::run_once(&c.spec).unwrap_or_else(|e| fail(&format!("{}: cannot run {}: {e}", c.name, c.spec.display())));
    let stderr = String::from_utf8_lossy(&o.stderr);
    if !c.ok_codes.contains(&o.code) {
        fail(&format!("{}: `{}` exited {} (stderr: {stderr})", c.name, c.spec.display(), o.code));
    }
    if c.group == "hook" && !stderr.trim().is_empty() {
        fail(&format!("{}: the hook reported a problem, so it is not doing its full work: {stderr}", c.name));
    }
    if c.group == "floor" && o.stdout != b"{}\n" {
        fail("the floor binary does not print {}");
    }
}

fn run_processes(cfg: &Config, cands: &mut [Candidate], tools: &Tools) {
    for c in cands.iter() {
        validate(c);
    }
    let n = cands.len();
    let total = cfg.warmup + cfg.rounds;
    let t0 = Instant::now();
    let mut order: Vec<usize> = (0..n).collect();
    let mut rng = 0x2545_F491_4F6C_DD1Du64;
    for round in 0..total {
        // Every candidate once per round, in a fresh order each round, so
        // neither drift nor a fixed neighbour favours any of them.
        for k in (1..n).rev() {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            order.swap(k, (rng % (k as u64 + 1)) as usize);
        }
        for &i in &order {
            let c = &mut cands[i];
            if let Some((path, n)) = &c.grow {
                grow(path, *n);
            }
            let o = spawn::run_once(&c.spec).unwrap_or_else(|e| fail(&format!("{}: {e}", c.name)));
            if !c.ok_codes.contains(&o.code) {
                fail(&format!(
                    "{}: exited {} in round {round}: {}",
                    c.name,
                    o.code,
                    String::from_utf8_lossy(&o.stderr)
                ));
            }
            if round >= cfg.warmup {
                c.samples.push(o.wall);
                c.cpu.push(o.cpu);
                c.faults.push(o.faults);
            }
        }
        if !cfg.smoke && round % 250 == 249 {
            eprintln!("  processes: round {}/{total} ({:.0} s)", round + 1, t0.elapsed().as_secs_f64());
        }
    }
    for c in cands.iter_mut() {
        let mut peak = 0;
        for _ in 0..cfg.rss_runs {
            match spawn::peak_rss_kib(tools, &c.spec) {
                Ok(k) => peak = peak.max(k),
                Err(e) => eprintln!("leanctx bench: rss of {}: {e}", c.name),
            }
        }
        c.rss_kib = (peak > 0).then_some(peak);
    }
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

fn process_table(out: &mut String, cands: &[Candidate], tools: &Tools, cfg: &Config) -> Vec<String> {
    let floor = Stats::of(&cands[0].samples);
    let mut verdicts = Vec::new();
    let floor_cpu = Stats::of(&cands[0].cpu);
    let _ = writeln!(
        out,
        "| candidate | p50 | p90 | p99 | p50 / floor | p99 / floor | CPU p50 | CPU / floor | faults p50 | peak RSS | §8 target |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    for c in cands {
        let s = Stats::of(&c.samples);
        let r50 = s.p50.as_secs_f64() / floor.p50.as_secs_f64();
        let r99 = s.p99.as_secs_f64() / floor.p99.as_secs_f64();
        // Judged against its own floor when it has one; both ratios shown.
        let own = c.own_floor.and_then(|n| cands.iter().find(|f| f.name == n)).map(|f| Stats::of(&f.samples));
        let (j50, own_note) = match &own {
            Some(f) => {
                let j = s.p50.as_secs_f64() / f.p50.as_secs_f64();
                (j, format!(" ({j:.2}× its own floor)"))
            }
            None => (r50, String::new()),
        };
        let cpu = Stats::of(&c.cpu).p50;
        let faults = {
            let mut f = c.faults.clone();
            f.sort_unstable();
            f.get(f.len() / 2).copied().unwrap_or(0)
        };
        let rss = c.rss_kib.map(mib).unwrap_or_else(|| "–".into());
        let rss_ok = c.rss_kib.is_none_or(|k| k <= 6 * 1024);
        let target = match c.target {
            Target::Hook => {
                let ok = j50 <= 1.25 && r99 <= 2.0 && rss_ok;
                if !ok {
                    verdicts.push(c.name.clone());
                }
                format!("p50 ≤ 1.25×{own_note}, p99 ≤ 2×, ≤ 6 MiB: {}", if ok { "met" } else { "**missed**" })
            }
            Target::Cli => {
                let ok = j50 <= 1.3;
                if !ok {
                    verdicts.push(c.name.clone());
                }
                format!("p50 ≤ 1.3×{own_note}: {}", if ok { "met" } else { "**missed**" })
            }
            Target::None => String::new(),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {:.2}× | {:.2}× | {} | {:.2}× | {} | {} | {} |",
            c.name,
            fmt_dur(s.p50),
            fmt_dur(s.p90),
            fmt_dur(s.p99),
            r50,
            r99,
            fmt_dur(cpu),
            cpu.as_secs_f64() / floor_cpu.p50.as_secs_f64(),
            faults,
            rss,
            target
        );
    }
    let _ = writeln!(
        out,
        "\n{} timed runs per candidate after {} warm-up rounds, interleaved (each round runs every candidate once, in a shuffled order). \
         CPU (user + system) and minor page faults: the child's own, from wait4's rusage; judged on wall time, \
         CPU shows what a run cost when the machine is loaded. Peak RSS: max ru_maxrss of {} runs started from a {} launcher whose own share is ≤ {} \
         (Linux charges the exec'ing parent's high-water mark to the child).",
        cands[0].samples.len(),
        cfg.warmup,
        cfg.rss_runs,
        if tools.probe_static { "static" } else { "dynamic" },
        mib(tools.probe_floor_kib)
    );
    verdicts
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown cpu".into());
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!("{cores} cores, {cpu}, Linux {}", kernel.trim())
}

fn git_rev() -> String {
    let dir = env!("CARGO_MANIFEST_DIR");
    let run = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let rev = run(&["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "unknown".into());
    let dirty = run(&["status", "--porcelain", "--", "src", "Cargo.toml"]).is_some_and(|s| !s.is_empty());
    if dirty { format!("{rev} + uncommitted changes in src/") } else { rev }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // Processes are reaped with wait4 (peak RSS) and the peers are shell
    // scripts: the harness measures on Unix only, and says so elsewhere.
    if cfg!(not(unix)) && args.iter().any(|a| a == "--bench" || a == "--smoke") {
        fail("the hook benchmarks run on Unix only (wait4, sh and jq peers): nothing was measured");
    }
    let smoke = args.iter().any(|a| a == "--smoke")
        || std::env::var("LEANCTX_BENCH_SMOKE").is_ok_and(|v| !v.is_empty() && v != "0");
    // `cargo bench` passes --bench; `cargo test --all-targets` runs bench
    // targets with nothing, and must not start a benchmark.
    if !smoke && !args.iter().any(|a| a == "--bench") {
        println!("benches/hooks: run it with `cargo bench --bench hooks` (see benches/README.md)");
        return;
    }
    let mut cfg = if smoke { Config::smoke() } else { Config::full() };
    if let Some(r) = std::env::var("LEANCTX_BENCH_ROUNDS").ok().and_then(|v| v.parse().ok()) {
        cfg.rounds = r;
    }
    // While working on the read path: fewer iterations, other history sizes.
    if let Some(n) = std::env::var("LEANCTX_BENCH_MICRO_ITERS").ok().and_then(|v| v.parse().ok()) {
        cfg.micro_iters = n;
    }
    if let Ok(v) = std::env::var("LEANCTX_BENCH_MICRO_SIZES") {
        let sizes: Vec<usize> = v.split(',').filter_map(|x| x.trim().parse().ok()).collect();
        if !sizes.is_empty() {
            cfg.micro_sizes = Box::leak(sizes.into_boxed_slice());
        }
    }
    let out_file = args.iter().position(|a| a == "--out").and_then(|i| args.get(i + 1)).map(PathBuf::from);
    let only: Option<&str> = args.iter().position(|a| a == "--only").and_then(|i| args.get(i + 1)).map(String::as_str);
    let want = |s: &str| only.is_none_or(|o| o.split(',').any(|x| x == s));

    let started = Instant::now();
    if !bin().is_file() {
        fail(&format!("{} not built", bin().display()));
    }
    let sb = Sandbox::new();
    let tools = spawn::build_tools(&sb.root).unwrap_or_else(|e| fail(&e.to_string()));

    let mut report = String::new();
    let mut notes: Vec<String> = Vec::new();
    let _ = writeln!(report, "# leanctx benchmarks\n");
    let _ = writeln!(
        report,
        "{} run, {} · {} · leanctx {} · `{}`\n",
        if smoke { "**Smoke**" } else { "Full" },
        machine(),
        tools.rustc_version,
        git_rev(),
        if smoke { "LEANCTX_BENCH_SMOKE=1 cargo bench --bench hooks" } else { "cargo bench --bench hooks" }
    );

    let load_before = quiet::load_average();
    let mut quiet_line = None;
    let mut missed: Vec<String> = Vec::new();
    if want("processes") {
        eprintln!("leanctx bench: processes ({} rounds)…", cfg.rounds);
        let mut cands = candidates(&sb, &tools, !args.iter().any(|a| a == "--no-peers"), &mut notes);
        // `LEANCTX_BENCH_ROWS=stub,scope check`: only the rows whose name holds
        // one of these, and the floor (while working on them; rows are
        // still seeded, and judged against the same floor).
        if let Ok(rows) = std::env::var("LEANCTX_BENCH_ROWS") {
            let keep: Vec<&str> = rows.split(',').map(str::trim).filter(|r| !r.is_empty()).collect();
            let mut i = 0;
            cands.retain(|c| {
                i += 1;
                i == 1 || c.name == STATIC_FLOOR || keep.iter().any(|r| c.name.contains(r))
            });
        }
        run_processes(&cfg, &mut cands, &tools);
        // `LEANCTX_BENCH_KEEP=1`: leave the sandbox (its data dirs and
        // transcripts, as the rows left them) for a profiler to replay a row.
        if std::env::var_os("LEANCTX_BENCH_KEEP").is_some_and(|v| !v.is_empty() && v != "0") {
            eprintln!("leanctx bench: sandbox kept at {}", sb.root.display());
            for (i, c) in cands.iter().enumerate() {
                let s = &c.spec;
                let stdin = sb.root.join(format!("stdin-{i}"));
                let _ = std::fs::write(&stdin, &s.stdin);
                let env: Vec<String> =
                    s.env.iter().map(|(k, v)| format!("{}={}", k.to_string_lossy(), v.to_string_lossy())).collect();
                let args: Vec<String> = s.args.iter().map(|a| a.to_string_lossy().into_owned()).collect();
                eprintln!(
                    "  {}: env -i {} {} {} < {}",
                    c.name,
                    env.join(" "),
                    s.program.display(),
                    args.join(" "),
                    stdin.display()
                );
            }
        }
        let _ = writeln!(report, "## Processes (spawned like a host spawns a hook)\n");
        let mut t = String::new();
        missed.extend(process_table(&mut t, &cands, &tools, &cfg));
        report.push_str(&t);
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        quiet_line = Some(quiet::judge(load_before, cores, &cands[0].samples).1);
        report.push('\n');
    }
    if want("micro") {
        eprintln!("leanctx bench: read path in process…");
        let _ = writeln!(report, "## Read path in process\n");
        missed.extend(micro::run(&cfg, &sb.root, &mut report));
        report.push('\n');
    }
    if want("serve") {
        eprintln!("leanctx bench: serve's read in process…");
        let _ = writeln!(report, "## `leanctx serve` read in process\n");
        missed.extend(serve::run(&cfg, &sb.root, &mut report));
        report.push('\n');
    }
    if want("stats") {
        eprintln!("leanctx bench: stats…");
        let _ = writeln!(report, "## Stats (in process)\n");
        missed.extend(stats::run(&cfg, &sb.root, &mut report));
        report.push('\n');
    }
    if want("scale") {
        eprintln!("leanctx bench: 64 processes at once…");
        let _ = writeln!(report, "## 64 hook processes at once\n");
        let data = sb.data_dir("data-scale");
        let pl = payloads_dir();
        let env = base_env(&sb.home, &data);
        missed.extend(scale::run(&cfg, &tools, &data, &env, &sb.project, &read_payload(&pl, HOSTS[0].1), &mut report));
        report.push('\n');
    }
    if !notes.is_empty() {
        let _ = writeln!(report, "Notes:\n");
        for n in &notes {
            let _ = writeln!(report, "- {n}");
        }
        report.push('\n');
    }
    let _ = writeln!(
        report,
        "{}: {}. Total time {:.0} s.",
        if smoke {
            "Smoke run (too few iterations for ratios to mean anything); targets missed"
        } else {
            "Targets missed in this run"
        },
        if missed.is_empty() { "none".to_string() } else { missed.join("; ") },
        started.elapsed().as_secs_f64()
    );
    if let Some(q) = &quiet_line {
        let _ = writeln!(report, "{q}.");
    }
    print!("{report}");
    if std::env::var_os("LEANCTX_BENCH_KEEP").is_some_and(|v| !v.is_empty() && v != "0") {
        // TempDir removes the sandbox on drop; kept, it stays for replay.
        std::mem::forget(sb);
    }
    if let Some(f) = out_file
        && let Err(e) = std::fs::write(&f, &report)
    {
        fail(&format!("{}: {e}", f.display()));
    }
}
