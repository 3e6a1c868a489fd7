//! A small fluent builder for running the real `leanctx` binary in a
//! sandbox: temp HOME, data dir and host config dirs, never the real home.

#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_leanctx");

/// The captured host payloads, kept in the repository (tests/fixtures/payloads,
/// README there), so a clone tests itself.
pub fn payloads() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/payloads")
}

pub fn payload(rel: &str) -> String {
    std::fs::read_to_string(payloads().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Claude Code writes a main-agent call's tool use to the session's
/// transcript before it makes the call; a stub question for the call waits
/// until the transcript shows it (docs/DELIVERY.md §8).
pub fn host_writes_call(transcript: &Path, id: &str) {
    let line = serde_json::json!({"type": "assistant", "message": {"content": [
        {"type": "tool_use", "id": id, "name": "mcp__leanctx__read", "input": {}}]}});
    let mut f = std::fs::OpenOptions::new().append(true).open(transcript).unwrap();
    writeln!(f, "{line}").unwrap();
}

/// Claude Code 2.1.328 writes a subagent's lines to its own transcript
/// beside the session's (`<session>/subagents/agent-<id>.jsonl`: its prompt
/// first, then each tool use before its call; fixture
/// tests/fixtures/payloads/withdrawal/claude/subagent-main-compact); a stub
/// question about its delivery reads that file, and withholds when it is
/// in no place the host keeps one (docs/DELIVERY.md §8).
pub fn host_writes_subagent_call(session: &Path, agent: &str, id: &str) {
    let stem = session.file_stem().unwrap().to_str().unwrap();
    let p = session.with_file_name(stem).join("subagents").join(format!("agent-{agent}.jsonl"));
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    let mut lines = Vec::new();
    if !p.exists() {
        lines.push(
            serde_json::json!({"type": "user", "isSidechain": true, "agentId": agent, "uuid": format!("{agent}-prompt"),
            "parentUuid": null, "message": {"role": "user", "content": "task"}}),
        );
    }
    lines.push(serde_json::json!({"type": "assistant", "isSidechain": true, "agentId": agent, "message": {"content": [
        {"type": "tool_use", "id": id, "name": "mcp__leanctx__read", "input": {}}]}}));
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&p).unwrap();
    for l in lines {
        writeln!(f, "{l}").unwrap();
    }
}

/// Make a directory leanctx would accept as its data dir: 0700 on Unix
/// (a temp dir's mode depends on the umask). On Windows there are no modes
/// to set: the temp dir is in the user's profile, whose ACL is the check.
pub fn make_private(p: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    #[cfg(not(unix))]
    let _ = p;
}

/// The identity of the file at `p` (device and inode; volume and index on
/// Windows): unchanged means the file was not replaced.
pub fn file_identity(p: &Path) -> (u64, u64) {
    let md = std::fs::symlink_metadata(p).unwrap();
    leanctx::fsx::path_id(p, &md).unwrap()
}

/// A sandbox: every path a test run could touch lives under one temp dir.
pub struct Sandbox {
    pub tmp: tempfile::TempDir,
    pub home: PathBuf,
    pub data: PathBuf,
    pub project: PathBuf,
}

/// PATH without the dirs that hold a host's program (`claude`, `codex`,
/// …): the hosts installed on the machine running the tests must not change
/// which hosts a sandbox finds (`hooks install --all`, `install.sh`).
pub fn path_without_hosts() -> std::ffi::OsString {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let hosts = leanctx::Host::ALL.iter().flat_map(|&h| leanctx::hosts::profile::profile(h).binaries.iter());
    let hosts: Vec<&&str> = hosts.collect();
    let keep = std::env::split_paths(&path).filter(|d| hosts.iter().all(|b| !d.join(b).exists()));
    std::env::join_paths(keep.collect::<Vec<_>>()).unwrap()
}

/// The hosts, as `leanctx hooks install` names them.
pub const HOSTS: [&str; 4] = ["cursor", "claude-code", "codex", "codebuddy"];

/// Where the installer keeps a config as it was before its first change.
pub fn backup_of(p: &Path) -> PathBuf {
    let mut s = p.as_os_str().to_os_string();
    s.push(".leanctx.bak");
    PathBuf::from(s)
}

impl Sandbox {
    /// `host`'s user config dir (the builder points CLAUDE_CONFIG_DIR,
    /// CODEX_HOME and CODEBUDDY_CONFIG_DIR into HOME), in the platform's
    /// own form (one component at a time: no `/` inside a Windows path).
    pub fn config_dir(&self, host: &str) -> PathBuf {
        self.home.join(match host {
            "cursor" => ".cursor",
            "claude-code" => ".claude",
            "codex" => ".codex",
            "codebuddy" => ".codebuddy",
            _ => unreachable!("{host}"),
        })
    }

    /// The user hooks config of `host` (Codex: hooks.json).
    pub fn hooks_file(&self, host: &str) -> PathBuf {
        let dir = self.config_dir(host);
        match host {
            "cursor" | "codex" => dir.join("hooks.json"),
            _ => dir.join("settings.json"),
        }
    }

    /// The user MCP config of `host` (docs/HOST-FACTS.md §8): Claude Code's
    /// `.claude.json` in its config dir (CLAUDE_CONFIG_DIR is set), Codex's
    /// config.toml, Cursor's mcp.json, CodeBuddy's `.codebuddy.json` in HOME.
    pub fn server_file(&self, host: &str) -> PathBuf {
        match host {
            "cursor" => self.config_dir(host).join("mcp.json"),
            "claude-code" => self.config_dir(host).join(".claude.json"),
            "codex" => self.config_dir(host).join("config.toml"),
            "codebuddy" => self.home.join(".codebuddy.json"),
            _ => unreachable!("{host}"),
        }
    }

    /// Make `host`'s user config dir look like a host's (a file in it, as
    /// the host writes one on its first run): an empty dir is not a host.
    pub fn host_dir(&self, host: &str) -> PathBuf {
        let d = self.config_dir(host);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("history.jsonl"), "").unwrap();
        d
    }

    pub fn new() -> Sandbox {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let project = tmp.path().join("project");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&project).unwrap();
        let data = tmp.path().join("data");
        Sandbox { tmp, home, data, project }
    }

    /// `leanctx <args>` with the sandbox environment.
    pub fn cmd<I, S>(&self, args: I) -> Run
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        let mut c = Command::new(BIN);
        c.args(args);
        c.env_clear();
        c.env("PATH", path_without_hosts());
        c.env("HOME", &self.home);
        // Where the hosts' configs are on Windows (crate::hosts::home).
        c.env("USERPROFILE", &self.home);
        c.env("LEAN_CTX_DATA_DIR", &self.data);
        c.env("CLAUDE_CONFIG_DIR", self.home.join(".claude"));
        c.env("CODEX_HOME", self.home.join(".codex"));
        c.env("CODEBUDDY_CONFIG_DIR", self.home.join(".codebuddy"));
        c.current_dir(&self.project);
        Run { cmd: c, stdin: Vec::new(), timeout: Duration::from_secs(30) }
    }

    /// `leanctx <args>` as a user that file modes bind (Unix only): as is, or through
    /// `setpriv` (util-linux) as uid/gid 65534 when the tests run as root,
    /// who ignores them. The sandbox is made traversable and its home and data
    /// dir handed to that user.
    #[cfg(unix)]
    pub fn cmd_unprivileged<I, S>(&self, args: I) -> Run
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        let mut run = self.cmd(args);
        if leanctx::fsx::current_uid() != 0 {
            return run;
        }
        use std::os::unix::fs::{PermissionsExt, chown};
        let nobody = 65534;
        std::fs::set_permissions(self.tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        for d in [&self.home, &self.data, &self.project] {
            if d.exists() {
                chown(d, Some(nobody), Some(nobody)).unwrap();
            }
        }
        let mut c = Command::new("setpriv");
        c.args(["--reuid", "65534", "--regid", "65534", "--clear-groups", BIN]);
        c.args(run.cmd.get_args());
        c.env_clear();
        for (k, v) in run.cmd.get_envs() {
            if let Some(v) = v {
                c.env(k, v);
            }
        }
        c.current_dir(&self.project);
        run.cmd = c;
        run
    }

    /// `leanctx hook <host>` fed `payload`.
    pub fn hook(&self, host: &str, payload: impl AsRef<[u8]>) -> Run {
        self.cmd(["hook", host]).stdin(payload)
    }

    pub fn journal(&self) -> String {
        std::fs::read_to_string(self.data.join("journal")).unwrap_or_default()
    }

    /// How many of the journal's records `which` picks, read with the
    /// library's own parser.
    pub fn count(journal: &str, which: impl Fn(&leanctx::state::journal::Record<'_>) -> bool) -> usize {
        leanctx::state::journal::parse(journal).iter().filter(|r| which(r)).count()
    }

    /// The journal's call records, read with the library's own parser.
    pub fn calls(journal: &str) -> Vec<leanctx::state::journal::Call<'_>> {
        use leanctx::state::journal::{Record, parse};
        parse(journal).into_iter().filter_map(|r| if let Record::Call(c) = r { Some(c) } else { None }).collect()
    }

    /// The journal's sightings as (host, conversation, event), read with the
    /// library's own parser.
    pub fn sightings(journal: &str) -> Vec<(leanctx::Host, &str, &str)> {
        use leanctx::state::journal::{Record, parse};
        let sighting =
            |r| if let Record::Sighting { host, conv, event, .. } = r { Some((host, conv, event)) } else { None };
        parse(journal).into_iter().filter_map(sighting).collect()
    }

    /// The subagents started in the journal, read with the library's parser.
    pub fn subagent_starts(journal: &str) -> Vec<&str> {
        use leanctx::state::journal::{Record, parse};
        parse(journal)
            .into_iter()
            .filter_map(|r| if let Record::SubagentStart { agent, .. } = r { Some(agent) } else { None })
            .collect()
    }

    pub fn slot(&self) -> Option<serde_json::Value> {
        let t = std::fs::read_to_string(self.data.join("active_transcript.json")).ok()?;
        Some(serde_json::from_str(&t).expect("slot parses"))
    }
}

