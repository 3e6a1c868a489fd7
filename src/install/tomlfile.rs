//! Codex's `config.toml`, read and edited with `toml_edit`, which keeps
//! formatting and comments of everything it is not asked to change.
//!
//! Codex reads hooks from `hooks.json` and from inline `[hooks]` tables in
//! `config.toml` (same structure: `[[hooks.PreToolUse]]`, `matcher`,
//! `[[hooks.PreToolUse.hooks]]`), and runs both when both hold hooks. So
//! `hooks status` reads both, `install` never adds to one what the other
//! already has, and `[features] hooks = false` (or the older
//! `codex_hooks`) is found in every TOML spelling: a `[features]` table,
//! dotted keys, an inline table.
//!
//! An edit runs the same merge as for JSON ([`super::nested`]) on a [`Node`]
//! tree built from the TOML (each value's identity is its offset in the
//! file), then applies the result back to the `toml_edit` document key by
//! key and item by item: removed entries are removed, changed values set,
//! new groups pushed as `[[hooks.<Event>]]` tables after the event's last
//! one (or inline, in an inline array).

use super::jsonfile::{Node, Obj, ParseError, Pos, pos_of};
use serde_json::Value;
use toml_edit::{Array, ArrayOfTables, DocumentMut, InlineTable, Item, Table, TableLike};

/// A parsed config.toml: the document to edit, and the spans of the text
/// as read (for positions and identities).
pub struct TomlDoc {
    text: String,
    pub doc: DocumentMut,
    spanned: toml_edit::Document<String>,
    crlf: bool,
}

/// Parse, or say where it fails.
///
/// toml_edit writes every line break as LF, so a CRLF file is read as LF
/// and written back as CRLF; a file that mixes the two is refused (it
/// could not be given back as it was).
pub fn parse(text: &str) -> Result<TomlDoc, ParseError> {
    let crlf = text.contains("\r\n");
    let lf_text = if crlf {
        if let Some(i) = text.match_indices('\n').map(|(i, _)| i).find(|&i| i == 0 || text.as_bytes()[i - 1] != b'\r') {
            return Err(ParseError {
                pos: pos_of(text, i),
                msg: "the file mixes CRLF and LF line endings, which leanctx could not keep; \
                      make them one kind"
                    .into(),
            });
        }
        text.replace("\r\n", "\n")
    } else {
        text.to_string()
    };
    let spanned = toml_edit::Document::parse(lf_text.clone()).map_err(|e| ParseError {
        pos: pos_of(&lf_text, e.span().map_or(0, |s| s.start)),
        msg: format!("not valid TOML: {}", e.message().trim_end()),
    })?;
    let doc = spanned.clone().into_mut();
    Ok(TomlDoc { text: lf_text, doc, spanned, crlf })
}

impl TomlDoc {
    pub fn pos(&self, offset: usize) -> Pos {
        pos_of(&self.text, offset)
    }

    pub fn render(&self) -> String {
        let s = self.doc.to_string();
        if self.crlf { s.replace('\n', "\r\n") } else { s }
    }

    /// `[features] hooks = false` (or `codex_hooks = false`), in any spelling.
    pub fn hooks_disabled(&self) -> bool {
        let Some(f) = self.doc.get("features").and_then(Item::as_table_like) else { return false };
        ["hooks", "codex_hooks"].iter().any(|k| f.get(k).and_then(Item::as_bool) == Some(false))
    }

    /// Whether the file has a `hooks` table at all.
    pub fn has_hooks(&self) -> bool {
        self.doc.get("hooks").is_some()
    }

    /// The config as a tree the merge understands: `{"hooks": …}` (only
    /// the hooks; the rest of the file is never touched).
    pub fn tree(&self) -> Node {
        self.tree_of("hooks")
    }

    /// The config as a tree of its top-level `key` only (`{"key": …}`);
    /// the rest of the file is never touched.
    pub fn tree_of(&self, key: &str) -> Node {
        let mut ids = Ids { next: self.text.len() + 1 };
        let props = match self.spanned.get(key) {
            Some(h) => vec![(key.to_string(), item_node(h, &mut ids))],
            None => vec![],
        };
        Node::object_at(props, 0)
    }

