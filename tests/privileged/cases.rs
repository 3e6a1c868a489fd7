//! The fault cases that need root: a tmpfs mounted as the data dir
//! (read-only, and full at several fill levels; root ignores chmod, so only
//! a read-only mount makes a dir unwritable for it), and files and dirs of
//! another uid (only root can chown). Moved out of tests/it/faults.rs, whose
//! helpers they use, so that they can report themselves *ignored* with the
//! reason where they cannot run (main.rs).

use crate::faults::{
    BOUND, Gate, Stats, assert_hook_answers, assert_reads_withhold, assert_status_names, nothing_half_written, prepare,
    run_battery, status_problems, two_chats,
};
use crate::support::Sandbox;
use serde_json::json;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// A tmpfs mounted on a path, unmounted on drop (even when the test fails).
struct Mount {
    path: PathBuf,
}

impl Mount {
    fn tmpfs(path: &Path, size: &str) -> Result<Mount, String> {
        std::fs::create_dir_all(path).map_err(|e| e.to_string())?;
        let opts = format!("size={size},mode=0700");
        run(Command::new("mount").args(["-t", "tmpfs", "-o", &opts, "tmpfs"]).arg(path))?;
        Ok(Mount { path: path.to_path_buf() })
    }

    fn remount(&self, opts: &str) -> Result<(), String> {
        run(Command::new("mount").args(["-o", &format!("remount,{opts}")]).arg(&self.path))
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let ok = Command::new("umount").arg(&self.path).status().is_ok_and(|s| s.success());
        if !ok {
            // Busy (a child still has it open): detach it lazily.
            let _ = Command::new("umount").arg("-l").arg(&self.path).status();
        }
    }
}

fn run(c: &mut Command) -> Result<(), String> {
    match c.output() {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(format!("{:?}: {}", c, String::from_utf8_lossy(&o.stderr).trim())),
        Err(e) => Err(format!("{c:?}: {e}")),
    }
}

/// A mount that worked in the harness's probe failed here: fail, with why.
fn skip(case: &str, why: &str) {
    panic!("{case}: cannot mount a tmpfs ({why}), though the probe before the test could");
}

pub fn read_only_data_dir() {
    let sb = Sandbox::new();
    let m = match Mount::tmpfs(&sb.data, "1m") {
        Ok(m) => m,
        Err(e) => return skip("read-only data dir", &e),
    };
    prepare(&sb);
    let slot_before = std::fs::read(sb.data.join("active_transcript.json")).unwrap();
    let journal_before = std::fs::read(sb.data.join("journal")).unwrap();
    if let Err(e) = m.remount("ro") {
        return skip("read-only data dir", &e);
    }
    let mut st = Stats { hooks: 0, max: Duration::ZERO };
    let outs = run_battery(&sb, "read-only", Gate::Deny, &mut st);
    assert!(outs.iter().any(|o| o.stderr.contains("could not record")), "the reason goes to stderr");
    assert_eq!(std::fs::read(sb.data.join("active_transcript.json")).unwrap(), slot_before);
    assert_eq!(std::fs::read(sb.data.join("journal")).unwrap(), journal_before);
    nothing_half_written(&sb.data, "read-only");
    assert_status_names(&sb, "read-only", &["not writable", "Read-only"]);
    // The read path still reads it.
    let o = sb.cmd(["scope", "current", "--json"]).run();
    assert!(matches!(o.code, 0 | 1), "{}", o.stderr);
    // A Claude call whose hook could not record: its tool-use id names no
    // record, and the stale slot must not stand in for it.
    let p = json!({"hook_event_name":"PreToolUse","session_id":"pre-2","tool_name":"mcp__ctx__ctx_read",
        "tool_input":{"x":1},"tool_use_id":"toolu_ro"});
    assert!(sb.hook("claude", p.to_string()).ok().stderr.contains("could not record"));
    let call = json!({"name":"ctx_read","arguments":{"x":1},"_meta":{"claudecode/toolUseId":"toolu_ro"}});
    let o = sb.cmd(["scope", "check", "--delivered", "pre-2", "--json", "--call", "-"]).stdin(call.to_string()).run();
    assert_eq!((o.code, o.json()["decision"]["reason"].as_str()), (1, Some("unrecorded-call")), "{}", o.stdout);
    println!("faults: read-only: {} hooks, slowest {:?}", st.hooks, st.max);
    drop(m);
}

