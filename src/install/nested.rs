//! The Claude-style shape (Claude Code, Codex, CodeBuddy):
//! `hooks.<Event>` is an array of groups `{matcher?, hooks: [handler…]}`.
//!
//! Ours is a handler, never a group: a group may hold a user's handlers
//! beside ours, and removing the whole group would delete them. We add our
//! own group at the end of an event's array (so no foreign entry moves:
//! Codex keys trust by position), upgrade an outdated handler of ours in
//! place, and drop only groups, arrays and objects our removals emptied.

use super::command::{parse_ours, parse_ours_exec};
use super::edit::{self, Changes, Found, ShapeError};
use super::jsonfile::Node;
use super::spec::{Entry, Spec};
use crate::base::host::Host;
use serde_json::Value;

/// The program of a handler of ours for `host`, if it is one.
fn ours(handler: &Value, host: Host) -> Option<String> {
    let h = handler.as_object()?;
    if h.get("type").is_some_and(|t| t != "command") {
        return None;
    }
    let cmd = h.get("command")?.as_str()?;
    let o = match h.get("args") {
        Some(Value::Array(a)) => {
            let args: Option<Vec<String>> = a.iter().map(|x| x.as_str().map(str::to_string)).collect();
            parse_ours_exec(cmd, &args?)?
        }
        Some(_) => return None,
        None => parse_ours(cmd)?,
    };
    (o.host == host).then_some(o.program)
}

fn ours_node(handler: &Node, host: Host) -> bool {
    handler.as_obj().is_some() && ours(&handler.to_value(), host).is_some()
}

fn handlers(group: &Node) -> Option<&Vec<Node>> {
    group.get("hooks").and_then(Node::as_arr)
}

fn handlers_mut(group: &mut Node) -> Option<&mut Vec<Node>> {
    group.get_mut("hooks").and_then(Node::as_arr_mut)
}

/// (group, handler) indices of our handlers in one event's array, in order.
fn positions(arr: &[Node], host: Host) -> Vec<(usize, usize)> {
    let mut v = Vec::new();
    for (g, group) in arr.iter().enumerate() {
        if let Some(hs) = handlers(group) {
            for (h, handler) in hs.iter().enumerate() {
                if ours_node(handler, host) {
                    v.push((g, h));
                }
            }
        }
    }
    v
}

/// Remove the handlers at `pos` (ascending), dropping groups they empty.
/// Returns how many were removed.
fn remove_at(arr: &mut Vec<Node>, pos: &[(usize, usize)]) -> usize {
    for &(g, h) in pos.iter().rev() {
        let Some(hs) = handlers_mut(&mut arr[g]) else { continue };
        hs.remove(h);
        if hs.is_empty() {
            arr.remove(g);
        }
    }
    pos.len()
}

fn matcher_fits(group: &Node, want: Option<&str>) -> bool {
    let have = group.get("matcher");
    match want {
        // No matcher means "every"; so do "" and "*" (Claude, Codex, CodeBuddy).
        None => match have {
            None => true,
            Some(m) => m.as_str().is_some_and(|s| s.is_empty() || s == "*"),
        },
        Some(m) => have.and_then(Node::as_str) == Some(m),
    }
}

fn set_matcher(group: &mut Node, want: Option<&str>) {
    let Some(g) = group.as_obj_mut() else { return };
    match want {
        None => {
            g.remove("matcher");
        }
        Some(m) if g.contains_key("matcher") => g.insert("matcher", Node::from_value(&Value::String(m.into()))),
        Some(m) => g.insert_at(0, "matcher", Node::from_value(&Value::String(m.into()))),
    }
}

/// Remove ours from one event's array of groups; whether there were any.
fn take(arr: &mut Vec<Node>, host: Host) -> bool {
    let pos = positions(arr, host);
    remove_at(arr, &pos);
    !pos.is_empty()
}

/// Install or upgrade our entries.
pub fn upsert(doc: &mut Node, spec: &Spec) -> Result<Changes, ShapeError> {
    let host = spec.host;
    let events: Vec<&str> = spec.entries.iter().map(|e| e.event.as_str()).collect();
    edit::check_event_arrays(doc, &events)?;
    let mut ch = Changes::default();
    let hooks = edit::hooks_mut(doc, true)?.expect("created");

    // Events we no longer register (an older leanctx's): take ours out.
    let stale: Vec<String> = hooks.keys().filter(|k| spec.entry(k).is_none()).map(str::to_string).collect();
    edit::take_ours(hooks, stale, &mut ch, &edit::Before::default(), |arr| take(arr, host));

    for e in &spec.entries {
        if !hooks.contains_key(&e.event) {
            hooks.insert(&e.event, Node::from_value(&Value::Array(vec![])));
        }
        let arr = hooks.get_mut(&e.event).and_then(Node::as_arr_mut).expect("checked above");
        upsert_event(arr, e, host, &mut ch);
    }
    Ok(ch)
}