    /// Apply a merged tree (from [`TomlDoc::tree`]) to the document
    /// (once: identities are those of the text as read).
    pub fn apply(&mut self, tree: &Node) {
        self.apply_of("hooks", tree)
    }

    /// Apply a merged tree from [`TomlDoc::tree_of`] with the same `key`.
    pub fn apply_of(&mut self, key: &str, tree: &Node) {
        let old = self.tree_of(key);
        if let (Some(new), Some(old)) = (tree.as_obj(), old.as_obj()) {
            sync_table(self.doc.as_table_mut(), new, old, true);
        }
    }
}

/// Identities for values whose span toml_edit does not keep (implicit
/// tables): numbers past the end of the text, unique.
struct Ids {
    next: usize,
}

impl Ids {
    fn at(&mut self, span: Option<std::ops::Range<usize>>) -> usize {
        match span {
            Some(s) => s.start,
            None => {
                self.next += 1;
                self.next
            }
        }
    }
}

fn item_node(item: &Item, ids: &mut Ids) -> Node {
    match item {
        Item::None => Node::scalar_at(Value::Null, ids.at(None)),
        Item::Value(v) => value_node(v, ids),
        Item::Table(t) => table_node(t, t.span(), ids),
        Item::ArrayOfTables(a) => {
            let at = ids.at(a.span());
            Node::array_at(a.iter().map(|t| table_node(t, t.span(), ids)).collect(), at)
        }
    }
}

fn table_node(t: &dyn TableLike, span: Option<std::ops::Range<usize>>, ids: &mut Ids) -> Node {
    let at = ids.at(span);
    let props = t.iter().map(|(k, v)| (k.to_string(), item_node(v, ids))).collect();
    Node::object_at(props, at)
}

fn value_node(v: &toml_edit::Value, ids: &mut Ids) -> Node {
    use toml_edit::Value as V;
    let at = ids.at(v.span());
    match v {
        V::String(s) => Node::scalar_at(Value::String(s.value().clone()), at),
        V::Integer(i) => Node::scalar_at(Value::from(*i.value()), at),
        V::Float(f) => Node::scalar_at(serde_json::Number::from_f64(*f.value()).map_or(Value::Null, Value::Number), at),
        V::Boolean(b) => Node::scalar_at(Value::Bool(*b.value()), at),
        V::Datetime(d) => Node::scalar_at(Value::String(d.value().to_string()), at),
        V::Array(a) => Node::array_at(a.iter().map(|x| value_node(x, ids)).collect(), at),
        V::InlineTable(t) => table_node(t, t.span(), ids),
    }
}

/// Bring a table in line with `new`; `old` is what it held. `tables_ok`:
/// new values may be written as tables (not inside an inline table).
fn sync_table(t: &mut dyn TableLike, new: &Obj, old: &Obj, tables_ok: bool) {
    for k in old.keys() {
        if !new.contains_key(k) {
            t.remove(k);
        }
    }
    for (k, n) in new.iter() {
        match (old.get(k), t.get_mut(k)) {
            (Some(o), _) if n.to_value() == o.to_value() => {}
            (Some(o), Some(item)) => sync_item(item, n, o, tables_ok),
            _ => {
                t.insert(k, new_item(n, tables_ok));
            }
        }
    }
}

fn new_item(n: &Node, tables_ok: bool) -> Item {
    if tables_ok { to_item(&n.to_value()) } else { Item::Value(to_value(&n.to_value())) }
}

fn sync_item(item: &mut Item, new: &Node, old: &Node, tables_ok: bool) {
    match item {
        Item::Table(t) => match (new.as_obj(), old.as_obj()) {
            (Some(n), Some(o)) => sync_table(t, n, o, true),
            _ => *item = new_item(new, tables_ok),
        },
        Item::ArrayOfTables(a) => match (new.as_arr(), old.as_arr()) {
            (Some(n), Some(o)) if n.iter().all(|x| x.as_obj().is_some()) => {
                let plan = plan(n, o);
                for &i in plan.removed.iter().rev() {
                    a.remove(i);
                }
                for &(pos, j, i) in &plan.kept {
                    if let (Some(t), Some(nj), Some(oi)) = (a.get_mut(pos), n[j].as_obj(), o[i].as_obj()) {
                        sync_table(t, nj, oi, true);
                    }
                }
                for &j in &plan.added {
                    if let Item::Table(t) = to_item(&n[j].to_value()) {
                        a.push(t);
                    }
                }
            }
            _ => *item = new_item(new, tables_ok),
        },
        Item::Value(v) => sync_value(v, new, old),
        Item::None => *item = new_item(new, tables_ok),
    }
}

