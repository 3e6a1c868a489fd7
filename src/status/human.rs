//! `leanctx status` for people: one plain line per host first, then the
//! verdict, then the details, in the user's words rather than the code's
//! (issue 25: `current unknown`, `slot none`, `0 live …: single`).

use super::hoststate::HostState;
use super::{HostLine, Status, ago};
use crate::identity::caller::Source;
use std::fmt::Write as _;

/// The label column of the details: "active chats" and a space.
const W: usize = 14;

/// What one host is doing, for its first line.
fn host_text(h: &HostLine, now: u64) -> String {
    let since = |t: Option<u64>| t.map(|t| format!(" {}", ago(now, t))).unwrap_or_default();
    match h.state {
        HostState::Working => format!("working, last event{}", since(h.last_event_ms)),
        HostState::Waiting => {
            format!("installed{}, waiting for its first event (see the note below)", since(h.installed_ms))
        }
        HostState::NeverFired => {
            format!("installed{} and never fired (see the problem below)", since(h.installed_ms))
        }
        HostState::Off => "hooks installed but switched off in Codex's config (see the problem below)".into(),
        HostState::Unknown => "installed; cannot tell whether they fired (see the problems below)".into(),
        HostState::Removed => format!("no hooks installed now (last event{})", since(h.last_event_ms)),
        HostState::NotInstalled => "not set up".into(),
    }
}

/// Where the caller named by `current` comes from, in plain words.
fn source_text(s: Source) -> &'static str {
    match s {
        Source::Slot => "the chat that acted last",
        Source::Custom => "LEAN_CTX_SCOPE",
        Source::TaskEnv => "CURSOR_TASK_ID",
        Source::ProcessEnv => "CLAUDE_CODE_SESSION_ID",
        Source::MetaSession | Source::ToolUseId | Source::Fingerprint => "this MCP call",
        Source::Disabled | Source::None => "nothing",
    }
}

impl Status {
    pub fn human(&self) -> String {
        let mut o = String::new();
        let now = self.now_ms;
        let mut not_set_up = Vec::new();
        for h in &self.host_states {
            if h.state == HostState::NotInstalled {
                not_set_up.push(h.name);
            } else {
                let _ = writeln!(o, "{}: {}", h.name, host_text(h, now));
                let _ = writeln!(o, "  MCP server {}", super::hooks::server_line(&h.server, now));
            }
        }
        if !not_set_up.is_empty() {
            let _ = writeln!(
                o,
                "Not set up: {} (`leanctx hooks install --all` adds every host found)",
                not_set_up.join(", ")
            );
        }
        match self.issues.len() {
            0 => {
                let _ = writeln!(o, "OK: no problem found");
            }
            n => {
                let _ = writeln!(o, "{n} problem{}, each with its fix below", if n == 1 { "" } else { "s" });
            }
        }
        let _ = writeln!(o);
        let created = if self.data_dir_created { "" } else { " (not created yet: the first hook event creates it)" };
        let _ = writeln!(
            o,
            "{:<W$}{}{created}",
            "data dir",
            self.data_dir.as_ref().map(|d| d.display().to_string()).unwrap_or_else(|| "(none)".into())
        );
        let cur = match &self.current.scope {
            Some(s) => format!("{s} (from {})", source_text(self.current.source)),
            None if self.current.source == Source::Disabled => {
                "any: scoping is switched off (LEAN_CTX_CONVERSATION_SCOPE), every stub is allowed".into()
            }
            None => "none known (a server that names no chat gets no stub)".into(),
        };
        let _ = writeln!(o, "{:<W$}{cur}", "chat asking");
        if let Some(s) = &self.slot {
            let _ = writeln!(
                o,
                "{:<W$}{} ({} {}), {}{}",
                "acted last",
                s.agent.as_deref().or(s.conversation.as_deref()).unwrap_or("-"),
                s.host.as_deref().unwrap_or("?"),
                s.event.as_deref().unwrap_or("?"),
                ago(now, now - s.age_ms),
                if s.live {
                    format!(", trusted for {} min more", s.ttl_left_ms / 60_000)
                } else {
                    " (too old to trust)".into()
                }
            );
        }
        let window = format!("in the last {} s", self.window_ms / 1000);
        let chats = match (self.live.len(), self.concurrent) {
            (0, _) => format!("none active {window}"),
            (n, false) => format!("{n} active {window}"),
            (n, true) => format!(
                "{n} active at once {window}: stubs that only \"the chat that acted last\" could vouch for are withheld"
            ),
        };
        let _ = writeln!(o, "{:<W$}{chats}", "active chats");
        for l in &self.live {
            let comp = l.last_compaction_ms.map(|c| format!(", compacted {}", ago(now, c))).unwrap_or_default();
            let subs = if l.active_subagents.is_empty() {
                String::new()
            } else {
                format!(", subagents: {}", l.active_subagents.join(" "))
            };
            let _ = writeln!(
                o,
                "  {:<w$}{}  {} {}{comp}{subs}",
                l.host.as_str(),
                l.conversation,
                l.last_event,
                ago(now, l.last_seen_ms),
                w = W - 2
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
                "{:<W$}{} of {} ({}), started {}{seen}",
                "subagent",
                sa.id,
                sa.parent,
                sa.host.as_str(),
                ago(now, sa.start_ms)
            );
        }
        if self.hosts.is_empty() && !self.state_available {
            let _ = writeln!(o, "{:<W$}none seen (the state cannot be read: see the problems)", "last events");
        } else if self.hosts.is_empty() {
            let _ = writeln!(o, "{:<W$}no hook has fired yet", "last events");
        } else {
            for (i, h) in self.hosts.iter().enumerate() {
                let label = if i == 0 { "last events" } else { "" };
                let _ = writeln!(o, "{label:<W$}{:<12}{} {}", h.host.as_str(), h.last_event, ago(now, h.last_seen_ms));
            }
        }
        if let Some(sv) = &self.saved {
            let _ = writeln!(o, "{:<W$}{}", "saved", sv.line());
        }
        for n in &self.notes {
            let _ = writeln!(o, "{:<W$}{n}", "note");
        }
        for i in &self.issues {
            let _ = writeln!(o, "{:<W$}{}", "problem", i.problem);
            if !i.fix.is_empty() {
                let _ = writeln!(o, "{:<W$}{}", "  fix", i.fix);
            }
        }
        o
    }
}
