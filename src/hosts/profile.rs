//! Every fact about a host that leanctx relies on outside its payload
//! parser, in one table: where its config lives, which files hold hooks and
//! in which shape, the event a gated MCP call arrives on, and what to tell a
//! user about it. Sources: docs/HOST-FACTS.md.

use crate::base::host::Host;

/// Which of the two hook config shapes a host uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// Cursor: `{"version": 1, "hooks": {"event": [{command, timeout}]}}`.
    Flat,
    /// Claude Code, Codex, CodeBuddy: `{"hooks": {"Event": [{matcher?, hooks: [{type, command, timeout}]}]}}`.
    Nested,
}

/// The facts about one host.
#[derive(Debug)]
pub struct HostProfile {
    pub host: Host,
    /// The config dir's name: under the home dir (user scope) and in a
    /// project.
    pub config_dir: &'static str,
    /// The variable that moves the user config dir, if the host has one.
    pub config_dir_var: Option<&'static str>,
    /// The file that holds hooks, in the config dir.
    pub hooks_file: &'static str,
    /// The per-user file of a project, not checked in (`--local`).
    pub local_file: Option<&'static str>,
    pub shape: Shape,
    /// Whether the host reads comments (JSONC) in its hook config. None is
    /// known to: Claude Code reports a settings file with `//` comments as
    /// "Invalid or malformed JSON" and ignores it (anthropics/claude-code
    /// issues #83190, #63760; JSONC support is an open request, #17968);
    /// Codex reads hooks.json with serde_json; Cursor and CodeBuddy document
    /// plain JSON and nothing says they accept more. A comment in such a
    /// file would already break it, so the installer refuses it with its
    /// position rather than editing around it. The editor keeps comments
    /// byte for byte: a host found to accept them needs only `true` here.
    pub accepts_comments: bool,
    /// The entries leanctx installs (`hooks/<host>.json`, compiled in).
    pub entries: &'static str,
    /// The event a gated MCP call arrives on (what `gate check` shows).
    pub gate_event: &'static str,
    /// What to know after the hook config changed.
    pub install_note: &'static str,
    /// Said too when the change was to a project's config.
    pub project_note: Option<&'static str>,
    /// How to get hooks that are installed but never fired to run.
    pub never_fired_fix: &'static str,
}

const CURSOR: HostProfile = HostProfile {
    host: Host::Cursor,
    config_dir: ".cursor",
    config_dir_var: None,
    hooks_file: "hooks.json",
    local_file: None,
    shape: Shape::Flat,
    accepts_comments: false,
    entries: include_str!("../../hooks/cursor.json"),
    gate_event: "beforeMCPExecution",
    install_note: "Cursor reloads hooks.json on save; restart Cursor if the hooks do not show in its Hooks tab",
    project_note: Some("project hooks run only in a trusted workspace"),
    never_fired_fix: "check Cursor's Hooks tab (restart Cursor if they are missing); project hooks need a trusted \
                      workspace",
};

const CLAUDE_CODE: HostProfile = HostProfile {
    host: Host::ClaudeCode,
    config_dir: ".claude",
    config_dir_var: Some("CLAUDE_CONFIG_DIR"),
    hooks_file: "settings.json",
    local_file: Some("settings.local.json"),
    shape: Shape::Nested,
    accepts_comments: false,
    entries: include_str!("../../hooks/claude-code.json"),
    gate_event: "PreToolUse",
    install_note: "Claude Code uses the hooks in new sessions; interactive sessions run hooks only in folders you \
                   trust",
    project_note: None,
    never_fired_fix: "start a new Claude Code session; interactive sessions run hooks only in folders you trust",
};

const CODEX: HostProfile = HostProfile {
    host: Host::Codex,
    config_dir: ".codex",
    config_dir_var: Some("CODEX_HOME"),
    hooks_file: "hooks.json",
    local_file: None,
    shape: Shape::Nested,
    accepts_comments: false,
    entries: include_str!("../../hooks/codex.json"),
    gate_event: "PreToolUse",
    install_note: "Codex runs new or changed hooks only after you trust them: start codex, open /hooks and trust \
                   the leanctx entries (`codex exec` never asks, so untrusted hooks do not run there). \
                   `leanctx hooks status codex` tells whether they have fired.",
    project_note: Some("project hooks load only in a project Codex trusts"),
    never_fired_fix: "Codex runs new or changed hooks only after you trust them: start codex, open /hooks and trust \
                      the leanctx entries (codex exec never asks; untrusted hooks do not run there)",
};

const CODEBUDDY: HostProfile = HostProfile {
    host: Host::CodeBuddy,
    config_dir: ".codebuddy",
    config_dir_var: Some("CODEBUDDY_CONFIG_DIR"),
    hooks_file: "settings.json",
    local_file: Some("settings.local.json"),
    shape: Shape::Nested,
    accepts_comments: false,
    entries: include_str!("../../hooks/codebuddy.json"),
    gate_event: "PreToolUse",
    install_note: "CodeBuddy reads hooks at startup and asks you to review edited hooks in /hooks",
    project_note: None,
    never_fired_fix: "restart CodeBuddy and review the edited hooks in /hooks",
};

/// The facts about `host`.
pub fn profile(host: Host) -> &'static HostProfile {
    match host {
        Host::Cursor => &CURSOR,
        Host::ClaudeCode => &CLAUDE_CODE,
        Host::Codex => &CODEX,
        Host::CodeBuddy => &CODEBUDDY,
    }
}

impl HostProfile {
    /// The host's user config dir: its variable if set (empty counts as
    /// unset), else `config_dir` under `home`.
    pub fn user_dir(
        &self,
        home: impl FnOnce() -> Result<std::path::PathBuf, String>,
    ) -> Result<std::path::PathBuf, String> {
        match self.config_dir_var.and_then(std::env::var_os).filter(|v| !v.is_empty()) {
            Some(d) => Ok(d.into()),
            None => Ok(home()?.join(self.config_dir)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_profile_is_its_hosts() {
        for h in Host::ALL {
            assert_eq!(profile(h).host, h);
        }
    }
}
