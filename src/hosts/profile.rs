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
    /// The host's name for people ("Claude Code").
    pub name: &'static str,
    /// The programs whose presence on PATH shows the host is installed
    /// (docs/HOST-FACTS.md §2).
    pub binaries: &'static [&'static str],
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
    /// Where and how `leanctx serve` is registered as an MCP server.
    pub server: ServerProfile,
    /// The host can withdraw a delivered result with no hook, and its
    /// transcript (`transcript_path`) records it: a stub then also needs
    /// the transcript's word (src/witness/, docs/DELIVERY.md §8). Only
    /// Claude Code: no public record of Cursor's or CodeBuddy's transcript
    /// shows a compaction or a withdrawal (§8, "Cursor and CodeBuddy
    /// transcripts").
    pub transcript_witness: bool,
    /// The hooks' `transcript_path` is the file that holds the
    /// conversation's history: a turn hook naming another file for the same
    /// conversation means the history was replaced, which ends every earlier
    /// delivery (Codex's rewind, `thread/revert`, goes on in a new rollout
    /// file with the same session id, its `windowId` unchanged and no hook
    /// but SessionEnd and SessionStart `resume`; docs/DELIVERY.md §3).
    pub history_file: bool,
    /// Silence after which the host may clear old results at the next
    /// prompt, writing its record too late to be read in time: such a
    /// prompt ends every earlier delivery (the idle rule, ms).
    pub idle_clear_ms: Option<u64>,
}

