//! Spawning a candidate the way a host does: a fresh process, the payload
//! on a stdin pipe that is then closed, stdout and stderr read to the end,
//! the child reaped. Wall time runs from just before the spawn to just
//! after the reap.

use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How to start one candidate.
#[derive(Clone, Debug)]
pub struct Spec {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    /// The whole environment (the child's is cleared first).
    pub env: Vec<(OsString, OsString)>,
    pub cwd: PathBuf,
    pub stdin: Vec<u8>,
}

impl Spec {
    pub fn command(&self) -> Command {
        let mut c = Command::new(&self.program);
        c.args(&self.args).env_clear().envs(self.env.iter().map(|(k, v)| (k, v))).current_dir(&self.cwd);
        c
    }

    /// A short shell-like rendering, for messages.
    pub fn display(&self) -> String {
        let mut s = self.program.display().to_string();
        for a in &self.args {
            s.push(' ');
            s.push_str(&a.to_string_lossy());
        }
        s
    }
}

/// One run.
#[derive(Debug)]
pub struct Outcome {
    pub wall: Duration,
    /// Exit code, or `128 + signal`.
    pub code: i32,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// The child's CPU time, user and system (rusage): what the run cost,
    /// far less moved by a loaded machine than the wall time.
    pub cpu: Duration,
    /// The child's minor page faults (rusage): the pages its start touched.
    pub faults: u64,
}

#[cfg(unix)]
fn usage(ru: &libc::rusage) -> (Duration, u64) {
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    (tv(ru.ru_utime) + tv(ru.ru_stime), ru.ru_minflt as u64)
}

#[cfg(not(unix))]
fn usage(_: &()) -> (Duration, u64) {
    (Duration::ZERO, 0)
}

/// Reap `pid` with wait4 (retrying on EINTR); the exit code and rusage.
#[cfg(unix)]
pub fn wait4(pid: u32) -> io::Result<(i32, libc::rusage)> {
    let mut status = 0;
    // SAFETY: rusage is plain data; zero is a valid bit pattern.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: valid pointers for the duration of the call.
        let r = unsafe { libc::wait4(pid as libc::pid_t, &mut status, 0, &mut ru) };
        if r >= 0 {
            break;
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    let code = if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { 128 + libc::WTERMSIG(status) };
    Ok((code, ru))
}

/// No wait4 elsewhere: the harness runs on Unix only (see `main`).
#[cfg(not(unix))]
pub fn wait4(_: u32) -> io::Result<(i32, ())> {
    Err(io::Error::new(io::ErrorKind::Unsupported, "wait4: the hook benchmarks run on Unix only"))
}

/// Spawn, feed, read, reap.
pub fn run_once(spec: &Spec) -> io::Result<Outcome> {
    let start = Instant::now();
    let mut child = spec.command().stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
    {
        let mut sin = child.stdin.take().expect("piped stdin");
        // A child that exits without reading gives EPIPE: not our problem.
        let _ = sin.write_all(&spec.stdin);
    }
    let mut stdout = Vec::new();
    child.stdout.take().expect("piped stdout").read_to_end(&mut stdout)?;
    let mut stderr = Vec::new();
    child.stderr.take().expect("piped stderr").read_to_end(&mut stderr)?;
    let (code, ru) = wait4(child.id())?;
    let wall = start.elapsed();
    let (cpu, faults) = usage(&ru);
    Ok(Outcome { wall, code, stdout, stderr, cpu, faults })
}

/// Peak RSS of one run, through the static launcher (see [`Tools`]): KiB.
pub fn peak_rss_kib(tools: &Tools, spec: &Spec) -> io::Result<u64> {
    let mut c = Command::new(&tools.probe);
    c.arg(&spec.program)
        .args(&spec.args)
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&spec.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = c.spawn()?;
    {
        let mut sin = child.stdin.take().expect("piped stdin");
        let _ = sin.write_all(&spec.stdin);
    }
    let mut out = String::new();
    child.stdout.take().expect("piped stdout").read_to_string(&mut out)?;
    let (code, _) = wait4(child.id())?;
    if code != 0 {
        return Err(io::Error::other(format!("rss probe exited {code} for {}", spec.display())));
    }
    out.split_whitespace()
        .next()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| io::Error::other(format!("rss probe said {out:?}")))
}

/// Binaries the harness builds itself.
pub struct Tools {
    /// The floor: reads stdin, prints `{}`.
    pub floor: PathBuf,
    /// The same program linked statically (glibc static-pie), when this
    /// toolchain can: reported beside the floor, never the judge. The floor
    /// is what spawning any ordinary (dynamically linked) program costs;
    /// leanctx is shipped linked statically on Linux (glibc), so a reader
    /// sees both what it costs against an ordinary program and against the
    /// cheapest start the same link gives.
    pub floor_static: Option<PathBuf>,
    /// The RSS launcher: a statically linked program that spawns its
    /// arguments (stdin inherited, stdout discarded), reaps with wait4 and
    /// prints the child's ru_maxrss. Linux records the exec'ing parent's
    /// memory high-water mark in the child's ru_maxrss, so measuring from
    /// the (much larger) harness would overstate every candidate; from this
    /// launcher the overstatement is at most `probe_floor_kib`.
    pub probe: PathBuf,
    pub probe_static: bool,
    /// The launcher measuring itself (a static no-op child): RSS readings
    /// at or below this are the launcher's, not the candidate's.
    pub probe_floor_kib: u64,
    pub rustc_version: String,
}

