//! Which policy files count for one call, and how each was found: the one
//! decision the hook, `gate check` and `status` all make through
//! [`load_policies`], so that what `gate check` says is what the hook does.
//!
//! - The user's file, `<data dir>/gate.json`, counts only from a data dir
//!   leanctx trusts (ours, not writable by group or others) and only if the
//!   file itself is ours and writable by nobody else. A user file that
//!   exists where it cannot be trusted is a broken policy: the gate asks
//!   (denies on Codex) until it is fixed, as for one that does not parse.
//!   Refusing it silently would drop the user's deny rules; using it would
//!   let anyone who can write there change them. A relative
//!   `LEAN_CTX_DATA_DIR` is refused the same way (each process would find
//!   another file, by its own cwd).
//! - Workspace files, `.lean-ctx/gate.json`, in every directory from each
//!   workspace root (the hook's `cwd`, Cursor's `workspace_roots`) up to
//!   the project root: the nearest ancestor holding `.git` (a dir, or a
//!   file in a worktree or submodule), as Codex finds its project root
//!   (`project_root_markers`, default `.git`). Without one, the root itself
//!   only. A workspace file may only tighten unless the user trusts its dir
//!   (`gate::mark_workspace`).

use crate::base::paths::{DirProblem, POLICY_FILE, PROJECT_POLICY};
use crate::gate::policy::{self, PolicyError};
use crate::gate::{Loaded, mark_workspace};
use std::path::{Path, PathBuf};

/// The longest walk up from a workspace root looking for `.git`.
pub const MAX_WALK: usize = 64;

/// One policy file for a call: where, and what was found there (`None`:
/// no file).
#[derive(Clone, Debug)]
pub struct Source {
    pub path: PathBuf,
    pub loaded: Option<Loaded>,
    /// The user's own file (the others are workspace files).
    pub user: bool,
}

/// The user's file and every workspace file for `roots`, loaded, with the
/// workspace files the user has not trusted marked (their allows ignored).
/// `data_dir` is where the data dir is (or why it is not known), as
/// `base::paths::data_dir_path` says; its trust is checked here.
pub fn load_policies(data_dir: &Result<PathBuf, DirProblem>, roots: &[PathBuf]) -> Vec<Source> {
    let mut out = Vec::new();
    if let Some(s) = user_source(data_dir) {
        out.push(s);
    }
    let user_path = out.first().map(|s| s.path.clone());
    let trusted = match out.first() {
        Some(Source { loaded: Some(Loaded::Policy(p)), .. }) => p.trusted_workspaces.clone(),
        _ => Vec::new(),
    };
    for path in workspace_paths(roots) {
        if out.iter().any(|s| s.path == path) {
            continue;
        }
        let loaded = match policy::load(&path) {
            Ok(None) => None,
            Ok(Some(mut p)) => {
                mark_workspace(&mut p, user_path.as_deref(), &trusted);
                Some(Loaded::Policy(p))
            }
            Err(e) => Some(Loaded::Broken(e)),
        };
        out.push(Source { path, loaded, user: false });
    }
    out
}

/// The loaded files alone, in order (what `gate::evaluate` takes).
pub fn loaded(sources: &[Source]) -> Vec<Loaded> {
    sources.iter().filter_map(|s| s.loaded.clone()).collect()
}