/// Which file holds a host's user-scope MCP servers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerFile {
    /// A file in the host's user config dir (`config_dir_var`, else
    /// `config_dir` under the home dir).
    InConfigDir(&'static str),
    /// A file in the dir `config_dir_var` names when it is set, else in the
    /// home dir itself (Claude Code's `~/.claude.json`).
    InVarDirElseHome(&'static str),
    /// A file in the home dir, whatever `config_dir_var` says.
    InHome(&'static str),
}

/// How a host registers an MCP server: the file, the table of servers in
/// it, and the fields of an entry. The entry always runs `<leanctx> serve`
/// (the binary as an argv word, never a shell string).
#[derive(Debug)]
pub struct ServerProfile {
    pub file: ServerFile,
    /// The object/table of servers, by name: `mcpServers`, `mcp_servers`.
    pub table: &'static str,
    /// Write `"type": "stdio"` (what the host's own `mcp add` writes).
    pub stdio_type: bool,
    /// Codex starts MCP servers with a short list of variables
    /// (docs/HOST-FACTS.md): these are passed on by name (`env_vars`), so
    /// the server finds the data dir the hooks write to.
    pub env_vars: &'static [&'static str],
    /// How this was established: a real host run here, or its documentation only.
    pub source: &'static str,
    /// Whether a real host here read the registration (`source` says how).
    pub verified: bool,
    /// What to know after the registration changed.
    pub note: &'static str,
}

/// Claude Code 2.1.328 clears old tool results at the first prompt after
/// more than 3,900 s without a response (measured offline, docs/DELIVERY.md
/// §8). leanctx times the silence from its Stop hook, which runs just after
/// the response; a minute's margin covers the hook's own delay.
pub const CLAUDE_IDLE_CLEAR_MS: u64 = (3_900 - 60) * 1000;

const CURSOR: HostProfile = HostProfile {
    host: Host::Cursor,
    name: "Cursor",
    binaries: &["cursor", "cursor-agent"],
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
    server: ServerProfile {
        file: ServerFile::InConfigDir("mcp.json"),
        table: "mcpServers",
        stdio_type: false,
        env_vars: &[],
        source: "documentation only (cursor.com/docs/mcp: global servers in ~/.cursor/mcp.json)",
        verified: false,
        note: "Cursor starts MCP servers from mcp.json; turn leanctx on in Settings > MCP if it is off",
    },
    transcript_witness: false,
    history_file: false,
    idle_clear_ms: None,
};

const CLAUDE_CODE: HostProfile = HostProfile {
    host: Host::ClaudeCode,
    name: "Claude Code",
    binaries: &["claude"],
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
    server: ServerProfile {
        file: ServerFile::InVarDirElseHome(".claude.json"),
        table: "mcpServers",
        stdio_type: true,
        env_vars: &[],
        source: "Claude Code 2.1.328 here: `claude mcp add -s user` writes this file and entry, \
                 `claude mcp get` reads it (tests/e2e)",
        verified: true,
        note: "Claude Code starts the server in new sessions (`claude mcp list` shows it)",
    },
    transcript_witness: true,
    history_file: true,
    idle_clear_ms: Some(CLAUDE_IDLE_CLEAR_MS),
};

const CODEX: HostProfile = HostProfile {
    host: Host::Codex,
    name: "Codex",
    binaries: &["codex"],
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
    server: ServerProfile {
        file: ServerFile::InConfigDir("config.toml"),
        table: "mcp_servers",
        stdio_type: false,
        env_vars: &["LEAN_CTX_DATA_DIR", "XDG_DATA_HOME"],
        source: "Codex 0.169.0 here: `codex mcp add` writes this table, `codex mcp list` reads it (tests/e2e)",
        verified: true,
        note: "Codex starts the server in new sessions (`codex mcp list` shows it)",
    },
    transcript_witness: false,
    history_file: true,
    idle_clear_ms: None,
};

const CODEBUDDY: HostProfile = HostProfile {
    host: Host::CodeBuddy,
    name: "CodeBuddy Code",
    binaries: &["codebuddy"],
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
    server: ServerProfile {
        file: ServerFile::InHome(".codebuddy.json"),
        table: "mcpServers",
        stdio_type: true,
        env_vars: &[],
        source: "documentation only (codebuddy.ai/docs/cli/mcp: user scope ~/.codebuddy.json)",
        verified: false,
        note: "CodeBuddy starts MCP servers at startup (`codebuddy mcp list` shows them)",
    },
    transcript_witness: false,
    history_file: false,
    idle_clear_ms: None,
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

/// What `leanctx serve` declares for Claude Code in `tools/list`
/// (`_meta["anthropic/maxResultSizeChars"]`): results up to it reach the model
/// whole instead of as a 2 KB preview (docs/DELIVERY.md §1, fixture
/// `claude/size-60k-annot500k`).
pub const CLAUDE_MAX_RESULT_CHARS: u64 = 500_000;

/// The host an MCP client is, from the `clientInfo.name` of its
/// `initialize` (Claude Code `claude-code`, Codex `codex-mcp-client`, Cursor
/// `cursor-vscode`; CodeBuddy's is not verified: any name with `codebuddy`).
pub fn host_of_mcp_client(name: &str) -> Option<Host> {
    let n = name.to_ascii_lowercase();
    [("claude", Host::ClaudeCode), ("codex", Host::Codex), ("cursor", Host::Cursor), ("codebuddy", Host::CodeBuddy)]
        .into_iter()
        .find(|(needle, _)| n.contains(needle))
        .map(|(_, h)| h)
}

/// The largest result (bytes of text) `leanctx serve` hands `host` in one
/// piece: the most that host was verified to give the model whole, so that
/// every delivery can be confirmed and none arrives cut (docs/DELIVERY.md
/// §1). Claude Code: 400 KB were seen whole under the declared
/// [`CLAUDE_MAX_RESULT_CHARS`]; Codex: its output budget's whole size
/// ([`crate::state::ledger::codex_whole`]); Cursor, CodeBuddy and an
/// unknown client: the unverified hosts' cap. Larger files go out as line
/// ranges.
pub fn whole_delivery_limit(host: Option<Host>, codex_budget_tokens: u64) -> u64 {
    use crate::state::ledger;
    match host {
        Some(Host::ClaudeCode) => 400_000,
        Some(Host::Codex) => codex_budget_tokens.saturating_mul(ledger::CODEX_WHOLE_BYTES_PER_1000_TOKENS) / 1000,
        Some(Host::Cursor | Host::CodeBuddy) | None => ledger::UNVERIFIED_HOST_CAP_BYTES,
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

    /// The file that holds the host's user-scope MCP servers.
    pub fn server_file(
        &self,
        home: impl Fn() -> Result<std::path::PathBuf, String>,
    ) -> Result<std::path::PathBuf, String> {
        let var = self.config_dir_var.and_then(std::env::var_os).filter(|v| !v.is_empty());
        match self.server.file {
            ServerFile::InConfigDir(name) => Ok(self.user_dir(home)?.join(name)),
            ServerFile::InVarDirElseHome(name) => match var {
                Some(d) => Ok(std::path::PathBuf::from(d).join(name)),
                None => Ok(home()?.join(name)),
            },
            ServerFile::InHome(name) => Ok(home()?.join(name)),
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

    #[test]
    fn mcp_clients_and_their_limits() {
        assert_eq!(host_of_mcp_client("claude-code"), Some(Host::ClaudeCode));
        assert_eq!(host_of_mcp_client("codex-mcp-client"), Some(Host::Codex));
        assert_eq!(host_of_mcp_client("cursor-vscode"), Some(Host::Cursor));
        assert_eq!(host_of_mcp_client("CodeBuddy"), Some(Host::CodeBuddy));
        assert_eq!(host_of_mcp_client("inspector"), None);
        // Each limit is one the host's acknowledgement rule still calls whole.
        let l = whole_delivery_limit(Some(Host::Codex), 2_500);
        assert!(crate::state::ledger::codex_whole(l, 2_500) && !crate::state::ledger::codex_whole(l + 1, 2_500));
        assert_eq!(whole_delivery_limit(Some(Host::Cursor), 0), crate::state::ledger::UNVERIFIED_HOST_CAP_BYTES);
        assert_eq!(whole_delivery_limit(None, 0), crate::state::ledger::UNVERIFIED_HOST_CAP_BYTES);
        assert!(whole_delivery_limit(Some(Host::ClaudeCode), 0) < CLAUDE_MAX_RESULT_CHARS);
    }
}
