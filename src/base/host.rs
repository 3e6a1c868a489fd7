//! The four hosts leanctx serves.

use std::fmt;
use std::str::FromStr;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Host {
    Cursor,
    ClaudeCode,
    Codex,
    CodeBuddy,
}

impl Host {
    pub const ALL: [Host; 4] = [Host::Cursor, Host::ClaudeCode, Host::Codex, Host::CodeBuddy];

    /// The host a canonical name ([`Host::as_str`]) names; no aliases.
    pub fn from_name(s: &str) -> Option<Host> {
        Host::ALL.into_iter().find(|h| h.as_str() == s)
    }

    /// The canonical name, as used on the command line and in state files.
    pub fn as_str(self) -> &'static str {
        match self {
            Host::Cursor => "cursor",
            Host::ClaudeCode => "claude-code",
            Host::Codex => "codex",
            Host::CodeBuddy => "codebuddy",
        }
    }
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Host {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "cursor" => Ok(Host::Cursor),
            "claude-code" | "claude" | "claudecode" => Ok(Host::ClaudeCode),
            "codex" => Ok(Host::Codex),
            "codebuddy" | "codebuddy-code" => Ok(Host::CodeBuddy),
            _ => Err(format!("unknown host {s:?} (expected cursor, claude-code, codex or codebuddy)")),
        }
    }
}

impl serde::Serialize for Host {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}
