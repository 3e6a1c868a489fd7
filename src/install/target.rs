//! Where each host keeps its hook config (docs/HOSTS.md §2).

use crate::base::host::Host;
use std::path::{Path, PathBuf};

/// User scope or a project.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    User,
    Project { dir: PathBuf, local: bool },
}

/// One config file of one host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub host: Host,
    pub scope: Scope,
    /// The host's config dir for this scope (`~/.claude`, `<project>/.claude`).
    pub dir: PathBuf,
    /// The file we edit, as the host names it (may be a symlink).
    pub file: PathBuf,
}

impl Target {
    pub fn describe_scope(&self) -> String {
        match &self.scope {
            Scope::User => "user".into(),
            Scope::Project { dir, local: false } => format!("project {}", dir.display()),
            Scope::Project { dir, local: true } => format!("project {} (local)", dir.display()),
        }
    }
}

/// A variable from the environment; empty counts as unset.
fn env_dir(name: &str) -> Option<PathBuf> {
    std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from)
}

pub fn home() -> Result<PathBuf, String> {
    env_dir("HOME")
        .or_else(|| directories::BaseDirs::new().map(|b| b.home_dir().to_path_buf()))
        .ok_or_else(|| "no home directory (HOME is not set)".to_string())
}

/// The host's user config dir, honouring its override variable.
pub fn user_dir(host: Host) -> Result<PathBuf, String> {
    let (var, name) = match host {
        Host::Cursor => (None, ".cursor"),
        Host::ClaudeCode => (Some("CLAUDE_CONFIG_DIR"), ".claude"),
        Host::Codex => (Some("CODEX_HOME"), ".codex"),
        Host::CodeBuddy => (Some("CODEBUDDY_CONFIG_DIR"), ".codebuddy"),
    };
    match var.and_then(env_dir) {
        Some(d) => Ok(d),
        None => Ok(home()?.join(name)),
    }
}

/// The config dir name inside a project.
fn project_dir_name(host: Host) -> &'static str {
    match host {
        Host::Cursor => ".cursor",
        Host::ClaudeCode => ".claude",
        Host::Codex => ".codex",
        Host::CodeBuddy => ".codebuddy",
    }
}

fn file_name(host: Host, local: bool) -> &'static str {
    match (host, local) {
        (Host::Cursor | Host::Codex, _) => "hooks.json",
        (Host::ClaudeCode | Host::CodeBuddy, false) => "settings.json",
        (Host::ClaudeCode | Host::CodeBuddy, true) => "settings.local.json",
    }
}

/// Whether the host reads comments (JSONC) in this config file. None is
/// known to: Claude Code reports a settings file with `//` comments as
/// "Invalid or malformed JSON" and ignores it (anthropics/claude-code issues
/// #83190, #63760; JSONC support is an open request, #17968); Codex reads
/// hooks.json with serde_json; Cursor and CodeBuddy document plain JSON and
/// nothing says they accept more. A comment in such a file would already
/// break it, so the installer refuses it with its position rather than
/// editing around it. The editor keeps comments byte for byte: a host that
/// is found to accept them needs only `true` here.
pub fn accepts_comments(host: Host) -> bool {
    match host {
        Host::Cursor | Host::ClaudeCode | Host::Codex | Host::CodeBuddy => false,
    }
}

/// Whether the host has a `settings.local.json`.
pub fn has_local(host: Host) -> bool {
    matches!(host, Host::ClaudeCode | Host::CodeBuddy)
}

pub fn resolve(host: Host, project: Option<&Path>, local: bool) -> Result<Target, String> {
    if local && !has_local(host) {
        return Err(format!("--local is for claude-code and codebuddy; {host} has no local settings file"));
    }
    match project {
        None if local => Err("--local is a project file: use --project <DIR> --local".into()),
        None => {
            let dir = user_dir(host)?;
            Ok(Target { host, scope: Scope::User, file: dir.join(file_name(host, false)), dir })
        }
        Some(p) => {
            let p = if p.is_absolute() {
                p.to_path_buf()
            } else {
                std::env::current_dir().map_err(|e| format!("current dir: {e}"))?.join(p)
            };
            if !p.is_dir() {
                return Err(format!("project dir {} does not exist", p.display()));
            }
            let p = std::fs::canonicalize(&p).unwrap_or(p);
            let dir = p.join(project_dir_name(host));
            Ok(Target { host, scope: Scope::Project { dir: p, local }, file: dir.join(file_name(host, local)), dir })
        }
    }
}

/// Every file of `host` that `hooks status` looks at: the user file, and
/// the project files of `cwd` that exist; for Codex also each scope's
/// config.toml that holds hooks (or cannot be read).
pub fn status_targets(host: Host, cwd: Option<&Path>) -> Result<Vec<Target>, String> {
    let mut v = vec![resolve(host, None, false)?];
    if let Some(cwd) = cwd {
        let locals: &[bool] = if has_local(host) { &[false, true] } else { &[false] };
        for &local in locals {
            if let Ok(t) = resolve(host, Some(cwd), local) {
                // The user dir can be the project's (a project in $HOME).
                if t.file.exists() && !v.iter().any(|u| same_file(&u.file, &t.file)) {
                    v.push(t);
                }
            }
        }
    }
    if host == Host::Codex {
        let mut scopes = vec![v[0].clone()];
        scopes.extend(cwd.and_then(|c| resolve(host, Some(c), false).ok()));
        let tomls: Vec<Target> = scopes
            .iter()
            .map(|t| Target { file: t.dir.join("config.toml"), ..t.clone() })
            .filter(|t| {
                std::fs::read_to_string(&t.file)
                    .is_ok_and(|s| super::tomlfile::parse(&s).map_or(true, |d| d.has_hooks()))
            })
            .collect();
        for t in tomls {
            if !v.iter().any(|u| same_file(&u.file, &t.file)) {
                v.push(t);
            }
        }
    }
    Ok(v)
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}
