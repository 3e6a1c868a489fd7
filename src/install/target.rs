//! Where each host keeps its hook config (docs/HOST-FACTS.md §2).

use crate::base::host::Host;
use crate::hosts::profile::profile;
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

/// The home dir the hosts' user configs are under ([`crate::hosts::home`]).
pub fn home() -> Result<PathBuf, String> {
    crate::hosts::home()
}

/// The host's user config dir, honouring its override variable.
pub fn user_dir(host: Host) -> Result<PathBuf, String> {
    profile(host).user_dir(home)
}

fn file_name(host: Host, local: bool) -> &'static str {
    let p = profile(host);
    if local { p.local_file.unwrap_or(p.hooks_file) } else { p.hooks_file }
}

/// Whether the host reads comments in its hook config
/// ([`HostProfile::accepts_comments`](crate::hosts::profile::HostProfile::accepts_comments)).
pub fn accepts_comments(host: Host) -> bool {
    profile(host).accepts_comments
}

/// Whether the host has a `settings.local.json`.
pub fn has_local(host: Host) -> bool {
    profile(host).local_file.is_some()
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
            let dir = p.join(profile(host).config_dir);
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
                super::fsio::read_config(&t.file)
                    .ok()
                    .flatten()
                    .is_some_and(|s| super::tomlfile::parse(&s).map_or(true, |d| d.has_hooks()))
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