pub struct Run {
    pub cmd: Command,
    stdin: Vec<u8>,
    timeout: Duration,
}

#[derive(Debug)]
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl Out {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {:?}", self.stdout))
    }
}

impl Run {
    pub fn stdin(mut self, s: impl AsRef<[u8]>) -> Run {
        self.stdin = s.as_ref().to_vec();
        self
    }

    pub fn arg(mut self, a: impl AsRef<std::ffi::OsStr>) -> Run {
        self.cmd.arg(a);
        self
    }

    pub fn env(mut self, k: &str, v: impl AsRef<std::ffi::OsStr>) -> Run {
        self.cmd.env(k, v);
        self
    }

    pub fn env_remove(mut self, k: &str) -> Run {
        self.cmd.env_remove(k);
        self
    }

    pub fn current_dir(mut self, d: &Path) -> Run {
        self.cmd.current_dir(d);
        self
    }

    /// Give up (panic) after `d` instead of the default 30 s.
    pub fn timeout(mut self, d: Duration) -> Run {
        self.timeout = d;
        self
    }

    /// Run, and also return the child's peak RSS in KiB (`wait4`'s
    /// `ru_maxrss`, of this child alone).
    #[allow(clippy::zombie_processes)] // reaped by wait4, which std cannot see
    #[cfg(unix)]
    pub fn run_rusage(self) -> (Out, u64) {
        use std::io::Read;
        let timeout = self.timeout;
        let start = Instant::now();
        let mut child = self.spawn();
        let (mut so, mut se) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
        let t_out = std::thread::spawn(move || {
            let mut b = Vec::new();
            let _ = so.read_to_end(&mut b);
            b
        });
        let t_err = std::thread::spawn(move || {
            let mut b = Vec::new();
            let _ = se.read_to_end(&mut b);
            b
        });
        let pid = child.id() as libc::pid_t;
        let (status, rss) = loop {
            let mut status = 0;
            // SAFETY: a zeroed rusage out-struct and a child of ours.
            let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
            let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut ru) };
            if r == pid {
                break (status, ru.ru_maxrss as u64);
            }
            assert!(r == 0, "wait4: {}", std::io::Error::last_os_error());
            if start.elapsed() > timeout {
                let _ = child.kill();
                panic!("leanctx did not finish within {timeout:?}");
            }
            std::thread::sleep(Duration::from_millis(2));
        };
        let code = if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { -1 };
        let out = Out {
            code,
            stdout: String::from_utf8_lossy(&t_out.join().unwrap()).into_owned(),
            stderr: String::from_utf8_lossy(&t_err.join().unwrap()).into_owned(),
            elapsed: start.elapsed(),
        };
        (out, rss)
    }

    /// Spawn with all three streams piped and stdin left to the caller (a
    /// stdin that stays open, a write that races the reader).
    pub fn spawn_open(mut self) -> std::process::Child {
        self.cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        match self.cmd.spawn() {
            // Wine's CreateProcess now and then fails with
            // ERROR_INTERNAL_ERROR under load (the process never started):
            // under Wine only, one more try, said on stderr.
            Err(e) if e.raw_os_error() == Some(1359) && leanctx::fsx::under_wine() => {
                eprintln!("Wine: spawn failed ({e}); trying once more");
                std::thread::sleep(Duration::from_millis(50));
                self.cmd.spawn().expect("spawn leanctx (second try under Wine)")
            }
            r => r.expect("spawn leanctx"),
        }
    }

    pub fn spawn(mut self) -> std::process::Child {
        let input = std::mem::take(&mut self.stdin);
        let mut child = self.spawn_open();
        let mut sin = child.stdin.take().unwrap();
        std::thread::spawn(move || {
            let _ = sin.write_all(&input);
        });
        child
    }

    pub fn run(self) -> Out {
        let timeout = self.timeout;
        let start = Instant::now();
        let mut child = self.spawn();
        wait_within(&mut child, start, timeout, "leanctx");
        let o = child.wait_with_output().unwrap();
        Out {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
            elapsed: start.elapsed(),
        }
    }

    /// `leanctx status`: exit 0 when healthy, 1 when it names a problem;
    /// with `--json`, `healthy` says the same as the exit code.
    pub fn report(self) -> Out {
        let o = self.run();
        assert!(matches!(o.code, 0 | 1), "exit {}; stderr: {}", o.code, o.stderr);
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(&o.stdout) {
            assert_eq!(v["healthy"], o.code == 0, "healthy vs exit code: {}", o.stdout);
            assert_eq!(v["issues"].as_array().map(|a| a.is_empty()), Some(o.code == 0), "{}", o.stdout);
        }
        o
    }

    /// Run and require exit 0.
    pub fn ok(self) -> Out {
        let o = self.run();
        assert_eq!(o.code, 0, "exit {}; stderr: {}", o.code, o.stderr);
        o
    }
}

