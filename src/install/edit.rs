//! What the two shape modules ([`super::nested`], [`super::cursor`]) share:
//! the result of an edit, the shape errors, and the `hooks` object.

use super::jsonfile::{Node, Obj};
use serde_json::{Map, Value};

/// A value has the wrong type for where we must write.
#[derive(Debug, PartialEq, Eq)]
pub struct ShapeError {
    /// Byte offset of the value in the file.
    pub at: usize,
    pub msg: String,
}

impl ShapeError {
    fn new(at: &Node, msg: impl Into<String>) -> ShapeError {
        ShapeError { at: at.at(), msg: msg.into() }
    }
}

/// What an edit did, by event name.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Changes {
    pub added: Vec<String>,
    pub updated: Vec<String>,
    pub removed: Vec<String>,
}

impl Changes {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.updated.is_empty() && self.removed.is_empty()
    }

    /// "added 9 (SessionStart, …)"-style summary for the user.
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        for (verb, evs) in [("added", &self.added), ("updated", &self.updated), ("removed", &self.removed)] {
            if !evs.is_empty() {
                parts.push(format!("{verb} {} ({})", evs.len(), evs.join(", ")));
            }
        }
        if parts.is_empty() { "no change".into() } else { parts.join("; ") }
    }
}

/// One entry of ours found in a config (for `hooks status`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    pub event: String,
    pub program: String,
}

/// The top-level object.
pub fn root_mut(doc: &mut Node) -> Result<&mut Obj, ShapeError> {
    let t = doc.type_name();
    let e = ShapeError::new(doc, format!("the top level is {t}, expected an object"));
    doc.as_obj_mut().ok_or(e)
}

/// `hooks`, created (appended at the end) when `create` and absent.
pub fn hooks_mut(doc: &mut Node, create: bool) -> Result<Option<&mut Obj>, ShapeError> {
    let root = root_mut(doc)?;
    if !root.contains_key("hooks") {
        if !create {
            return Ok(None);
        }
        root.insert("hooks", Node::from_value(&Value::Object(Map::new())));
    }
    let h = root.get_mut("hooks").expect("present");
    let e = ShapeError::new(h, format!("\"hooks\" is {}, expected an object", h.type_name()));
    h.as_obj_mut().map(Some).ok_or(e)
}

/// Read-only view of `hooks` for status; wrong shapes read as absent.
pub fn hooks(doc: &Value) -> Option<&Map<String, Value>> {
    doc.get("hooks").and_then(Value::as_object)
}

/// Check, before any change, that every container we may write into has
/// the right type, so a refused file is refused whole.
pub fn check_event_arrays(doc: &Node, events: &[&str]) -> Result<(), ShapeError> {
    let root = doc
        .as_obj()
        .ok_or_else(|| ShapeError::new(doc, format!("the top level is {}, expected an object", doc.type_name())))?;
    let Some(h) = root.get("hooks") else { return Ok(()) };
    let h =
        h.as_obj().ok_or_else(|| ShapeError::new(h, format!("\"hooks\" is {}, expected an object", h.type_name())))?;
    for ev in events {
        if let Some(v) = h.get(ev)
            && !v.is_array()
        {
            return Err(ShapeError::new(v, format!("\"hooks.{ev}\" is {}, expected an array", v.type_name())));
        }
    }
    Ok(())
}

/// What the user's file held empty before leanctx first changed it (its
/// backup, `<file>.leanctx.bak`): a `hooks` object, or an event's array,
/// that was empty then and that our removal empties again stays, empty, as
/// the user wrote it (issue 25: a user's `"hooks": {}` was gone after
/// install + uninstall). Only empty ones: a backup can be old, and a
/// container the user has since emptied of their own entries is not theirs
/// to keep on its say.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Before {
    pub hooks: bool,
    pub events: Vec<String>,
}

impl Before {
    /// From the backup's text; a backup that does not parse keeps nothing.
    pub fn of(backup: &str) -> Before {
        let v: Value = serde_json::from_str(backup.trim_start_matches('\u{feff}')).unwrap_or(Value::Null);
        let empty = |v: &Value| v.as_array().is_some_and(Vec::is_empty);
        match hooks(&v) {
            Some(h) => Before {
                hooks: h.is_empty(),
                events: h.iter().filter(|(_, v)| empty(v)).map(|(k, _)| k.clone()).collect(),
            },
            None => Before::default(),
        }
    }
}

/// Drop `hooks` when our removals emptied it (an empty `hooks` the user
/// wrote stays, as does one the backup shows was empty before).
pub fn drop_hooks_if_emptied(doc: &mut Node, was_empty: bool, before: &Before) {
    if was_empty || before.hooks {
        return;
    }
    if let Some(root) = doc.as_obj_mut()
        && root.get("hooks").and_then(Node::as_obj).is_some_and(Obj::is_empty)
    {
        root.remove("hooks");
    }
}

/// Take our entries out of `events` (each an array in `hooks`): `take`
/// removes ours from one array and says whether it found any. An array left
/// empty goes too, unless it was empty before leanctx's first change;
/// each event touched is listed as removed.
pub fn take_ours(
    hooks: &mut Obj,
    events: Vec<String>,
    ch: &mut Changes,
    before: &Before,
    mut take: impl FnMut(&mut Vec<Node>) -> bool,
) {
    for ev in events {
        let Some(arr) = hooks.get_mut(&ev).and_then(Node::as_arr_mut) else { continue };
        if !take(arr) {
            continue;
        }
        if arr.is_empty() && !before.events.contains(&ev) {
            hooks.remove(&ev);
        }
        ch.removed.push(ev);
    }
}

#[cfg(test)]
mod tests {
    use super::Before;

    #[test]
    fn a_backup_keeps_only_what_was_empty() {
        let b = |t: &str| Before::of(t);
        assert_eq!(b("{\"hooks\": {}}"), Before { hooks: true, events: vec![] });
        let stop = Before { hooks: false, events: vec!["Stop".into()] };
        assert_eq!(b("\u{feff}{\"hooks\": {\"Stop\": [], \"Pre\": [{\"hooks\": []}]}}"), stop);
        for nothing in ["{}", "{\"hooks\": []}", "not json", ""] {
            assert_eq!(b(nothing), Before::default(), "{nothing}");
        }
    }
}