fn user_source(data_dir: &Result<PathBuf, DirProblem>) -> Option<Source> {
    let broken = |path: PathBuf, message: String| Source {
        loaded: Some(Loaded::Broken(PolicyError { path: path.clone(), line: 0, column: 0, message })),
        path,
        user: true,
    };
    let dir = match data_dir {
        Ok(d) => d,
        // No home and no LEAN_CTX_DATA_DIR: there is no user file to find.
        Err(DirProblem::NoHome) => return None,
        Err(DirProblem::Relative(d)) => {
            return Some(broken(
                d.join(POLICY_FILE),
                "cannot be trusted: LEAN_CTX_DATA_DIR is a relative path (each process would read another \
                 file); set it to an absolute path"
                    .into(),
            ));
        }
        Err(p) => return Some(broken(PathBuf::from(POLICY_FILE), format!("cannot be located: {p}"))),
    };
    let path = dir.join(POLICY_FILE);
    match crate::base::paths::check_data_dir(dir) {
        Ok(()) => {}
        Err(DirProblem::Io { err, .. }) if err.kind() == std::io::ErrorKind::NotFound => {
            return Some(Source { path, loaded: None, user: true });
        }
        Err(problem) => {
            // An untrusted dir: its policy counts as broken if there is one
            // (or if we cannot tell), and as absent only when it is surely
            // not there.
            return Some(match std::fs::symlink_metadata(&path) {
                Err(e) if matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory) => {
                    Source { path, loaded: None, user: true }
                }
                _ => broken(path, format!("cannot be trusted: {problem}")),
            });
        }
    }
    let loaded = match policy::load_trusted(&path) {
        Ok(None) => None,
        Ok(Some(p)) => Some(Loaded::Policy(p)),
        Err(e) => Some(Loaded::Broken(e)),
    };
    Some(Source { path, loaded, user: true })
}

/// `.lean-ctx/gate.json` in each dir from each root up to its project root,
/// nearest first, each path once. Roots that are not absolute are skipped
/// (a payload's relative `cwd` says nothing about where the workspace is).
pub fn workspace_paths(roots: &[PathBuf]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for root in roots.iter().filter(|r| r.is_absolute()) {
        for dir in up_to_project_root(root) {
            let p = dir.join(PROJECT_POLICY);
            if !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
}

/// `root` and its ancestors up to the nearest one holding `.git`; just
/// `root` when there is none within [`MAX_WALK`] levels.
fn up_to_project_root(root: &Path) -> Vec<&Path> {
    let chain: Vec<&Path> = root.ancestors().take(MAX_WALK).collect();
    match chain.iter().position(|d| std::fs::symlink_metadata(d.join(".git")).is_ok()) {
        Some(i) => chain[..=i].to_vec(),
        None => vec![root],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_walk_stops_at_the_project_root() {
        let t = tempfile::tempdir().unwrap();
        let repo = t.path().join("repo");
        let app = repo.join("packages/app");
        std::fs::create_dir_all(&app).unwrap();
        // No .git: the root alone.
        assert_eq!(workspace_paths(std::slice::from_ref(&app)), [app.join(PROJECT_POLICY)]);
        std::fs::create_dir(repo.join(".git")).unwrap();
        let want = [app.join(PROJECT_POLICY), repo.join("packages").join(PROJECT_POLICY), repo.join(PROJECT_POLICY)];
        assert_eq!(workspace_paths(std::slice::from_ref(&app)), want);
        // A worktree's .git is a file; the nearest marker wins.
        std::fs::write(app.join(".git"), "gitdir: x").unwrap();
        assert_eq!(workspace_paths(std::slice::from_ref(&app)), [app.join(PROJECT_POLICY)]);
        // Relative roots say nothing; duplicates count once.
        assert!(workspace_paths(&[PathBuf::from("rel/dir")]).is_empty());
        assert_eq!(workspace_paths(&[app.clone(), app.clone()]).len(), 1);
    }

    #[test]
    fn the_walk_is_bounded() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir(t.path().join(".git")).unwrap();
        // The marker MAX_WALK - 1 levels up is found; one level further is not.
        let deep = |n: usize| (0..n).fold(t.path().to_path_buf(), |p, _| p.join("d"));
        let near = deep(MAX_WALK - 1);
        std::fs::create_dir_all(deep(MAX_WALK)).unwrap();
        assert_eq!(workspace_paths(std::slice::from_ref(&near)).len(), MAX_WALK);
        let far = deep(MAX_WALK);
        assert_eq!(workspace_paths(std::slice::from_ref(&far)), [far.join(PROJECT_POLICY)]);
    }
}