/// Wait for `child` to exit, at most `timeout` after `start`; past that it
/// is killed and the test fails naming `what`.
pub fn wait_within(child: &mut std::process::Child, start: Instant, timeout: Duration, what: &str) {
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > timeout {
            let _ = child.kill();
            panic!("{what} did not finish within {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// A fake host process (Unix): a long-lived `sh` whose children run each
/// command given, as a host's MCP server or hook would: the command's
/// parent is a per-command `sh` (the "server"), its grandparent this host.
/// For the per-process windows, whose evidence is the process ancestry.
#[cfg(unix)]
pub struct FakeHost {
    child: std::process::Child,
    out: std::io::BufReader<std::process::ChildStdout>,
}

#[cfg(unix)]
impl FakeHost {
    pub fn start(sb: &Sandbox) -> FakeHost {
        let mut c = sb.cmd(Vec::<String>::new()).cmd;
        let script = r#"while IFS= read -r cmd; do sh -c "$cmd; exit \$?" </dev/null; echo "@@rc=$?"; done"#;
        let mut sh = Command::new("sh");
        sh.args(["-c", script]).env_clear().current_dir(&sb.project);
        for (k, v) in c.get_envs() {
            if let Some(v) = v {
                sh.env(k, v);
            }
        }
        let _ = &mut c;
        let mut child = sh.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
        let out = std::io::BufReader::new(child.stdout.take().unwrap());
        FakeHost { child, out }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Run `leanctx <args>` (with `stdin` from a file if given) under this
    /// host: its exit code and stdout.
    pub fn run(&mut self, args: &[&str], stdin: Option<&Path>) -> (i32, String) {
        self.run_env(&[], args, stdin)
    }

    /// [`FakeHost::run`] with extra environment variables.
    pub fn run_env(&mut self, env: &[(&str, &str)], args: &[&str], stdin: Option<&Path>) -> (i32, String) {
        use std::io::BufRead;
        let q = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
        let mut line = std::iter::once(BIN).chain(args.iter().copied()).map(q).collect::<Vec<_>>().join(" ");
        for (k, v) in env {
            line = format!("{k}={} {line}", q(v));
        }
        if let Some(p) = stdin {
            line.push_str(&format!(" < {}", q(p.to_str().unwrap())));
        }
        writeln!(self.child.stdin.as_mut().unwrap(), "{line}").unwrap();
        let mut out = String::new();
        loop {
            let mut l = String::new();
            assert!(self.out.read_line(&mut l).unwrap() > 0, "the fake host ended");
            if let Some(rc) = l.trim_end().strip_prefix("@@rc=") {
                return (rc.parse().unwrap(), out);
            }
            out.push_str(&l);
        }
    }
}

#[cfg(unix)]
impl Drop for FakeHost {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
