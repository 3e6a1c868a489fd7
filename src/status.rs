//! `leanctx status`: what the state says now.

use crate::host::Host;
use crate::identity::Caller;
use crate::journal::{self, Journal, View};
use crate::paths;
use crate::readpath::ReadPath;
use crate::slot::{self, SlotRead};
use serde::Serialize;
use std::fmt::Write as _;
use std::path::PathBuf;

#[derive(Debug, Serialize)]
pub struct Status {
    pub data_dir: Option<PathBuf>,
    pub now_ms: u64,
    pub current: Caller,
    pub slot: Option<SlotStatus>,
    pub window_ms: u64,
    pub live: Vec<LiveStatus>,
    pub concurrent: bool,
    pub hosts: Vec<HostStatus>,
    pub journal_bytes: u64,
    /// `false`: the read path cannot trust the state and withholds every
    /// stub (`state-unavailable`); `problems` says why.
    pub state_available: bool,
    pub problems: Vec<String>,
    /// Open subagents of every conversation (started inside the TTL, not
    /// yet stopped), oldest first.
    pub subagents: Vec<SubagentStatus>,
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
    let mut problems = Vec::new();
    let dir = rp.data_dir().map(|d| d.to_path_buf());
    match &dir {
        None => problems.push(match paths::data_dir_path() {
            Err(e) => e.to_string(),
            Ok(_) => "no data dir".into(),
        }),
        Some(d) => {
            if let Err(e) = paths::check_data_dir(d) {
                problems.push(e.to_string());
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
                        paths::state_problem(&md, max)
                    };
                    if let Some(p) = problem {
                        problems.push(format!(
                            "{} {p}; hooks cannot record and readers withhold (state-unavailable)",
                            d.join(name).display()
                        ));
                    }
                }
                // Hooks ran (the lock file exists) but the journal is gone
                // or empty: what it said is lost.
                let lock = std::fs::symlink_metadata(d.join(paths::JOURNAL_LOCK_FILE)).is_ok();
                match std::fs::symlink_metadata(d.join(paths::JOURNAL_FILE)) {
                    Err(_) if lock => problems.push(format!(
                        "{} is missing while journal.lock exists (deleted?); readers withhold (state-unavailable) \
                         until a hook records again",
                        d.join(paths::JOURNAL_FILE).display()
                    )),
                    Ok(md) if lock && md.is_file() && md.len() == 0 => problems.push(format!(
                        "{} is empty while journal.lock exists (emptied?); readers withhold (state-unavailable)",
                        d.join(paths::JOURNAL_FILE).display()
                    )),
                    _ => {}
                }
                match wrote {
                    Ok(()) => {
                        if let Some(free) = free_bytes(d)
                            && free < MIN_FREE_BYTES
                        {
                            problems.push(format!(
                                "data dir {} is nearly full ({free} bytes free); hooks may fail to record",
                                d.display()
                            ));
                        }
                    }
                    Err(e) => {
                        problems.push(format!("data dir {} is not writable: {e}; hooks cannot record", d.display()))
                    }
                }
            }
        }
    }
    let usable = dir.as_deref().filter(|d| paths::check_data_dir(d).is_ok());
    let text = match usable.map(|d| Journal::new(d).read()) {
        Some(Ok(t)) => t,
        Some(Err(e)) => {
            problems.push(format!("cannot read the journal: {e}"));
            String::new()
        }
        None => String::new(),
    };
    let view = View::parse(&text);
    let slot = usable.and_then(|d| match slot::read_slot(d, now) {
        Ok(SlotRead::Live(s)) => Some((s, true)),
        Ok(SlotRead::Expired(s)) => Some((s, false)),
        Ok(SlotRead::Absent) => None,
        Ok(SlotRead::Invalid) => {
            problems.push("active_transcript.json does not parse".into());
            None
        }
        Err(e) => {
            problems.push(format!("cannot read active_transcript.json: {e}"));
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
    let probe = rp.decide(&crate::readpath::StubQuery::default());
    let state_available = probe.decision.reason != crate::decision::Reason::StateUnavailable;
    if !state_available {
        problems.push("the read path withholds every stub (state-unavailable) until the state is fixed".into());
    }
    let seen: Vec<Host> = hosts.iter().map(|h| h.host).collect();
    problems.extend(crate::install::status::installed_but_never_fired(&seen, std::env::current_dir().ok().as_deref()));
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
        state_available,
        data_dir: dir,
        now_ms: now,
        problems,
        subagents,
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

/// Bytes available to us in the file system holding `dir`.
fn free_bytes(dir: &std::path::Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: a valid NUL-terminated path and a zeroed out-struct.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
}

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

impl Status {
    pub fn human(&self) -> String {
        let mut o = String::new();
        let now = self.now_ms;
        let _ = writeln!(
            o,
            "data dir     {}",
            self.data_dir.as_ref().map(|d| d.display().to_string()).unwrap_or_else(|| "(none)".into())
        );
        let cur = match &self.current.scope {
            Some(s) => format!("{s} (from {})", self.current.source.as_str()),
            None if self.current.source == crate::identity::Source::Disabled => {
                "scoping disabled (LEAN_CTX_CONVERSATION_SCOPE)".into()
            }
            None => "unknown".into(),
        };
        let _ = writeln!(o, "current      {cur}");
        match &self.slot {
            Some(s) => {
                let _ = writeln!(
                    o,
                    "slot         {} via {} {}, {}{}",
                    s.agent.as_deref().or(s.conversation.as_deref()).unwrap_or("-"),
                    s.host.as_deref().unwrap_or("?"),
                    s.event.as_deref().unwrap_or("?"),
                    ago(now, now - s.age_ms),
                    if s.live { format!(", TTL left {} min", s.ttl_left_ms / 60_000) } else { ", expired".into() }
                );
            }
            None => {
                let _ = writeln!(o, "slot         none");
            }
        }
        let verdict = if self.concurrent { "CONCURRENT (slot-based stubs withheld)" } else { "single" };
        let _ =
            writeln!(o, "conversations {} live in the last {} s: {verdict}", self.live.len(), self.window_ms / 1000);
        for l in &self.live {
            let comp = l.last_compaction_ms.map(|c| format!(", compacted {}", ago(now, c))).unwrap_or_default();
            let subs = if l.active_subagents.is_empty() {
                String::new()
            } else {
                format!(", subagents: {}", l.active_subagents.join(" "))
            };
            let _ = writeln!(
                o,
                "  {:<11} {}  {} {}{comp}{subs}",
                l.host.as_str(),
                l.conversation,
                l.last_event,
                ago(now, l.last_seen_ms)
            );
        }
        for sa in &self.subagents {
            let seen = if sa.conversations_since_start.is_empty() {
                String::new()
            } else {
                format!(
                    "; conversations seen since, maybe its own (not linked to the parent: counted as concurrent): {}",
                    sa.conversations_since_start.join(" ")
                )
            };
            let _ = writeln!(
                o,
                "subagent     {} of {} ({}), started {}{seen}",
                sa.id,
                sa.parent,
                sa.host.as_str(),
                ago(now, sa.start_ms)
            );
        }
        if self.hosts.is_empty() {
            let _ = writeln!(o, "hosts        no hook has fired yet");
        } else {
            let _ = writeln!(o, "hosts        last event seen:");
            for h in &self.hosts {
                let _ = writeln!(o, "  {:<11} {} {}", h.host.as_str(), h.last_event, ago(now, h.last_seen_ms));
            }
        }
        for p in &self.problems {
            let _ = writeln!(o, "problem      {p}");
        }
        o
    }
}
