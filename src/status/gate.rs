//! `leanctx gate check`: each policy file's say about one tool call, the
//! verdict, and what the host's hook would print for it.

use crate::base::host::Host;
use crate::base::paths::DirProblem;
use crate::gate::tool::ToolRef;
use crate::gate::{Action, Loaded, Verdict, allow_ignored_note, evaluate, evaluate_file, load_policies, loaded};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// What `leanctx gate check` shows: each policy file's say and the answer.
#[derive(Debug, Serialize)]
pub struct Explanation {
    pub host: Host,
    pub tool: ToolRef,
    pub files: Vec<FileSay>,
    pub verdict: Verdict,
    /// What the hook would print (`null` = nothing).
    pub answer: Option<String>,
    /// Rules that can never match on this host, and how the server was
    /// taken.
    pub warnings: Vec<String>,
}

/// What one policy file says about the call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileStatus {
    Missing,
    NoMatch,
    Rule,
    Broken,
}

#[derive(Debug, Serialize)]
pub struct FileSay {
    #[serde(serialize_with = "crate::base::paths::lossy::path")]
    pub path: PathBuf,
    pub status: FileStatus,
    /// The deciding rule's number, counted from 1 as the text says it (`#1`).
    pub rule: Option<usize>,
    pub action: Option<Action>,
    pub error: Option<String>,
    /// Why the rule's say does not count (an untrusted workspace's allow).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// `server`: the server the call is on, as the host's own field would say
/// it (Cursor's `mcp_server_name` on `beforeMCPExecution`). `data_dir` is
/// where the data dir is, or why it is not known (`paths::data_dir_path`).
/// The files and their trust are decided by `gate::load_policies`, the
/// hook's own call: what this shows is what the hook does.
pub fn explain(
    host: Host,
    raw_tool: &str,
    server: Option<&str>,
    data_dir: &Result<PathBuf, DirProblem>,
    cwd: &Path,
) -> Explanation {
    let mut tool = ToolRef::parse(raw_tool, server);
    // `gate check` is asked about MCP tools even when named bare (Cursor).
    tool.is_mcp = true;
    let sources = load_policies(data_dir, &[cwd.to_path_buf()]);
    let user = sources.iter().find(|s| s.user).map(|s| s.path.clone());
    let files = sources
        .iter()
        .map(|s| match &s.loaded {
            None => FileSay {
                path: s.path.clone(),
                status: FileStatus::Missing,
                rule: None,
                action: None,
                error: None,
                note: None,
            },
            Some(Loaded::Policy(pol)) => {
                let say = evaluate_file(pol, &tool);
                let ignored = pol.allow_ignored && matches!(say, Some((Action::Allow, _)));
                FileSay {
                    path: s.path.clone(),
                    status: if say.is_some() { FileStatus::Rule } else { FileStatus::NoMatch },
                    rule: say.map(|(_, i)| i + 1),
                    action: say.map(|(a, _)| a),
                    error: None,
                    note: ignored.then(|| allow_ignored_note(user.as_deref())),
                }
            }
            Some(Loaded::Broken(e)) => FileSay {
                path: s.path.clone(),
                status: FileStatus::Broken,
                rule: None,
                action: Some(Action::Ask),
                error: Some(e.to_string()),
                note: None,
            },
        })
        .collect();
    let loaded = loaded(&sources);
    let verdict = evaluate(&loaded, &tool);
    let event = crate::hosts::profile::profile(host).gate_event;
    let answer = crate::hosts::answer(host, event, true, &verdict);
    let mut warnings = Vec::new();
    if let Some(named) = &tool.named_server {
        warnings.push(format!(
            "the name {raw_tool} says server {named}, --server says {}: the host's field decides (checked on {}), \
             and deny and ask rules for {named} apply too",
            server.unwrap_or_default(),
            server.unwrap_or_default()
        ));
    }
    if tool.server.is_none() {
        warnings.push(format!(
            "no server: {raw_tool} is checked as a call on any server (as Cursor's preToolUse `MCP:<tool>` is): \
             server-scoped deny and ask rules on the tool apply, server-scoped allow rules do not; \
             pass --server NAME to check a call on one server"
        ));
    }
    for l in &loaded {
        if let Loaded::Policy(p) = l {
            warnings.extend(crate::gate::never_matching(host, p));
        }
    }
    Explanation { host, tool, files, verdict, answer, warnings }
}

impl Explanation {
    pub fn human(&self) -> String {
        use std::fmt::Write as _;
        let mut o = String::new();
        let _ = writeln!(
            o,
            "tool     {} (server {}, tool {})",
            self.tool.raw,
            self.tool.server.as_deref().unwrap_or("?"),
            self.tool.tool
        );
        for f in &self.files {
            let detail = match f.status {
                FileStatus::Rule => format!(
                    "rule #{} says {}{}",
                    f.rule.unwrap_or(0),
                    f.action.map(|a| format!("{a:?}").to_lowercase()).unwrap_or_default(),
                    f.note.as_deref().map(|n| format!(" — {n}")).unwrap_or_default()
                ),
                FileStatus::Broken => format!("does not parse: {} → ask", f.error.as_deref().unwrap_or("")),
                FileStatus::NoMatch => "no rule matches".into(),
                FileStatus::Missing => "not present".into(),
            };
            let _ = writeln!(o, "policy   {}: {detail}", f.path.display());
        }
        let v = match &self.verdict {
            Verdict::NoOpinion => "no opinion (the host's own permissions apply)".to_string(),
            Verdict::Decide { action, message, decided_by, .. } => {
                format!("{} — {message} [{decided_by}]", format!("{action:?}").to_lowercase())
            }
        };
        let _ = writeln!(o, "verdict  {v}");
        let _ = writeln!(o, "{:<8} {}", self.host.as_str(), self.answer.as_deref().unwrap_or("(prints nothing)"));
        for w in &self.warnings {
            let _ = writeln!(o, "warning  {w}");
        }
        o
    }
}