fn sync_value(v: &mut toml_edit::Value, new: &Node, old: &Node) {
    use toml_edit::Value as V;
    match v {
        V::InlineTable(t) => match (new.as_obj(), old.as_obj()) {
            (Some(n), Some(o)) => sync_table(t, n, o, false),
            _ => replace_value(v, new),
        },
        V::Array(a) => match (new.as_arr(), old.as_arr()) {
            (Some(n), Some(o)) => {
                let plan = plan(n, o);
                for &i in plan.removed.iter().rev() {
                    a.remove(i);
                }
                for &(pos, j, i) in &plan.kept {
                    if let Some(x) = a.get_mut(pos) {
                        sync_value(x, &n[j], &o[i]);
                    }
                }
                // Like the items already there: on a line of its own when
                // they are, else after a space.
                let prefix = a.get(0).and_then(|x| x.decor().prefix()).and_then(|p| p.as_str()).map(str::to_string);
                let first = a.is_empty();
                for &j in &plan.added {
                    let mut x = to_value(&n[j].to_value());
                    match &prefix {
                        Some(p) if p.contains('\n') => x.decor_mut().set_prefix(p.clone()),
                        _ if first => x.decor_mut().set_prefix(""),
                        _ => x.decor_mut().set_prefix(" "),
                    }
                    x.decor_mut().set_suffix("");
                    a.push_formatted(x);
                }
            }
            _ => replace_value(v, new),
        },
        _ => replace_value(v, new),
    }
}

/// Set a value, keeping the whitespace and comment around it.
fn replace_value(v: &mut toml_edit::Value, new: &Node) {
    let decor = v.decor().clone();
    *v = to_value(&new.to_value());
    *v.decor_mut() = decor;
}

/// How a list changes: old indices removed, (position after the
/// removals, new index, old index) of the kept ones, new indices added.
struct Plan {
    removed: Vec<usize>,
    kept: Vec<(usize, usize, usize)>,
    added: Vec<usize>,
}

fn plan(new: &[Node], old: &[Node]) -> Plan {
    let mut p = Plan { removed: vec![], kept: vec![], added: vec![] };
    let old_ids: Vec<Option<usize>> = old.iter().map(Node::origin).collect();
    let mut kept_old = Vec::new();
    for (j, n) in new.iter().enumerate() {
        match n.origin().and_then(|id| old_ids.iter().position(|o| *o == Some(id))) {
            Some(i) => kept_old.push((j, i)),
            None => p.added.push(j),
        }
    }
    p.removed = (0..old.len()).filter(|i| !kept_old.iter().any(|&(_, k)| k == *i)).collect();
    p.kept = kept_old.iter().enumerate().map(|(pos, &(j, i))| (pos, j, i)).collect();
    p
}

/// A new value as a TOML item: an object becomes a table (implicit when it
/// holds only tables, so no empty header is written), an array of objects
/// an array of tables.
fn to_item(v: &Value) -> Item {
    match v {
        Value::Object(m) => {
            let mut t = Table::new();
            for (k, x) in m {
                t.insert(k, to_item(x));
            }
            t.set_implicit(m.values().all(|x| x.is_object() || is_tables(x)) && !m.is_empty());
            Item::Table(t)
        }
        Value::Array(a) if is_tables(v) => {
            let mut aot = ArrayOfTables::new();
            for x in a {
                if let Item::Table(t) = to_item(x) {
                    aot.push(t);
                }
            }
            Item::ArrayOfTables(aot)
        }
        v => Item::Value(to_value(v)),
    }
}

