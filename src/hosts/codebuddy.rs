//! CodeBuddy Code answers: Claude's `hookSpecificOutput` plus a top-level
//! `continue: true`, which CodeBuddy requires alongside a decision
//! (docs/HOST-FACTS.md §4). "No opinion" prints nothing, as for Claude.

use super::claude::pre_tool_use_output;
use crate::gate::Verdict;
use serde_json::Value;

pub fn answer(verdict: &Verdict) -> Option<String> {
    match verdict {
        Verdict::NoOpinion => None,
        Verdict::Decide { action, message, .. } => {
            let mut out = pre_tool_use_output(action.as_str(), message);
            if let Value::Object(map) = &mut out {
                map.insert("continue".into(), Value::Bool(true));
            }
            Some(out.to_string())
        }
    }
}
