//! The entries we install, as data: `hooks/<host>.json` in the repository,
//! compiled in. A person can copy those files by hand (replacing
//! `{{LEANCTX}}`); the installer reads the very same files, so the two can
//! never disagree.

use crate::base::host::Host;
pub use crate::hosts::profile::Shape;
use crate::hosts::profile::profile;
use serde_json::{Map, Value};

/// What stands for the binary in `hooks/*.json`.
pub const PLACEHOLDER: &str = "{{LEANCTX}}";

/// The raw data file of a host.
pub fn data(host: Host) -> &'static str {
    profile(host).entries
}

/// One event's entry: for the nested shape, the group's matcher and its one
/// handler; for the flat shape, the entry itself (matcher unused).
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub event: String,
    pub matcher: Option<String>,
    pub handler: Value,
}

/// A host's entries, in file order.
#[derive(Clone, Debug)]
pub struct Spec {
    pub host: Host,
    pub entries: Vec<Entry>,
}

impl Spec {
    /// The host's entries with `program` (already a shell word) in place of
    /// the placeholder.
    pub fn for_host(host: Host, program: &str) -> Spec {
        let text = data(host).replace(PLACEHOLDER, &json_escape(program));
        // The data files are part of the source tree and unit-tested below.
        let v: Value = serde_json::from_str(&text).expect("hooks/*.json is valid JSON");
        let hooks = v.get("hooks").and_then(Value::as_object).expect("hooks/*.json has a hooks object");
        let mut entries = Vec::new();
        for (event, list) in hooks {
            let list = list.as_array().expect("each event holds an array");
            assert_eq!(list.len(), 1, "one entry per event in hooks/{host}.json");
            let item = &list[0];
            let entry = match profile(host).shape {
                Shape::Flat => Entry { event: event.clone(), matcher: None, handler: item.clone() },
                Shape::Nested => {
                    let handlers = item.get("hooks").and_then(Value::as_array).expect("a group has hooks");
                    assert_eq!(handlers.len(), 1, "one handler per group in hooks/{host}.json");
                    Entry {
                        event: event.clone(),
                        matcher: item.get("matcher").and_then(Value::as_str).map(str::to_string),
                        handler: handlers[0].clone(),
                    }
                }
            };
            entries.push(entry);
        }
        Spec { host, entries }
    }

    pub fn entry(&self, event: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.event == event)
    }

    /// The group object we write for a nested entry.
    pub fn group(e: &Entry) -> Value {
        let mut g = Map::new();
        if let Some(m) = &e.matcher {
            g.insert("matcher".into(), Value::String(m.clone()));
        }
        g.insert("hooks".into(), Value::Array(vec![e.handler.clone()]));
        Value::Object(g)
    }
}

