//! What the two shape modules ([`super::nested`], [`super::cursor`]) share:
//! the result of an edit, the shape errors, and the `hooks` object.

use super::jsonfile::Seg;
use serde_json::{Map, Value};

/// A value has the wrong type for where we must write.
#[derive(Debug, PartialEq, Eq)]
pub struct ShapeError {
    pub path: Vec<Seg>,
    pub msg: String,
}

impl ShapeError {
    fn new(path: Vec<Seg>, msg: impl Into<String>) -> ShapeError {
        ShapeError { path, msg: msg.into() }
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

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The top-level object.
pub fn root_mut(doc: &mut Value) -> Result<&mut Map<String, Value>, ShapeError> {
    let t = type_name(doc);
    doc.as_object_mut().ok_or_else(|| ShapeError::new(vec![], format!("the top level is {t}, expected an object")))
}

/// `hooks`, created (appended at the end) when `create` and absent.
pub fn hooks_mut(doc: &mut Value, create: bool) -> Result<Option<&mut Map<String, Value>>, ShapeError> {
    let root = root_mut(doc)?;
    if !root.contains_key("hooks") {
        if !create {
            return Ok(None);
        }
        root.insert("hooks".into(), Value::Object(Map::new()));
    }
    let h = root.get_mut("hooks").expect("present");
    let t = type_name(h);
    h.as_object_mut()
        .map(Some)
        .ok_or_else(|| ShapeError::new(vec![Seg::Key("hooks".into())], format!("\"hooks\" is {t}, expected an object")))
}

/// Read-only view of `hooks` for status; wrong shapes read as absent.
pub fn hooks(doc: &Value) -> Option<&Map<String, Value>> {
    doc.get("hooks").and_then(Value::as_object)
}

/// Check, before any change, that every container we may write into has
/// the right type, so a refused file is refused whole.
pub fn check_event_arrays(doc: &Value, events: &[&str]) -> Result<(), ShapeError> {
    let t = type_name(doc);
    let root =
        doc.as_object().ok_or_else(|| ShapeError::new(vec![], format!("the top level is {t}, expected an object")))?;
    let Some(h) = root.get("hooks") else { return Ok(()) };
    let t = type_name(h);
    let h = h.as_object().ok_or_else(|| {
        ShapeError::new(vec![Seg::Key("hooks".into())], format!("\"hooks\" is {t}, expected an object"))
    })?;
    for ev in events {
        if let Some(v) = h.get(*ev)
            && !v.is_array()
        {
            return Err(ShapeError::new(
                vec![Seg::Key("hooks".into()), Seg::Key((*ev).to_string())],
                format!("\"hooks.{ev}\" is {}, expected an array", type_name(v)),
            ));
        }
    }
    Ok(())
}

/// Drop `hooks` when our removals emptied it (an empty `hooks` the user
/// wrote stays).
pub fn drop_hooks_if_emptied(doc: &mut Value, was_empty: bool) {
    if was_empty {
        return;
    }
    if let Some(root) = doc.as_object_mut()
        && root.get("hooks").and_then(Value::as_object).is_some_and(Map::is_empty)
    {
        root.shift_remove("hooks");
    }
}

/// Take our entries out of `events` (each an array in `hooks`): `take`
/// removes ours from one array and says whether it found any. An array left
/// empty goes too; each event touched is listed as removed.
pub fn take_ours(
    hooks: &mut Map<String, Value>,
    events: Vec<String>,
    ch: &mut Changes,
    mut take: impl FnMut(&mut Vec<Value>) -> bool,
) {
    for ev in events {
        let Some(Value::Array(arr)) = hooks.get_mut(&ev) else { continue };
        if !take(arr) {
            continue;
        }
        if arr.is_empty() {
            hooks.shift_remove(&ev);
        }
        ch.removed.push(ev);
    }
}