fn upsert_event(arr: &mut Vec<Node>, e: &Entry, host: Host, ch: &mut Changes) {
    let pos = positions(arr, host);
    let Some(&(g0, h0)) = pos.first() else {
        arr.push(Node::from_value(&Spec::group(e)));
        ch.added.push(e.event.clone());
        return;
    };
    let mut changed = remove_at(arr, &pos[1..]) > 0;
    let fits = matcher_fits(&arr[g0], e.matcher.as_deref());
    let only_ours = handlers(&arr[g0]).is_some_and(|hs| hs.iter().all(|h| ours_node(h, host)));
    fn handler(arr: &mut [Node], g0: usize, h0: usize) -> &mut Node {
        &mut handlers_mut(&mut arr[g0]).expect("found there")[h0]
    }
    if fits {
        let h = handler(arr, g0, h0);
        if *h != e.handler {
            h.assign(&e.handler);
            changed = true;
        }
    } else if only_ours {
        // Our own group under an old matcher: fix it where it is.
        handler(arr, g0, h0).assign(&e.handler);
        set_matcher(&mut arr[g0], e.matcher.as_deref());
        changed = true;
    } else {
        // A user's group with our handler in it: leave theirs, move ours out.
        handlers_mut(&mut arr[g0]).expect("found there").remove(h0);
        arr.push(Node::from_value(&Spec::group(e)));
        changed = true;
    }
    if changed {
        ch.updated.push(e.event.clone());
    }
}

/// Remove every entry of ours for `host`, and what that emptied.
/// Remove ours; what `before` shows the user had stays (see [`edit::Before`]).
pub fn remove(doc: &mut Node, host: Host, before: &edit::Before) -> Result<Changes, ShapeError> {
    edit::root_mut(doc)?;
    let mut ch = Changes::default();
    let Some(hooks) = edit::hooks_mut(doc, false)? else { return Ok(ch) };
    let was_empty = hooks.is_empty();
    let events: Vec<String> = hooks.keys().map(str::to_string).collect();
    edit::take_ours(hooks, events, &mut ch, before, |arr| take(arr, host));
    edit::drop_hooks_if_emptied(doc, was_empty, before);
    Ok(ch)
}

