//! `leanctx status`: what the state says now.

pub mod gate;
pub mod hooks;
pub mod hoststate;
mod human;
pub mod stats;

use crate::base::host::Host;
use crate::base::paths;
use crate::fsx;
use crate::identity::caller::Caller;
use crate::identity::readpath::ReadPath;
use crate::state::journal::{self, Journal, View};
use crate::state::slot::{self, SlotRead};
use serde::Serialize;
use std::path::PathBuf;

#[derive(Debug, Serialize)]
pub struct Status {
    #[serde(serialize_with = "crate::base::paths::lossy::opt")]
    pub data_dir: Option<PathBuf>,
    pub now_ms: u64,
    pub current: Caller,
    pub slot: Option<SlotStatus>,
    pub window_ms: u64,
    pub live: Vec<LiveStatus>,
    pub concurrent: bool,
    pub hosts: Vec<HostStatus>,
    pub journal_bytes: u64,
    /// `false`: the read path cannot trust the state and withholds every stub (`state-unavailable`); see `problems`.
    pub state_available: bool,
    /// Every problem found, each with its fix (`problem: fix`), as in `issues`.
    pub problems: Vec<String>,
    /// The same problems, each with what fixes it.
    pub issues: Vec<Issue>,
    /// No problem found (`leanctx status` exits 0; else 1).
    pub healthy: bool,
    /// The data dir does not exist yet (no hook has run); the first hook
    /// event creates it. Not a problem as long as it can be created.
    pub data_dir_created: bool,
    /// Open subagents of every conversation (started inside the TTL, not yet stopped), oldest first.
    pub subagents: Vec<SubagentStatus>,
    /// Bytes the read path saved today and in the last 7 days (`leanctx stats`).
    pub saved: Option<stats::Saved>,
    /// Each host in one word (`working`, `waiting`, `never-fired`, …): the
    /// first lines of the plain report.
    pub host_states: Vec<HostLine>,
    /// Worth knowing, not a problem (hooks installed that are waiting for
    /// their first event): `healthy` does not count them.
    pub notes: Vec<String>,
}

/// One host's state, as the plain report's first lines say it.
#[derive(Debug, Serialize)]
pub struct HostLine {
    pub host: Host,
    /// The host's name for people ("Claude Code").
    pub name: &'static str,
    pub state: hoststate::HostState,
    /// When the config holding leanctx's entries last changed (unix ms).
    pub installed_ms: Option<u64>,
    pub last_event_ms: Option<u64>,
    /// Whether `leanctx serve` is registered as its MCP server, and its last call.
    pub server: crate::install::inspect::ServerReport,
}

/// One problem and what fixes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Issue {
    pub problem: String,
    pub fix: String,
}

impl Issue {
    pub fn new(problem: impl Into<String>, fix: impl Into<String>) -> Issue {
        Issue { problem: problem.into(), fix: fix.into() }
    }

    /// `problem: fix` on one line.
    pub fn line(&self) -> String {
        if self.fix.is_empty() { self.problem.clone() } else { format!("{}: {}", self.problem, self.fix) }
    }
}

/// What fixes a data dir problem.
fn dir_fix(p: &paths::DirProblem) -> String {
    use paths::DirProblem as D;
    match p {
        D::NoHome => "set HOME, or LEAN_CTX_DATA_DIR to a directory of your own".into(),
        D::Relative(d) => {
            format!("set LEAN_CTX_DATA_DIR to an absolute path (the same in every process), not {}", d.display())
        }
        D::NotADirectory(d) => format!(
            "move {} out of the way (the first hook creates the dir), or set LEAN_CTX_DATA_DIR elsewhere",
            d.display()
        ),
        D::WrongOwner { .. } => "use a data dir of your own (set LEAN_CTX_DATA_DIR), or have it chowned to you".into(),
        D::TooOpen { path, .. } => format!("chmod 700 {}", path.display()),
        D::Io { path, err } if err.kind() == std::io::ErrorKind::PermissionDenied => format!(
            "make {} reachable by you (chmod u+rwx on it and u+x on its parents), or set LEAN_CTX_DATA_DIR elsewhere",
            path.display()
        ),
        D::Io { .. } => "fix the path, or set LEAN_CTX_DATA_DIR to a directory of your own".into(),
    }
}