const FLOOR_RS: &str = r#"use std::io::{Read, Write};
fn main() {
    let mut buf = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut buf);
    let _ = std::io::stdout().write_all(b"{}\n");
}
"#;

const PROBE_RS: &str = r#"use std::process::{Command, Stdio};
#[repr(C)]
struct Rusage { words: [i64; 18] }
unsafe extern "C" { fn wait4(pid: i32, status: *mut i32, options: i32, ru: *mut Rusage) -> i32; }
fn main() {
    let mut args = std::env::args_os().skip(1);
    let Some(prog) = args.next() else { return };
    if prog == "--noop" { return }
    let child = match Command::new(&prog).args(args).stdout(Stdio::null()).stderr(Stdio::null()).spawn() {
        Ok(c) => c,
        Err(e) => { eprintln!("probe: {e}"); std::process::exit(3) }
    };
    let mut ru = Rusage { words: [0; 18] };
    let mut status = 0;
    while unsafe { wait4(child.id() as i32, &mut status, 0, &mut ru) } < 0 {}
    // ru_maxrss follows ru_utime and ru_stime (two timevals).
    println!("{} {}", ru.words[4], status);
}
"#;

fn rustc() -> OsString {
    std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into())
}

fn compile(src: &str, name: &str, dir: &Path, extra: &[&str]) -> io::Result<PathBuf> {
    let rs = dir.join(format!("{name}.rs"));
    std::fs::write(&rs, src)?;
    let out = dir.join(name);
    // The release profile of Cargo.toml: opt-level 3, fat LTO, one codegen
    // unit, no debug info, stripped.
    let o = Command::new(rustc())
        .args(["--edition", "2024", "-C", "opt-level=3", "-C", "codegen-units=1", "-C", "lto=fat"])
        .args(["-C", "debuginfo=0", "-C", "strip=symbols"])
        .args(extra)
        .arg(&rs)
        .arg("-o")
        .arg(&out)
        .output()?;
    if !o.status.success() {
        return Err(io::Error::other(format!("rustc {name}.rs failed:\n{}", String::from_utf8_lossy(&o.stderr))));
    }
    Ok(out)
}

/// Build the floor and the RSS launcher into `dir`.
pub fn build_tools(dir: &Path) -> io::Result<Tools> {
    let floor = compile(FLOOR_RS, "floor", dir, &[])?;
    let floor_static = if cfg!(all(target_os = "linux", target_env = "gnu")) {
        compile(FLOOR_RS, "floor-static", dir, &["-C", "target-feature=+crt-static"])
            .map_err(|e| eprintln!("\n!!! no statically linked floor ({e}): that line is left out\n"))
            .ok()
    } else {
        None
    };
    let (probe, probe_static) = match compile(PROBE_RS, "rss-probe", dir, &["-C", "target-feature=+crt-static"]) {
        Ok(p) => (p, true),
        Err(e) => {
            eprintln!(
                "\n!!! could not link the RSS launcher statically ({e}); using a dynamic one: \
                 peak RSS figures will be overstated by its own (larger) footprint\n"
            );
            (compile(PROBE_RS, "rss-probe", dir, &[])?, false)
        }
    };
    let noop = Spec {
        program: probe.clone(),
        args: vec!["--noop".into()],
        env: Vec::new(),
        cwd: dir.to_path_buf(),
        stdin: Vec::new(),
    };
    let mut tools =
        Tools { floor, floor_static, probe, probe_static, probe_floor_kib: 0, rustc_version: String::new() };
    tools.probe_floor_kib = (0..3).filter_map(|_| peak_rss_kib(&tools, &noop).ok()).max().unwrap_or(0);
    tools.rustc_version = Command::new(rustc())
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    Ok(tools)
}

/// Percentiles of a sample (nearest rank).
#[derive(Clone, Copy, Debug, Default)]
pub struct Stats {
    pub n: usize,
    pub p50: Duration,
    pub p90: Duration,
    pub p99: Duration,
}

impl Stats {
    pub fn of(samples: &[Duration]) -> Stats {
        let mut v = samples.to_vec();
        v.sort_unstable();
        let n = v.len();
        if n == 0 {
            return Stats::default();
        }
        let at = |p: f64| v[((p * n as f64).ceil() as usize).clamp(1, n) - 1];
        Stats { n, p50: at(0.50), p90: at(0.90), p99: at(0.99) }
    }
}

/// `1.234 ms` / `12.3 µs` style.
pub fn fmt_dur(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us >= 1000.0 {
        format!("{:.3} ms", us / 1000.0)
    } else if us >= 10.0 {
        format!("{us:.1} µs")
    } else {
        format!("{us:.2} µs")
    }
}