/// Our entries in a config, for status.
pub fn find(doc: &Value, host: Host) -> Vec<Found> {
    let mut v = Vec::new();
    let Some(hooks) = edit::hooks(doc) else { return v };
    for (ev, arr) in hooks {
        let Some(arr) = arr.as_array() else { continue };
        for group in arr {
            if let Some(Value::Array(hs)) = group.get("hooks") {
                v.extend(hs.iter().filter_map(|h| ours(h, host)).map(|program| Found { event: ev.clone(), program }));
            }
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The merge on a plain value (layout is tested in `jsonfile/tests.rs`).
    fn upsert(doc: &mut Value, spec: &Spec) -> Result<Changes, ShapeError> {
        let mut n = Node::from_value(doc);
        let r = super::upsert(&mut n, spec);
        *doc = n.to_value();
        r
    }

    fn remove(doc: &mut Value, host: Host) -> Result<Changes, ShapeError> {
        let mut n = Node::from_value(doc);
        let r = super::remove(&mut n, host, &Default::default());
        *doc = n.to_value();
        r
    }

    fn spec() -> Spec {
        Spec::for_host(Host::ClaudeCode, "/new/leanctx")
    }

    fn handler(cmd: &str) -> Value {
        json!({"type": "command", "command": cmd, "timeout": 5})
    }

    #[test]
    fn install_into_nothing_adds_every_event() {
        let mut doc = json!({});
        let ch = upsert(&mut doc, &spec()).unwrap();
        assert_eq!(ch.added.len(), 10);
        assert_eq!(doc["hooks"]["PreToolUse"][0]["matcher"], "mcp__.*");
        assert_eq!(doc["hooks"]["Stop"][0]["hooks"][0]["command"], "/new/leanctx hook claude-code");
        assert!(doc["hooks"]["Stop"][0].get("matcher").is_none());
        let again = doc.clone();
        assert!(upsert(&mut doc, &spec()).unwrap().is_empty());
        assert_eq!(doc, again);
    }

    #[test]
    fn an_outdated_handler_is_upgraded_in_place_and_duplicates_go() {
        let mut doc = json!({"hooks": {"Stop": [
            {"hooks": [handler("echo mine")]},
            {"hooks": [handler("/old/leanctx hook claude-code")]},
            {"hooks": [handler("/old2/leanctx hook claude")]}
        ]}});
        let ch = upsert(&mut doc, &spec()).unwrap();
        assert_eq!(ch.updated, ["Stop"]);
        let stop = doc["hooks"]["Stop"].as_array().unwrap();
        assert_eq!(stop.len(), 2, "{stop:?}");
        assert_eq!(stop[0]["hooks"][0]["command"], "echo mine");
        assert_eq!(stop[1]["hooks"][0]["command"], "/new/leanctx hook claude-code");
        assert_eq!(stop[1]["hooks"][0]["timeout"], 5);
    }

    #[test]
    fn a_shared_group_keeps_the_users_handler() {
        let mut doc = json!({"hooks": {"PreToolUse": [
            {"matcher": "Bash", "hooks": [handler("check-bash"), handler("/x/leanctx hook claude-code")]}
        ]}});
        upsert(&mut doc, &spec()).unwrap();
        assert_eq!(
            doc["hooks"]["PreToolUse"],
            json!([
                {"matcher": "Bash", "hooks": [handler("check-bash")]},
                {"matcher": "mcp__.*", "hooks": [handler("/new/leanctx hook claude-code")]}
            ])
        );
    }

    #[test]
    fn our_group_under_an_old_matcher_is_fixed_where_it_is() {
        let mut doc = json!({"hooks": {"PreToolUse": [
            {"matcher": "*", "hooks": [handler("/new/leanctx hook claude-code")]},
            {"matcher": "Bash", "hooks": [handler("b")]}
        ]}});
        upsert(&mut doc, &spec()).unwrap();
        assert_eq!(doc["hooks"]["PreToolUse"][0]["matcher"], "mcp__.*");
        assert_eq!(doc["hooks"]["PreToolUse"][1]["matcher"], "Bash");
        let mut doc =
            json!({"hooks": {"Stop": [{"matcher": "x", "hooks": [handler("/new/leanctx hook claude-code")]}]}});
        upsert(&mut doc, &spec()).unwrap();
        assert!(doc["hooks"]["Stop"][0].get("matcher").is_none());
    }

    #[test]
    fn other_hosts_entries_and_stale_events() {
        let mut doc = json!({"hooks": {
            "PostToolUse": [{"hooks": [handler("/x/leanctx hook claude-code"), handler("fmt")]}],
            "Notification": [{"hooks": [handler("/x/leanctx hook claude-code")]}],
            "Stop": [{"hooks": [handler("/x/leanctx hook codebuddy")]}]
        }});
        let ch = upsert(&mut doc, &spec()).unwrap();
        assert_eq!(ch.removed, ["PostToolUse", "Notification"]);
        assert_eq!(doc["hooks"]["PostToolUse"], json!([{"hooks": [handler("fmt")]}]));
        assert!(doc["hooks"].get("Notification").is_none());
        assert_eq!(doc["hooks"]["Stop"][0]["hooks"][0]["command"], "/x/leanctx hook codebuddy", "not ours to touch");
        assert_eq!(doc["hooks"]["Stop"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn remove_takes_exactly_ours_and_what_it_emptied() {
        let before = json!({"a": 1, "hooks": {
            "Stop": [{"hooks": [handler("mine")]}],
            "Empty": []
        }, "z": 2});
        let mut doc = before.clone();
        upsert(&mut doc, &spec()).unwrap();
        let ch = remove(&mut doc, Host::ClaudeCode).unwrap();
        assert_eq!(ch.removed.len(), 10);
        assert_eq!(doc, before);
        assert_eq!(doc.as_object().unwrap().keys().collect::<Vec<_>>(), ["a", "hooks", "z"]);

        let mut doc = json!({"x": true});
        upsert(&mut doc, &spec()).unwrap();
        remove(&mut doc, Host::ClaudeCode).unwrap();
        assert_eq!(doc, json!({"x": true}));
        let mut doc = json!({"hooks": {}});
        remove(&mut doc, Host::ClaudeCode).unwrap();
        assert_eq!(doc, json!({"hooks": {}}), "an empty hooks object the user wrote stays");
    }

    #[test]
    fn exec_form_handlers_are_ours_too() {
        let doc = json!({"hooks": {"Stop": [{"hooks": [
            {"type": "command", "command": "/p q/leanctx", "args": ["hook", "claude-code"]},
            {"type": "http", "command": "/p/leanctx hook claude-code"}
        ]}]}});
        assert_eq!(find(&doc, Host::ClaudeCode), [Found { event: "Stop".into(), program: "/p q/leanctx".into() }]);
    }

    #[test]
    fn wrong_shapes_are_refused_before_any_change() {
        let mut doc = json!({"hooks": []});
        let e = upsert(&mut doc, &spec()).unwrap_err();
        assert!(e.msg.contains("\"hooks\" is an array"), "{}", e.msg);
        assert_eq!(doc, json!({"hooks": []}));
        let mut doc = json!({"hooks": {"Stop": {"hooks": []}}});
        let e = upsert(&mut doc, &spec()).unwrap_err();
        assert!(e.msg.contains("\"hooks.Stop\" is an object"), "{}", e.msg);
        assert!(upsert(&mut json!([]), &spec()).is_err());
        assert!(remove(&mut json!({"hooks": 3}), Host::ClaudeCode).is_err());
        // A malformed group of someone else's is left alone, not refused.
        let mut doc = json!({"hooks": {"Stop": [7, {"hooks": "x"}]}});
        upsert(&mut doc, &spec()).unwrap();
        assert_eq!(doc["hooks"]["Stop"].as_array().unwrap().len(), 3);
    }
}
