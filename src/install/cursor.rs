//! Cursor's flat shape: `{"version": 1, "hooks": {"<event>": [{command,
//! timeout, …}]}}`. Ours is an entry whose command runs `leanctx hook
//! cursor`; everything else is left exactly where it is.

use super::command::parse_ours;
use super::edit::{self, Changes, Found, ShapeError};
use super::jsonfile::Node;
use super::spec::Spec;
use crate::base::host::Host;
use serde_json::Value;

fn ours(entry: &Value) -> Option<String> {
    let o = parse_ours(entry.get("command")?.as_str()?)?;
    (o.host == Host::Cursor).then_some(o.program)
}

fn positions(arr: &[Node]) -> Vec<usize> {
    arr.iter().enumerate().filter(|(_, e)| ours(&e.to_value()).is_some()).map(|(i, _)| i).collect()
}

fn remove_at(arr: &mut Vec<Node>, pos: &[usize]) {
    for &i in pos.iter().rev() {
        arr.remove(i);
    }
}

/// Remove ours from one event's array; whether there were any.
fn take(arr: &mut Vec<Node>) -> bool {
    let pos = positions(arr);
    remove_at(arr, &pos);
    !pos.is_empty()
}

/// Install or upgrade our entries.
pub fn upsert(doc: &mut Node, spec: &Spec) -> Result<Changes, ShapeError> {
    let events: Vec<&str> = spec.entries.iter().map(|e| e.event.as_str()).collect();
    edit::check_event_arrays(doc, &events)?;
    let mut ch = Changes::default();
    // Cursor documents `version` as required; put it first, like its docs.
    let root = edit::root_mut(doc)?;
    if !root.contains_key("version") {
        root.insert_at(0, "version", Node::from_value(&Value::from(1)));
    }
    let hooks = edit::hooks_mut(doc, true)?.expect("created");

    let stale: Vec<String> = hooks.keys().filter(|k| spec.entry(k).is_none()).map(str::to_string).collect();
    edit::take_ours(hooks, stale, &mut ch, &edit::Before::default(), take);

    for e in &spec.entries {
        if !hooks.contains_key(&e.event) {
            hooks.insert(&e.event, Node::from_value(&Value::Array(vec![])));
        }
        let arr = hooks.get_mut(&e.event).and_then(Node::as_arr_mut).expect("checked above");
        let pos = positions(arr);
        let Some(&first) = pos.first() else {
            arr.push(Node::from_value(&e.handler));
            ch.added.push(e.event.clone());
            continue;
        };
        remove_at(arr, &pos[1..]);
        let changed = pos.len() > 1 || arr[first] != e.handler;
        if arr[first] != e.handler {
            arr[first].assign(&e.handler);
        }
        if changed {
            ch.updated.push(e.event.clone());
        }
    }
    Ok(ch)
}

/// Remove every entry of ours, and the arrays and `hooks` that emptied.
/// `version` stays: Cursor wants it whatever the file holds.
/// Remove ours; what `before` shows the user had stays (see [`edit::Before`]).
pub fn remove(doc: &mut Node, before: &edit::Before) -> Result<Changes, ShapeError> {
    edit::root_mut(doc)?;
    let mut ch = Changes::default();
    let Some(hooks) = edit::hooks_mut(doc, false)? else { return Ok(ch) };
    let was_empty = hooks.is_empty();
    let events: Vec<String> = hooks.keys().map(str::to_string).collect();
    edit::take_ours(hooks, events, &mut ch, before, take);
    edit::drop_hooks_if_emptied(doc, was_empty, before);
    Ok(ch)
}

pub fn find(doc: &Value) -> Vec<Found> {
    let mut v = Vec::new();
    let Some(hooks) = edit::hooks(doc) else { return v };
    for (ev, arr) in hooks {
        for e in arr.as_array().into_iter().flatten() {
            if let Some(program) = ours(e) {
                v.push(Found { event: ev.clone(), program });
            }
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn upsert(doc: &mut Value, spec: &Spec) -> Result<Changes, ShapeError> {
        let mut n = Node::from_value(doc);
        let r = super::upsert(&mut n, spec);
        *doc = n.to_value();
        r
    }

    fn remove(doc: &mut Value) -> Result<Changes, ShapeError> {
        let mut n = Node::from_value(doc);
        let r = super::remove(&mut n, &Default::default());
        *doc = n.to_value();
        r
    }

    fn spec() -> Spec {
        Spec::for_host(Host::Cursor, "/n/leanctx")
    }

    #[test]
    fn install_adds_version_first_and_keeps_foreign_entries() {
        let mut doc = json!({"hooks": {"stop": [{"command": "say done", "loop_limit": 3}]}, "x": 1});
        let ch = upsert(&mut doc, &spec()).unwrap();
        assert_eq!(ch.added.len(), 9);
        assert_eq!(doc.as_object().unwrap().keys().collect::<Vec<_>>(), ["version", "hooks", "x"]);
        assert_eq!(doc["hooks"]["stop"][0], json!({"command": "say done", "loop_limit": 3}));
        assert_eq!(doc["hooks"]["stop"][1], json!({"command": "/n/leanctx hook cursor", "timeout": 5}));
        assert!(upsert(&mut doc, &spec()).unwrap().is_empty());
    }

    #[test]
    fn outdated_entries_are_upgraded_in_place() {
        let mut doc = json!({"version": 1, "hooks": {"sessionEnd": [
            {"command": "/old/leanctx hook cursor", "timeout": 30},
            {"command": "other"},
            {"command": "'/old 2/leanctx' hook cursor"}
        ], "afterFileEdit": [{"command": "/old/leanctx hook cursor"}]}});
        let ch = upsert(&mut doc, &spec()).unwrap();
        assert_eq!(ch.updated, ["sessionEnd"]);
        assert_eq!(ch.removed, ["afterFileEdit"]);
        assert_eq!(
            doc["hooks"]["sessionEnd"],
            json!([{"command": "/n/leanctx hook cursor", "timeout": 2}, {"command": "other"}])
        );
        assert!(doc["hooks"].get("afterFileEdit").is_none());
    }

    #[test]
    fn uninstall_gives_back_the_foreign_file() {
        let before = json!({"version": 1, "hooks": {"stop": [{"command": "a"}], "preToolUse": []}});
        let mut doc = before.clone();
        upsert(&mut doc, &spec()).unwrap();
        assert_eq!(remove(&mut doc).unwrap().removed.len(), 9);
        assert_eq!(doc, before);
        let mut doc = json!({});
        upsert(&mut doc, &spec()).unwrap();
        remove(&mut doc).unwrap();
        assert_eq!(doc, json!({"version": 1}));
    }

    #[test]
    fn a_claude_entry_in_a_cursor_file_is_not_ours() {
        let doc = json!({"hooks": {"stop": [{"command": "/x/leanctx hook claude-code"}]}});
        assert!(find(&doc).is_empty());
    }
}
