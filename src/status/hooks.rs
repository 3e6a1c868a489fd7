//! `leanctx hooks status`: per host, where its config is, whether our
//! entries are in it (and current), and whether they have ever fired —
//! the only way to notice hooks a host silently skips (Codex runs new or
//! changed hooks only after the user trusts them in `/hooks`).

use super::hoststate::{self, Facts, HostState};
use super::{Issue, ago};
use crate::base::host::Host;
use crate::base::paths;
use crate::hosts::overlap;
use crate::install::InstallError;
use crate::install::inspect::{
    FileReport, FileState, ServerReport, codex_hooks_disabled, file_report, program_exists, server_report, user_entries,
};
use crate::install::target;
use crate::state::journal::View;
use serde::Serialize;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

#[derive(Debug, Serialize)]
pub struct HooksStatus {
    #[serde(serialize_with = "crate::base::paths::lossy::opt")]
    pub data_dir: Option<PathBuf>,
    pub hosts: Vec<HostReport>,
    pub problems: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct HostReport {
    pub host: Host,
    #[serde(serialize_with = "crate::base::paths::lossy::path")]
    pub config_dir: PathBuf,
    pub config_dir_exists: bool,
    pub files: Vec<FileReport>,
    /// Any file has our entries.
    pub installed: bool,
    /// `working`, `waiting`, `never-fired`, `off`, `unknown`, `removed`,
    /// `not-installed` (status/hoststate.rs).
    pub state: HostState,
    /// When the config holding our entries last changed (unix ms).
    pub installed_ms: Option<u64>,
    pub last_event: Option<LastEvent>,
    /// Whether `leanctx serve` is registered as the host's MCP server (user
    /// scope) and when the hooks last saw a call to it.
    pub server: ServerReport,
    /// Each warning as `problem: fix`, as in `issues`.
    pub warnings: Vec<String>,
    pub notes: Vec<String>,
    /// The warnings, each with its fix.
    pub issues: Vec<Issue>,
}

#[derive(Debug, Serialize)]
pub struct LastEvent {
    pub event: String,
    pub at_ms: u64,
}

/// The note for hooks installed less than [`hoststate::WAIT_MS`] ago that
/// have not fired yet.
pub const WAITING: &str = "waiting for the first event since you installed";

/// Hooks installed at `since` (unix ms; unknown: `None`) that never fired.
fn never_fired(host: Host, since: Option<u64>, now_ms: u64) -> Issue {
    let when = since.map(|t| format!(" {}", ago(now_ms, t))).unwrap_or_default();
    Issue::new(format!("installed{when} and never fired"), crate::hosts::profile::profile(host).never_fired_fix)
}

pub fn gather(hosts: &[Host], cwd: Option<&Path>, now_ms: u64) -> Result<HooksStatus, InstallError> {
    let mut problems = Vec::new();
    let data_dir = match paths::data_dir_path() {
        Ok(d) => Some(d),
        Err(e) => {
            problems.push(e.to_string());
            None
        }
    };
    let journal = match &data_dir {
        Some(d) if d.is_dir() => super::read_journal(d).unwrap_or_else(|e| {
            problems.push(e.to_string());
            String::new()
        }),
        _ => String::new(),
    };
    // Hooks that cannot record may have fired all the same.
    let recording = data_dir.as_deref().is_some_and(super::can_record);
    let view = View::parse(&journal);
    let last: Vec<_> = view.last_event_per_host();

    let mut reports = Vec::new();
    for &host in hosts {
        let config_dir = target::user_dir(host)?;
        let files: Vec<FileReport> = target::status_targets(host, cwd)?.iter().map(file_report).collect();
        let installed = files.iter().any(|f| f.entries > 0);
        let last_event = last
            .iter()
            .find(|l| l.host == host)
            .map(|l| LastEvent { event: l.last_event.to_string(), at_ms: l.last_seen_ms });
        let codex_off = host == Host::Codex && codex_hooks_disabled(&config_dir);
        let mut warnings: Vec<Issue> = Vec::new();
        let server = server_status(host, &view, &mut warnings);
        let mut notes = Vec::new();
        for f in &files {
            match f.state {
                FileState::Outdated => warnings.push(Issue::new(
                    format!("{} has outdated leanctx entries", f.path.display()),
                    format!(
                        "run `leanctx hooks install {host}`{}",
                        if f.scope == "user" { String::new() } else { " with the same --project/--local".into() }
                    ),
                )),
                FileState::Unreadable => warnings.push(Issue::new(
                    format!("cannot read {}: {}", f.path.display(), f.error.as_deref().unwrap_or("?")),
                    "fix the file (the host cannot read it either), then `leanctx hooks status` again",
                )),
                _ => {}
            }
            for p in &f.programs {
                if !program_exists(p) {
                    warnings.push(Issue::new(
                        format!("{} runs {p}, which does not exist: the host's hook fails every event", f.path.display()),
                        format!(
                            "install the binary again (bash installers/install.sh), or run `leanctx hooks install {host}` \
                             with the leanctx you have now"
                        ),
                    ));
                }
            }
        }
        let changed = files.iter().filter(|f| f.entries > 0).filter_map(|f| f.modified_ms).max();
        let facts = Facts {
            installed,
            installed_ms: changed,
            last_event_ms: last_event.as_ref().map(|l| l.at_ms),
            off: codex_off,
            recording,
        };
        let state = hoststate::state(facts, now_ms);
        if installed {
            let fix = crate::hosts::profile::profile(host).never_fired_fix;
            match (state, &last_event, changed) {
                // Switched off: that is the reason, said below.
                (HostState::Off, ..) => {}
                (HostState::NeverFired, ..) => warnings.push(never_fired(host, changed, now_ms)),
                (HostState::Waiting, ..) => {
                    notes.push(format!("{} (installed {}): {fix}", WAITING, ago(now_ms, changed.unwrap_or(now_ms))))
                }
                (HostState::Unknown, ..) => notes.push(
                    "cannot tell whether they fired: leanctx's data dir is unusable (see `leanctx status`)".into(),
                ),
                (_, Some(l), Some(c)) if l.at_ms < c => notes.push(format!(
                    "no event since the config last changed ({}){}",
                    ago(now_ms, c),
                    if host == Host::Codex { "; changed hooks need trusting again in /hooks" } else { "" }
                )),
                _ => {}
            }
            if matches!(host, Host::ClaudeCode | Host::Cursor) {
                let other = if host == Host::Cursor { Host::ClaudeCode } else { Host::Cursor };
                if user_entries(other).is_some_and(|n| n > 0) {
                    notes.push(overlap::NOTE.to_string());
                }
            }
        }
        for (i, a) in files.iter().enumerate() {
            for b in &files[i + 1..] {
                if a.entries > 0 && b.entries > 0 && a.path.parent() == b.path.parent() {
                    warnings.push(Issue::new(
                        format!(
                            "leanctx entries are in both {} and {}: Codex runs both, so every event is recorded twice",
                            a.path.display(),
                            b.path.display()
                        ),
                        "`leanctx hooks uninstall codex` removes both, then install once",
                    ));
                }
            }
        }
        if codex_off {
            warnings.push(Issue::new(
                format!(
                    "{} sets [features] hooks = false: Codex runs no hooks at all",
                    config_dir.join("config.toml").display()
                ),
                "remove that setting (or set it to true), then restart codex",
            ));
        }
        reports.push(HostReport {
            host,
            config_dir_exists: config_dir.is_dir(),
            config_dir,
            files,
            installed,
            state,
            installed_ms: changed,
            last_event,
            server,
            warnings: warnings.iter().map(Issue::line).collect(),
            notes,
            issues: warnings,
        });
    }
    Ok(HooksStatus { data_dir, hosts: reports, problems })
}

/// The server's registration, when the hooks last recorded a call to it
/// (a `C` record on a server of that name: calls are recorded by the hooks'
/// MCP gate event, so this needs the hooks too), and its problems.
fn server_status(host: Host, view: &View, warnings: &mut Vec<Issue>) -> ServerReport {
    let mut s = server_report(host);
    s.last_call_ms = view
        .records
        .iter()
        .filter_map(|r| match r {
            crate::state::journal::Record::Call(c)
                if c.host == host && c.server.is_some_and(|n| s.names.iter().any(|m| m == n)) =>
            {
                Some(c.t)
            }
            _ => None,
        })
        .max();
    let fix = format!("run `leanctx hooks install {host}`");
    match s.state {
        FileState::Outdated => warnings
            .push(Issue::new(format!("{} has an outdated leanctx MCP server entry", s.path.display()), fix.clone())),
        FileState::Unreadable => warnings.push(Issue::new(
            format!("cannot read {}: {}", s.path.display(), s.error.as_deref().unwrap_or("?")),
            "fix the file (the host cannot read it either), then `leanctx hooks status` again",
        )),
        _ => {}
    }
    for p in &s.programs {
        if !program_exists(p) {
            warnings.push(Issue::new(
                format!("{} starts {p} as the leanctx MCP server, which does not exist", s.path.display()),
                fix.clone(),
            ));
        }
    }
    s
}

/// `project`: the project whose files are shown (default: the current dir's).
pub fn print(
    host: Option<Host>,
    project: Option<&std::path::Path>,
    json: bool,
    out: &mut dyn std::io::Write,
) -> Result<(), InstallError> {
    let hosts: Vec<Host> = match host {
        Some(h) => vec![h],
        None => Host::ALL.to_vec(),
    };
    let cwd = match project {
        Some(p) => {
            let t = target::resolve(Host::Cursor, Some(p), false)?;
            match t.scope {
                target::Scope::Project { dir, .. } => Some(dir),
                target::Scope::User => None,
            }
        }
        None => std::env::current_dir().ok(),
    };
    let st = gather(&hosts, cwd.as_deref(), crate::base::clock::now_ms_env())?;
    let text = if json {
        serde_json::to_string_pretty(&st).map_err(|e| InstallError::from(e.to_string()))? + "\n"
    } else {
        st.human()
    };
    out.write_all(text.as_bytes()).map_err(crate::install::out_err)
}

/// `registered in <file> (as leanctx), last called 3 min ago`.
pub fn server_line(s: &ServerReport, now: u64) -> String {
    match s.state {
        FileState::Installed | FileState::Outdated => {
            let called = match s.last_call_ms {
                Some(t) => format!("last called {}", ago(now, t)),
                None => "never called".into(),
            };
            let doc = if s.verified { "" } else { "; host's format from its documentation only" };
            let outdated = if s.state == FileState::Outdated { "outdated, " } else { "" };
            format!("registered in {} (as {}), {outdated}{called}{doc}", s.path.display(), s.names.join(", "))
        }
        FileState::Unreadable => format!("cannot read {}", s.path.display()),
        FileState::Absent | FileState::NotInstalled => format!("not registered in {}", s.path.display()),
    }
}

impl HooksStatus {
    pub fn human(&self) -> String {
        let now = crate::base::clock::now_ms_env();
        let mut o = String::new();
        let mut noted: Vec<&str> = Vec::new();
        for h in &self.hosts {
            let exists = if h.config_dir_exists { "" } else { " (does not exist: host not installed?)" };
            let _ = writeln!(o, "{}  {}{exists}", h.host, h.config_dir.display());
            for f in &h.files {
                let state = match f.state {
                    s @ (FileState::Installed | FileState::Outdated) => {
                        format!("{}, {}/{} events", s.as_str(), f.entries, f.expected)
                    }
                    s => s.as_str().to_string(),
                };
                // The scope's word; the path says which project.
                let scope = match f.scope.as_str() {
                    "user" => "user",
                    s if s.ends_with("(local)") => "local",
                    _ => "project",
                };
                let _ = writeln!(o, "  {scope:<12}{}: {state}", f.path.display());
                for p in &f.programs {
                    let _ = writeln!(o, "  {:<12}runs {p}", "");
                }
            }
            let _ = writeln!(o, "  {:<12}{}", "MCP server", server_line(&h.server, now));
            match &h.last_event {
                Some(l) => {
                    let _ = writeln!(o, "  {:<12}{}, {}", "last event", l.event, ago(now, l.at_ms));
                }
                None => {
                    let _ = writeln!(o, "  {:<12}none seen", "last event");
                }
            }
            for w in &h.issues {
                let _ = writeln!(o, "  {:<12}{}", "warning", w.problem);
                let _ = writeln!(o, "  {:<12}{}", "  fix", w.fix);
            }
            for n in &h.notes {
                // The Cursor/Claude Code note concerns both: said once.
                if n == overlap::NOTE && noted.contains(&overlap::NOTE) {
                    continue;
                }
                noted.push(if n == overlap::NOTE { overlap::NOTE } else { "" });
                let _ = writeln!(o, "  {:<12}{n}", "note");
            }
        }
        for p in &self.problems {
            let _ = writeln!(o, "problem: {p}");
        }
        o
    }
}