pub fn full_data_dir_at_several_fill_levels() {
    let sb = Sandbox::new();
    let m = match Mount::tmpfs(&sb.data, "256k") {
        Ok(m) => m,
        Err(e) => return skip("full data dir", &e),
    };
    prepare(&sb);
    // A journal near its trim bound, so some appends also try to trim
    // (a rewrite through a temp file) on the full disk.
    for i in 0..120 {
        let p = json!({"hook_event_name":"UserPromptSubmit","session_id":format!("fill-{i}")});
        sb.hook("codex", p.to_string()).ok();
    }
    let filler = sb.data.join("filler");
    let mut st = Stats { hooks: 0, max: Duration::ZERO };
    let mut records = 0;
    // Fill completely, then leave 0..=3 pages free: appends that fit, that
    // are cut short and that cannot start at all.
    for free_pages in [0u64, 1, 2, 3, 0] {
        let _ = std::fs::remove_file(&filler);
        fill(&filler);
        if free_pages > 0 {
            let len = std::fs::metadata(&filler).unwrap().len();
            let f = std::fs::OpenOptions::new().write(true).open(&filler).unwrap();
            f.set_len(len.saturating_sub(free_pages * 4096)).unwrap();
        }
        let case = format!("full (+{free_pages} pages)");
        run_battery(&sb, &case, Gate::Deny, &mut st);
        records += nothing_half_written(&sb.data, &case);
    }
    fill(&filler);
    assert_status_names(&sb, "full", &["No space left", "nearly full"]);
    // Space comes back: the next hook records again.
    std::fs::remove_file(&filler).unwrap();
    let o = sb.hook("claude", r#"{"hook_event_name":"SessionStart","session_id":"after-full"}"#).ok();
    assert!(o.stderr.is_empty(), "{}", o.stderr);
    assert!(sb.journal().contains("after-full"));
    nothing_half_written(&sb.data, "after full");
    assert!(status_problems(&sb).is_empty(), "{:?}", status_problems(&sb));
    println!("faults: full: {} hooks at 5 fill levels, {records} records checked, slowest {:?}", st.hooks, st.max);
    drop(m);
}

fn fill(path: &Path) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap();
    let chunk = vec![0u8; 4096];
    while f.write_all(&chunk).is_ok() {}
    // Byte by byte into the last partial page.
    while f.write_all(&[0]).is_ok() {}
}

/// The data dir another user's: hooks fail open, status names the owner,
/// nothing is written there (from `unusable_data_dirs_fail_open_…`).
pub fn another_users_data_dir_is_refused() {
    let mut st = Stats { hooks: 0, max: Duration::ZERO };
    let check = |sb: &Sandbox, case: &str, words: &[&str], st: &mut Stats| {
        // A user policy left in a dir that cannot be trusted fails closed.
        let policy = std::fs::symlink_metadata(sb.data.join("gate.json")).is_ok();
        let outs = run_battery(sb, case, if policy { Gate::Closed } else { Gate::Open }, st);
        assert!(outs.iter().all(|o| !o.stderr.is_empty()), "{case}: every hook says why on stderr");
        assert_status_names(sb, case, words);
    };
    let other = tempfile::tempdir().unwrap();
    // A symlink to another user's dir.
    let sb = Sandbox::new();
    let theirs = other.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::chown(&theirs, Some(4242), Some(4242)).unwrap();
    std::os::unix::fs::symlink(&theirs, &sb.data).unwrap();
    check(&sb, "symlink to another user's dir", &["owned by uid 4242"], &mut st);
    assert_eq!(std::fs::read_dir(&theirs).unwrap().count(), 0);
    // Owned by another uid.
    let sb = Sandbox::new();
    prepare(&sb);
    std::os::unix::fs::chown(&sb.data, Some(4242), None).unwrap();
    let before = sb.journal();
    check(&sb, "wrong owner", &["owned by uid 4242"], &mut st);
    assert_eq!(sb.journal(), before, "nothing written to a dir we do not own");
    println!("faults: 2 other-user dir cases, {} hooks, slowest {:?}", st.hooks, st.max);
}

/// A journal of another user: every read withholds in bounded time (from
/// `untrusted_state_files_withhold_in_bounded_time`).
pub fn a_journal_of_another_user_withholds() {
    let sb = Sandbox::new();
    two_chats(&sb);
    std::os::unix::fs::chown(sb.data.join("journal"), Some(4242), None).unwrap();
    assert_reads_withhold(&sb, "journal owned by another user", "state-unavailable", &["journal", "uid 4242"]);
    assert_hook_answers(&sb, "journal owned by another user");
    let _ = BOUND;
}

/// Root installing into another user's config keeps that user's owner
/// and group on the file and its backup (from tests/it/install.rs).
pub fn the_files_owner_is_kept_when_root_edits_it() {
    use std::os::unix::fs::MetadataExt;
    let sb = Sandbox::new();
    let dir = sb.host_dir("claude-code");
    let p = dir.join("settings.json");
    std::fs::write(&p, json!({"model": "x"}).to_string()).unwrap();
    std::os::unix::fs::chown(&p, Some(4321), Some(4322)).unwrap();
    sb.cmd(["hooks", "install", "claude-code"]).ok();
    let md = std::fs::metadata(&p).unwrap();
    assert_eq!((md.uid(), md.gid()), (4321, 4322));
    let bak = std::fs::metadata(dir.join("settings.json.leanctx.bak")).unwrap();
    assert_eq!((bak.uid(), bak.gid()), (4321, 4322));
}

/// The same for the MCP server's registration: root registering `leanctx
/// serve` in another user's Codex config.toml keeps its owner and group
/// on the file and its backup (tests/it/serverinstall.rs has the rest).
pub fn the_server_files_owner_is_kept_when_root_edits_it() {
    use std::os::unix::fs::MetadataExt;
    let sb = Sandbox::new();
    let dir = sb.host_dir("codex");
    let p = dir.join("config.toml");
    std::fs::write(&p, "model = \"x\"\n").unwrap();
    std::os::unix::fs::chown(&p, Some(4321), Some(4322)).unwrap();
    sb.cmd(["hooks", "install", "codex", "--server"]).ok();
    assert!(std::fs::read_to_string(&p).unwrap().contains("[mcp_servers.leanctx]"));
    let md = std::fs::metadata(&p).unwrap();
    assert_eq!((md.uid(), md.gid()), (4321, 4322));
    let bak = std::fs::metadata(dir.join("config.toml.leanctx.bak")).unwrap();
    assert_eq!((bak.uid(), bak.gid()), (4321, 4322));
}