fn is_tables(v: &Value) -> bool {
    matches!(v, Value::Array(a) if !a.is_empty() && a.iter().all(Value::is_object))
}

fn to_value(v: &Value) -> toml_edit::Value {
    match v {
        Value::Null => toml_edit::Value::from(""),
        Value::Bool(b) => toml_edit::Value::from(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => toml_edit::Value::from(i),
            None => toml_edit::Value::from(n.as_f64().unwrap_or(0.0)),
        },
        Value::String(s) => toml_edit::Value::from(s.as_str()),
        Value::Array(a) => {
            let mut arr = Array::new();
            for x in a {
                arr.push(to_value(x));
            }
            toml_edit::Value::Array(arr)
        }
        Value::Object(m) => {
            let mut t = InlineTable::new();
            for (k, x) in m {
                t.insert(k, to_value(x));
            }
            toml_edit::Value::InlineTable(t)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::host::Host;
    use crate::install::{nested, spec::Spec};

    fn spec() -> Spec {
        Spec::for_host(Host::Codex, "/x/leanctx")
    }

    fn install(text: &str) -> String {
        let mut d = parse(text).unwrap();
        let mut tree = d.tree();
        nested::upsert(&mut tree, &spec()).unwrap();
        d.apply(&tree);
        d.render()
    }

    fn uninstall(text: &str) -> String {
        let mut d = parse(text).unwrap();
        let mut tree = d.tree();
        nested::remove(&mut tree, Host::Codex, &Default::default()).unwrap();
        d.apply(&tree);
        d.render()
    }

    #[test]
    fn hooks_off_is_found_in_every_spelling() {
        for (text, off) in [
            ("", false),
            ("[features]\nhooks = true\n", false),
            ("model = \"x\"\n[features]\nother = 1\nhooks = false # off\n", true),
            ("features.codex_hooks = false\n", true),
            ("features = { hooks = false }\n", true),
            ("[features]\n\"hooks\" = false\n", true),
            ("[mcp_servers.x]\nhooks = false\n", false),
            ("[profiles.a.features]\nhooks = false\n", false),
        ] {
            assert_eq!(parse(text).unwrap().hooks_disabled(), off, "{text}");
        }
    }

    #[test]
    fn hooks_in_config_toml_are_read_in_every_form() {
        let forms = [
            "[[hooks.Stop]]\n[[hooks.Stop.hooks]]\ntype = \"command\"\ncommand = \"/x/leanctx hook codex\"\n",
            "hooks.Stop = [{ hooks = [{ type = \"command\", command = \"/x/leanctx hook codex\" }] }]\n",
            "[hooks]\nStop = [\n  { hooks = [{ type = \"command\", command = \"/x/leanctx hook codex\" }] },\n]\n",
        ];
        for text in forms {
            let v = parse(text).unwrap().tree().to_value();
            assert_eq!(nested::find(&v, Host::Codex).len(), 1, "{text}: {v}");
        }
    }

    #[test]
    fn install_then_uninstall_gives_the_file_back() {
        for text in [
            "",
            "model = \"o3\" # mine\n",
            "model = \"o3\"\n\n[features]\nhooks = true\n\n# trailing comment\n",
            "[[hooks.Stop]]\n[[hooks.Stop.hooks]]\ntype = \"command\"\ncommand = \"notify done\" # keep\n\n[mcp_servers.x]\ncommand = \"x\"\n",
            "[hooks]\nStop = [\n  { hooks = [{ type = \"command\", command = \"a\" }] },\n]\n",
            "hooks.Stop = [{ hooks = [{ type = \"command\", command = \"a\" }] }]\nmodel = \"x\"\n",
            "model = \"x\"\r\n\r\n[mcp_servers.a]\r\ncommand = \"a\"\r\n",
        ] {
            let installed = install(text);
            let v = parse(&installed).unwrap().tree().to_value();
            assert_eq!(nested::find(&v, Host::Codex).len(), 10, "{installed}");
            assert_eq!(install(&installed), installed, "idempotent");
            assert_eq!(uninstall(&installed), text, "installed:\n{installed}");
        }
    }
}
