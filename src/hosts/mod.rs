//! Per-host payloads and answers. Each host file turns a payload into an
//! [`Event`] and a gate verdict into the host's own dialect.

#[cfg(feature = "cli")]
pub mod claude;
#[cfg(feature = "cli")]
pub mod codebuddy;
#[cfg(feature = "cli")]
pub mod codex;
#[cfg(feature = "cli")]
pub mod cursor;
#[cfg(feature = "cli")]
pub mod event;
#[cfg(feature = "cli")]
pub mod overlap;
// The host facts table is also the read path's (a host's idle threshold,
// whether its transcript can witness a delivery); the rest is the hook's.
pub mod profile;

/// The home dir the hosts keep their user config under. Unix: `$HOME`.
/// Windows: `%USERPROFILE%`, never `HOME`: Node's `os.homedir()` (Claude
/// Code, Cursor, CodeBuddy) reads `USERPROFILE`, Codex's `dirs::home_dir()`
/// the profile folder, and a `HOME` that Git Bash or the user set elsewhere
/// is read by none of them (docs/HOST-FACTS.md §6). Else the platform's own
/// answer (the passwd entry; the profile folder, from the Known Folder API).
#[cfg(feature = "cli")]
pub fn home() -> Result<std::path::PathBuf, String> {
    let var = if cfg!(windows) { "USERPROFILE" } else { "HOME" };
    std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from)
        .or_else(crate::base::paths::home_dir)
        .ok_or_else(|| format!("no home directory ({var} is not set)"))
}

#[cfg(feature = "cli")]
use crate::base::host::Host;
#[cfg(feature = "cli")]
use crate::gate::Verdict;
#[cfg(feature = "cli")]
use crate::hosts::event::Event;
#[cfg(feature = "cli")]
use serde_json::Value;

#[cfg(feature = "cli")]
/// Parse a payload for `host`. `event_override` is `--event`.
pub fn parse(host: Host, payload: &Value, event_override: Option<&str>, env: &HookEnv) -> Event {
    match host {
        Host::Cursor => cursor::parse(payload, event_override, env),
        Host::ClaudeCode => claude::parse(Host::ClaudeCode, payload, event_override),
        Host::Codex => claude::parse(Host::Codex, payload, event_override),
        Host::CodeBuddy => claude::parse(Host::CodeBuddy, payload, event_override),
    }
}

#[cfg(feature = "cli")]
/// What the host wants on stdout for this event and verdict; `None` prints
/// nothing. `event_name` is the raw event name (may be empty when the payload
/// could not be read).
pub fn answer(host: Host, event_name: &str, gated: bool, verdict: &Verdict) -> Option<String> {
    match host {
        Host::Cursor => cursor::answer(event_name, gated, verdict),
        Host::ClaudeCode => claude::answer(verdict),
        Host::Codex => codex::answer(verdict),
        Host::CodeBuddy => codebuddy::answer(verdict),
    }
}

/// The parts of the hook process environment that shape an event.
#[cfg(feature = "cli")]
#[derive(Clone, Debug, Default)]
pub struct HookEnv {
    /// `CURSOR_TASK_ID`: the hook runs inside a Cursor subagent.
    pub cursor_task_id: Option<String>,
    /// `CLAUDE_PID`: the Claude Code process (lineage across `/clear`).
    pub claude_pid: Option<u32>,
    /// Codex's config dir (`CODEX_HOME`, else `~/.codex`): its `config.toml`
    /// sets the output budget a result must fit to reach the model whole.
    pub codex_home: Option<std::path::PathBuf>,
}

#[cfg(feature = "cli")]
impl HookEnv {
    pub fn from_process() -> HookEnv {
        HookEnv {
            cursor_task_id: std::env::var("CURSOR_TASK_ID")
                .ok()
                .filter(|s| crate::base::ids::is_valid_id(s.trim()))
                .map(|s| s.trim().to_string()),
            claude_pid: std::env::var("CLAUDE_PID").ok().and_then(|s| s.trim().parse().ok()),
            codex_home: profile::profile(Host::Codex).user_dir(home).ok(),
        }
    }
}