/// Why a report has no journal to read.
#[derive(Debug)]
pub(crate) enum JournalProblem {
    /// The data dir cannot be used.
    Dir(paths::DirProblem),
    /// The dir is fine; reading the journal failed.
    Read(std::io::Error),
}

impl std::fmt::Display for JournalProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JournalProblem::Dir(e) => write!(f, "{e}"),
            JournalProblem::Read(e) => write!(f, "cannot read the journal: {e}"),
        }
    }
}

/// What both reports do first: check the data dir, then read its journal
/// (a missing journal reads as empty).
pub(crate) fn read_journal(dir: &std::path::Path) -> Result<String, JournalProblem> {
    paths::check_data_dir(dir).map_err(JournalProblem::Dir)?;
    Journal::new(dir).read().map_err(JournalProblem::Read)
}

/// No such path (or a parent is a file).
fn is_missing(e: &std::io::Error) -> bool {
    matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory)
}

/// A data dir that does not exist yet: can the first hook create it? The
/// nearest existing ancestor must be a directory we may write into.
/// `Err`: why not (for people).
pub fn creatable(dir: &std::path::Path) -> Result<(), String> {
    let mut a = dir.parent();
    while let Some(p) = a {
        match std::fs::metadata(p) {
            Ok(md) if !md.is_dir() => return Err(format!("{} is not a directory", p.display())),
            Ok(_) => {
                let ok = fsx::may_create_in(p).map_err(|e| e.to_string())?;
                return if ok { Ok(()) } else { Err(format!("permission denied: {} is not writable", p.display())) };
            }
            Err(e) if is_missing(&e) => a = p.parent(),
            Err(e) => return Err(format!("{}: {e}", p.display())),
        }
    }
    Err("no existing parent directory".into())
}

/// Can hooks record into `dir` (now, or by creating it)? For "never fired":
/// hooks that cannot record may have fired all the same.
pub fn can_record(dir: &std::path::Path) -> bool {
    match std::fs::symlink_metadata(dir) {
        Err(e) if is_missing(&e) => creatable(dir).is_ok(),
        Err(_) => false,
        Ok(_) => paths::check_data_dir(dir).is_ok() && fsx::may_create_in(dir).unwrap_or(false),
    }
}