/// `program` inside a JSON string literal (it is substituted into the text).
fn json_escape(s: &str) -> String {
    let quoted = Value::String(s.to_string()).to_string();
    quoted[1..quoted.len() - 1].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hosts::event::EventKind;
    use crate::install::command::parse_ours;

    fn kind(host: Host, event: &str) -> EventKind {
        match host {
            Host::Cursor => crate::hosts::cursor::kind_of(event),
            _ => crate::hosts::claude::kind_of(event),
        }
    }

    #[test]
    fn every_data_file_parses_and_names_only_events_the_handler_knows() {
        for host in Host::ALL {
            let spec = Spec::for_host(host, &crate::install::command::shell_word("/opt/a b/leanctx"));
            assert!(spec.entries.len() >= 8, "{host}");
            for e in &spec.entries {
                assert_ne!(kind(host, &e.event), EventKind::Unknown, "{host} {}", e.event);
                let cmd = e.handler["command"].as_str().unwrap();
                let ours = parse_ours(cmd).unwrap_or_else(|| panic!("{host}: {cmd} is not recognised as ours"));
                assert_eq!(ours.host, host);
                assert_eq!(ours.program, "/opt/a b/leanctx");
                let t = e.handler["timeout"].as_u64().unwrap();
                assert!((1..=5).contains(&t), "{host} {} timeout {t}", e.event);
                if profile(host).shape == Shape::Nested {
                    assert_eq!(e.handler["type"], "command");
                }
            }
        }
    }

    #[test]
    fn the_gate_is_only_on_mcp_tools() {
        for host in [Host::ClaudeCode, Host::Codex, Host::CodeBuddy] {
            let spec = Spec::for_host(host, "leanctx");
            let pre = spec.entry("PreToolUse").unwrap();
            assert_eq!(pre.matcher.as_deref(), Some("mcp__.*"), "{host}");
            // PostToolUse confirms MCP results only (the ledger).
            if let Some(post) = spec.entry("PostToolUse") {
                assert_eq!(post.matcher.as_deref(), Some("mcp__.*"), "{host}");
            }
            let tool_events = ["PreToolUse", "PostToolUse"];
            assert!(
                spec.entries.iter().filter(|e| !tool_events.contains(&e.event.as_str())).all(|e| e.matcher.is_none())
            );
        }
        let cursor = Spec::for_host(Host::Cursor, "leanctx");
        assert!(cursor.entry("beforeMCPExecution").is_some());
        assert!(cursor.entry("preToolUse").is_none(), "the generic tool hook would gate every tool");
    }

    #[test]
    fn codex_session_end_respects_the_3s_cap() {
        let spec = Spec::for_host(Host::Codex, "leanctx");
        assert!(spec.entry("SessionEnd").unwrap().handler["timeout"].as_u64().unwrap() <= 3);
    }

    #[test]
    fn the_events_are_the_ones_the_design_needs() {
        let names = |h| Spec::for_host(h, "x/leanctx").entries.into_iter().map(|e| e.event).collect::<Vec<_>>();
        let events = |confirm| {
            vec![
                "SessionStart",
                "UserPromptSubmit",
                "PreToolUse",
                confirm,
                "PreCompact",
                "PostCompact",
                "SubagentStart",
                "SubagentStop",
                "Stop",
                "SessionEnd",
            ]
        };
        // The ledger's confirmations: what the model got (Claude Code's
        // PostToolBatch), the result of the call (the others' PostToolUse).
        assert_eq!(names(Host::ClaudeCode), events("PostToolBatch"));
        assert_eq!(names(Host::Codex), events("PostToolUse"));
        assert_eq!(names(Host::CodeBuddy), events("PostToolUse"));
        assert_eq!(
            names(Host::Cursor),
            [
                "sessionStart",
                "beforeSubmitPrompt",
                "beforeMCPExecution",
                "afterMCPExecution",
                "preCompact",
                "subagentStart",
                "subagentStop",
                "stop",
                "sessionEnd"
            ]
        );
    }

    /// A hook that cannot read its payload learns the event only from its
    /// command line: every event whose fail-open answer is not the host's
    /// answer for an unknown event must be named there (`--event`), or a
    /// bad payload gets the wrong answer (Cursor's `{}` on a permission
    /// event blocks: docs/HOST-FACTS.md §7).
    #[test]
    fn events_whose_answer_differs_name_themselves_on_the_command_line() {
        use crate::gate::Verdict;
        let mut named = Vec::new();
        for host in Host::ALL {
            let unknown = crate::hosts::answer(host, "", false, &Verdict::NoOpinion);
            for e in &Spec::for_host(host, "/x/leanctx").entries {
                let cmd = e.handler["command"].as_str().unwrap();
                let words = crate::install::command::shell_words(cmd).unwrap();
                let given = words.windows(2).find(|w| w[0] == "--event").map(|w| w[1].as_str());
                if crate::hosts::answer(host, &e.event, false, &Verdict::NoOpinion) != unknown {
                    assert_eq!(given, Some(e.event.as_str()), "{host} {}: {cmd}", e.event);
                    named.push(format!("{host} {}", e.event));
                } else {
                    assert!(given.is_none_or(|g| g == e.event), "{host} {}: {cmd}", e.event);
                }
            }
        }
        assert_eq!(named, ["cursor beforeSubmitPrompt", "cursor beforeMCPExecution"]);
    }

    #[test]
    fn a_program_with_json_specials_is_substituted_safely() {
        let spec = Spec::for_host(Host::Cursor, r#"'/a "b\c/leanctx'"#);
        let cmd = spec.entries[0].handler["command"].as_str().unwrap();
        assert_eq!(cmd, r#"'/a "b\c/leanctx' hook cursor"#);
    }
}