#[derive(Debug, Serialize)]
pub struct SubagentStatus {
    /// The subagent's scope (`task:<id>`, `agent:<id>`); an id the host sent
    /// in a shape that cannot be stored is kept as `h:<hash>`.
    pub id: String,
    /// The conversation that started it.
    pub parent: String,
    pub host: Host,
    pub start_ms: u64,
    /// Other live conversations of the same host sighted since it started.
    /// A Cursor subagent's hooks carry a fresh `conversation_id` that nothing
    /// links to its parent: it may be one of these. They count as
    /// conversations of their own (concurrent: slot-based stubs withheld).
    pub conversations_since_start: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct SlotStatus {
    pub conversation: Option<String>,
    pub agent: Option<String>,
    pub host: Option<String>,
    pub event: Option<String>,
    pub age_ms: u64,
    pub ttl_left_ms: u64,
    pub live: bool,
}

#[derive(Debug, Serialize)]
pub struct LiveStatus {
    pub host: Host,
    pub conversation: String,
    pub last_seen_ms: u64,
    pub last_event: String,
    pub last_compaction_ms: Option<u64>,
    pub active_subagents: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct HostStatus {
    pub host: Host,
    pub last_event: String,
    pub last_seen_ms: u64,
    pub conversation: String,
}

pub fn gather(rp: &ReadPath) -> Status {
    let now = rp.now();
    let mut issues: Vec<Issue> = Vec::new();
    let mut problems = Vec::new();
    let dir = rp.data_dir().map(|d| d.to_path_buf());
    let mut not_created = false;
    match &dir {
        None => issues.push(match paths::data_dir_path() {
            Err(e) => Issue::new(e.to_string(), dir_fix(&e)),
            Ok(_) => Issue::new("no data dir", "set LEAN_CTX_DATA_DIR"),
        }),
        Some(d) if std::fs::symlink_metadata(d).is_err_and(|e| is_missing(&e)) => {
            // Nothing has run yet: not a problem if the first hook can create it.
            not_created = true;
            if let Err(why) = creatable(d) {
                issues.push(Issue::new(
                    format!("data dir {} does not exist and cannot be created ({why}); hooks cannot record", d.display()),
                    format!(
                        "create it yourself (mkdir -p -m 700 {}), or set LEAN_CTX_DATA_DIR to a directory you can write",
                        d.display()
                    ),
                ));
            }
        }
        Some(d) => {
            if let Err(e) = paths::check_data_dir(d) {
                issues.push(Issue::new(e.to_string(), dir_fix(&e)));
            } else {
                // A probe with some bytes in it: an empty file can still be
                // created on a full disk, where every hook fails to record.
                let probe = d.join(format!(".tmp-status-probe-{}", std::process::id()));
                let wrote = std::fs::write(&probe, [b'x'; 512]);
                let _ = std::fs::remove_file(&probe);
                // State paths that exist but are not what we write (a dir
                // where a file goes, a FIFO, a symlink, 0400, another
                // user's, too large): hooks cannot record, readers withhold.
                for (name, max) in [
                    (paths::JOURNAL_FILE, paths::JOURNAL_MAX_BYTES),
                    (paths::JOURNAL_LOCK_FILE, u64::MAX),
                    (paths::SLOT_FILE, paths::SLOT_MAX_BYTES),
                    (paths::SCOPES_DIR, 0),
                ] {
                    let Ok(md) = std::fs::symlink_metadata(d.join(name)) else { continue };
                    let problem = if name == paths::SCOPES_DIR {
                        (!md.is_dir()).then(|| "is not a directory".to_string())
                    } else {
                        fsx::state_problem(&md, max)
                    };
                    if let Some(p) = problem {
                        let path = d.join(name);
                        issues.push(Issue::new(
                            format!(
                                "{} {p}; hooks cannot record and readers withhold (state-unavailable)",
                                path.display()
                            ),
                            format!(
                                "remove {} (rm -r if a directory); the next hook event writes it again as a 0600 file",
                                path.display()
                            ),
                        ));
                    }
                }
                // Hooks ran (the lock file exists) but the journal is gone
                // or empty: what it said is lost.
                let lock = std::fs::symlink_metadata(d.join(paths::JOURNAL_LOCK_FILE)).is_ok();
                let recover = "it recovers by itself at the next hook event (start or continue a chat); \
                               until then stubs are withheld, which only costs tokens";
                match std::fs::symlink_metadata(d.join(paths::JOURNAL_FILE)) {
                    Err(_) if lock => issues.push(Issue::new(
                        format!(
                            "{} is missing while journal.lock exists (deleted?); readers withhold \
                             (state-unavailable) until a hook records again",
                            d.join(paths::JOURNAL_FILE).display()
                        ),
                        recover,
                    )),
                    Ok(md) if lock && md.is_file() && md.len() == 0 => issues.push(Issue::new(
                        format!(
                            "{} is empty while journal.lock exists (emptied?); readers withhold (state-unavailable)",
                            d.join(paths::JOURNAL_FILE).display()
                        ),
                        recover,
                    )),
                    _ => {}
                }
                match wrote {
                    Ok(()) => {
                        if let Some(free) = fsx::free_bytes(d)
                            && free < MIN_FREE_BYTES
                        {
                            issues.push(Issue::new(
                                format!(
                                    "data dir {} is nearly full ({free} bytes free); hooks may fail to record",
                                    d.display()
                                ),
                                "free some space on that file system",
                            ));
                        }
                    }
                    Err(e) => issues.push(Issue::new(
                        format!("data dir {} is not writable: {e}; hooks cannot record", d.display()),
                        format!(
                            "chmod u+rwx {} (and check that its file system is not read-only or full)",
                            d.display()
                        ),
                    )),
                }
            }
        }
    }
    let usable = dir.as_deref().filter(|d| paths::check_data_dir(d).is_ok());
    let text = match dir.as_deref().map(read_journal) {
        Some(Ok(t)) => t,
        Some(Err(e @ JournalProblem::Read(_))) => {
            issues.push(Issue::new(
                e.to_string(),
                "see the problems above; a journal lock held by a hung process clears when it exits",
            ));
            String::new()
        }
        // A data dir that cannot be used is one of the problems above.
        Some(Err(JournalProblem::Dir(_))) | None => String::new(),
    };
    let view = View::parse(&text);
    let slot = usable.and_then(|d| match slot::read_slot(d, now) {
        Ok(SlotRead::Live(s)) => Some((s, true)),
        Ok(SlotRead::Expired(s)) => Some((s, false)),
        Ok(SlotRead::Absent) => None,
        Ok(SlotRead::Invalid) => {
            issues.push(Issue::new(
                "active_transcript.json does not parse",
                format!("remove {}; the next hook event writes it again", d.join(paths::SLOT_FILE).display()),
            ));
            None
        }
        Err(e) => {
            issues.push(Issue::new(
                format!("cannot read active_transcript.json: {e}"),
                format!("remove {}; the next hook event writes it again", d.join(paths::SLOT_FILE).display()),
            ));
            None
        }
    });
    let live: Vec<LiveStatus> = view
        .live_conversations(now)
        .into_iter()
        .map(|l| LiveStatus {
            host: l.host,
            conversation: l.conversation.to_string(),
            last_seen_ms: l.last_seen_ms,
            last_event: l.last_event.to_string(),
            last_compaction_ms: view.last_compaction(l.conversation),
            active_subagents: view.active_subagents(l.conversation, now).into_iter().map(str::to_string).collect(),
        })
        .collect();
    let subagents = open_subagents(&view, &live, now);
    let hosts: Vec<HostStatus> = view
        .last_event_per_host()
        .into_iter()
        .map(|l| HostStatus {
            host: l.host,
            last_event: l.last_event.to_string(),
            last_seen_ms: l.last_seen_ms,
            conversation: l.conversation.to_string(),
        })
        .collect();
    // What the read path makes of it all: one decision, as a server asks.
    let probe = rp.decide(&crate::identity::readpath::StubQuery::default());
    let state_available = probe.decision.reason != crate::identity::decision::Reason::StateUnavailable;
    if !state_available {
        issues.push(Issue::new(
            "the read path withholds every stub (state-unavailable) until the state is fixed",
            "fix the problems above",
        ));
    }
    let cwd = std::env::current_dir().ok();
    // The MCP gate's policy files: one that does not parse makes the gate
    // ask (deny on Codex) for every gated MCP call.
    let sources = crate::gate::load_policies(&paths::data_dir_path(), &cwd.iter().cloned().collect::<Vec<_>>());
    for l in crate::gate::loaded(&sources) {
        if let crate::gate::Loaded::Broken(e) = l {
            issues.push(Issue::new(
                format!(
                    "gate policy {e}: the gate answers \"ask\" (deny on Codex) to every gated MCP call until it is \
                     fixed"
                ),
                "fix the JSON at that line and column (README.md, \"The MCP gate\", has an example), or remove the \
                 file; then `leanctx gate check --host <host> --tool <tool>` shows what the gate decides",
            ));
        }
    }
    // The hook configs, as `leanctx hooks status` sees them (user scope and
    // the current dir's project): outdated entries, a binary that is gone,
    // unreadable files, Codex hooks switched off, hooks that never fired.
    let mut any_installed = false;
    let mut host_states = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    if let Ok(hs) = hooks::gather(&Host::ALL, cwd.as_deref(), now) {
        for h in &hs.hosts {
            any_installed |= h.installed;
            for i in &h.issues {
                issues.push(Issue::new(format!("{}: {}", h.host, i.problem), i.fix.clone()));
            }
            for n in &h.notes {
                // The Cursor/Claude Code note concerns both: said once.
                let line = if n == crate::hosts::overlap::NOTE { n.clone() } else { format!("{}: {n}", h.host) };
                if !notes.contains(&line) {
                    notes.push(line);
                }
            }
            host_states.push(HostLine {
                host: h.host,
                name: crate::hosts::profile::profile(h.host).name,
                state: h.state,
                installed_ms: h.installed_ms,
                last_event_ms: h.last_event.as_ref().map(|l| l.at_ms),
                server: h.server.clone(),
            });
        }
    }
    // No hooks at all: nothing is recorded, whatever the journal says of
    // the past (README: "no hooks installed at all" is a problem).
    if !any_installed {
        let seen = if hosts.is_empty() {
            "and no hook has fired"
        } else {
            "(hooks fired before: were they removed?); nothing new is recorded"
        };
        issues.push(Issue::new(
            format!("no host has leanctx's hooks installed {seen}"),
            "run `leanctx hooks install --all` (every host found here) or `leanctx hooks install <host>` \
             (cursor, claude-code, codex, codebuddy), then use the host once and run `leanctx status` again",
        ));
    }
    problems.extend(issues.iter().map(Issue::line));
    Status {
        current: rp.resolve(None, now).caller,
        slot: slot.map(|(s, live)| SlotStatus {
            conversation: s.conversation().map(str::to_string),
            agent: s.agent.clone(),
            host: s.host.clone(),
            event: s.event.clone(),
            age_ms: s.age_ms(now),
            ttl_left_ms: slot::SLOT_TTL_MS.saturating_sub(s.age_ms(now)),
            live,
        }),
        window_ms: journal::WINDOW_MS,
        concurrent: view.concurrent(now),
        live,
        hosts,
        journal_bytes: usable.map(|d| Journal::new(d).size()).unwrap_or(0),
        saved: usable.map(|d| stats::saved(d, now)),
        data_dir: dir,
        state_available,
        now_ms: now,
        healthy: issues.is_empty(),
        problems,
        issues,
        data_dir_created: !not_created,
        subagents,
        host_states,
        notes,
    }
}

/// Every open subagent, with the live conversations of its host sighted
/// since it started (other than its parent).
fn open_subagents(view: &View<'_>, live: &[LiveStatus], now: u64) -> Vec<SubagentStatus> {
    let mut parents: Vec<&str> = Vec::new();
    for r in &view.records {
        if let journal::Record::SubagentStart { conv, .. } = *r
            && !parents.contains(&conv)
        {
            parents.push(conv);
        }
    }
    let mut out = Vec::new();
    for parent in parents {
        for agent in view.active_subagents(parent, now) {
            let start = view.records.iter().rev().find_map(|r| match *r {
                journal::Record::SubagentStart { t, host, conv, agent: a }
                    if conv == parent && a == agent && !journal::is_future(t, now) =>
                {
                    Some((t, host))
                }
                _ => None,
            });
            let Some((start_ms, host)) = start else { continue };
            let conversations_since_start = live
                .iter()
                .filter(|l| l.host == host && l.conversation != parent && l.last_seen_ms >= start_ms)
                .map(|l| l.conversation.clone())
                .collect();
            out.push(SubagentStatus {
                id: agent.to_string(),
                parent: parent.to_string(),
                host,
                start_ms,
                conversations_since_start,
            });
        }
    }
    out.sort_by(|a, b| a.start_ms.cmp(&b.start_ms).then(a.id.cmp(&b.id)));
    out
}

/// Less free space than this in the data dir's file system is a problem.
pub const MIN_FREE_BYTES: u64 = 64 * 1024;

/// "3 s ago", "5 min ago", "2 h ago", "3 days ago": how long before `now`
/// (both unix ms) `t` was, for people.
pub fn ago(now: u64, t: u64) -> String {
    let ms = now.saturating_sub(t);
    match ms {
        0..=999 => format!("{ms} ms ago"),
        1000..=119_999 => format!("{} s ago", ms / 1000),
        120_000..=7_199_999 => format!("{} min ago", ms / 60_000),
        7_200_000..=172_799_999 => format!("{} h ago", ms / 3_600_000),
        _ => format!("{} days ago", ms / 86_400_000),
    }
}
