//! `leanctx serve` registered as an MCP server in a host's own user config
//! (docs/HOST-FACTS.md §8): the entry we write, how we find ours again, and
//! the merge, on the same [`Node`] tree the hook edits use (JSON, or the
//! `[mcp_servers]` table of Codex's config.toml through [`super::tomlfile`]).
//!
//! Ours is recognised by what it runs, never by its name: an entry whose
//! `command` is a `leanctx` binary and whose first argument is `serve`,
//! under whatever name the user gave it (one added by hand with
//! `claude mcp add lctx -- leanctx serve` is updated, not doubled). A new
//! one is named [`NAME`]; a server of someone else's already under that
//! name is refused, never replaced. Fields of our entry that we do not
//! write (an `env`, a timeout the user added) are kept.

use super::edit::{Changes, Found, ShapeError, root_mut};
use super::jsonfile::Node;
use crate::base::host::Host;
use crate::hosts::profile::profile;
use serde_json::{Map, Value};

/// The name a new registration gets (the host then names its tools
/// `mcp__leanctx__<tool>`).
pub const NAME: &str = "leanctx";
/// The subcommand the host runs.
pub const SUBCOMMAND: &str = "serve";

/// The entry for `host`, running `program` (an absolute path: hosts start
/// MCP servers without a shell, so no quoting).
pub fn entry(host: Host, program: &str) -> Map<String, Value> {
    let p = &profile(host).server;
    let mut m = Map::new();
    if p.stdio_type {
        m.insert("type".into(), "stdio".into());
    }
    m.insert("command".into(), program.into());
    m.insert("args".into(), Value::Array(vec![SUBCOMMAND.into()]));
    if !p.env_vars.is_empty() {
        m.insert("env_vars".into(), p.env_vars.iter().map(|v| Value::from(*v)).collect());
    }
    m
}

/// Whether a server entry runs leanctx's server.
pub fn is_ours(v: &Value) -> bool {
    let Some(cmd) = v.get("command").and_then(Value::as_str) else { return false };
    let first = v.get("args").and_then(Value::as_array).and_then(|a| a.first()).and_then(Value::as_str);
    super::command::is_leanctx_program(cmd) && first == Some(SUBCOMMAND)
}

fn label(host: Host, name: &str) -> String {
    format!("{}.{name}", profile(host).server.table)
}

fn wrong_table(host: Host, t: &Node) -> ShapeError {
    let table = profile(host).server.table;
    ShapeError { at: t.at(), msg: format!("\"{table}\" is {}, expected an object", t.type_name()) }
}

/// Add our server, or bring every entry of ours up to date.
pub fn upsert(doc: &mut Node, host: Host, program: &str) -> Result<Changes, ShapeError> {
    let table = profile(host).server.table;
    let want = entry(host, program);
    let root = root_mut(doc)?;
    if let Some(t) = root.get(table)
        && t.as_obj().is_none()
    {
        return Err(wrong_table(host, t));
    }
    let mut ch = Changes::default();
    let ours: Vec<String> = root
        .get(table)
        .and_then(Node::as_obj)
        .map(|s| s.iter().filter(|(_, v)| is_ours(&v.to_value())).map(|(k, _)| k.to_string()).collect())
        .unwrap_or_default();
    if ours.is_empty() {
        if let Some(other) = root.get(table).and_then(|t| t.get(NAME)) {
            return Err(ShapeError {
                at: other.at(),
                msg: format!(
                    "\"{table}.{NAME}\" is another server (it does not run `leanctx serve`); leanctx will not replace it"
                ),
            });
        }
        if !root.contains_key(table) {
            root.insert(table, Node::from_value(&Value::Object(Map::new())));
        }
        let servers = root.get_mut(table).and_then(Node::as_obj_mut).expect("checked above");
        servers.insert(NAME, Node::from_value(&Value::Object(want)));
        ch.added.push(label(host, NAME));
        return Ok(ch);
    }
    let servers = root.get_mut(table).and_then(Node::as_obj_mut).expect("ours were found in it");
    for name in ours {
        let node = servers.get_mut(&name).and_then(Node::as_obj_mut).expect("an entry of ours is an object");
        if bring_up_to_date(node, &want) {
            ch.updated.push(label(host, &name));
        }
    }
    Ok(ch)
}

/// Set the fields we write; `env_vars` only gains the names it lacks.
fn bring_up_to_date(entry: &mut super::jsonfile::Obj, want: &Map<String, Value>) -> bool {
    let mut changed = false;
    for (k, v) in want {
        let v = match (k.as_str(), entry.get(k).map(Node::to_value)) {
            ("env_vars", Some(Value::Array(mut have))) => {
                for name in v.as_array().into_iter().flatten() {
                    if !have.contains(name) {
                        have.push(name.clone());
                    }
                }
                Value::Array(have)
            }
            _ => v.clone(),
        };
        match entry.get_mut(k) {
            Some(n) if n.to_value() == v => {}
            Some(n) => {
                n.assign(&v);
                changed = true;
            }
            None => {
                entry.insert(k, Node::from_value(&v));
                changed = true;
            }
        }
    }
    changed
}

/// Remove every entry of ours (and the table, when that emptied it).
pub fn remove(doc: &mut Node, host: Host) -> Result<Changes, ShapeError> {
    let table = profile(host).server.table;
    let root = root_mut(doc)?;
    let Some(t) = root.get_mut(table) else { return Ok(Changes::default()) };
    let Some(servers) = t.as_obj_mut() else { return Err(wrong_table(host, t)) };
    let was_empty = servers.is_empty();
    let ours: Vec<String> =
        servers.iter().filter(|(_, v)| is_ours(&v.to_value())).map(|(k, _)| k.to_string()).collect();
    let mut ch = Changes::default();
    for name in ours {
        servers.remove(&name);
        ch.removed.push(label(host, &name));
    }
    if !was_empty && servers.is_empty() {
        root.remove(table);
    }
    Ok(ch)
}

/// Our entries in `doc`: the name (as `table.name`) and the program.
pub fn find(doc: &Value, host: Host) -> Vec<Found> {
    let table = profile(host).server.table;
    let Some(servers) = doc.get(table).and_then(Value::as_object) else { return vec![] };
    servers
        .iter()
        .filter(|(_, v)| is_ours(v))
        .map(|(k, v)| Found {
            event: label(host, k),
            program: v.get("command").and_then(Value::as_str).unwrap_or_default().to_string(),
        })
        .collect()
}

/// The names (in the host's table) of our entries in `doc`.
pub fn names(doc: &Value, host: Host) -> Vec<String> {
    let table = profile(host).server.table;
    doc.get(table)
        .and_then(Value::as_object)
        .map(|s| s.iter().filter(|(_, v)| is_ours(v)).map(|(k, _)| k.clone()).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::install::jsonfile;
    use serde_json::json;

    fn edit(text: &str, f: impl FnOnce(&mut Node) -> Result<Changes, ShapeError>) -> (String, Changes) {
        let mut d = jsonfile::parse(text, false).unwrap();
        let ch = f(&mut d.root).unwrap();
        (d.render(), ch)
    }

    #[test]
    fn each_hosts_entry_is_ours_and_runs_serve() {
        for host in Host::ALL {
            let e = Value::Object(entry(host, "/opt/a b/leanctx"));
            assert!(is_ours(&e), "{host}: {e}");
            assert_eq!(e["command"], "/opt/a b/leanctx", "an argv word, not a shell string");
            assert_eq!(e["args"], json!(["serve"]));
        }
        assert_eq!(entry(Host::ClaudeCode, "/x/leanctx")["type"], "stdio");
        assert_eq!(entry(Host::Codex, "/x/leanctx")["env_vars"], json!(["LEAN_CTX_DATA_DIR", "XDG_DATA_HOME"]));
        assert!(!entry(Host::Cursor, "/x/leanctx").contains_key("type"));
    }

    #[test]
    fn ours_is_what_it_runs() {
        for (v, ours) in [
            (json!({"command": "/x/leanctx", "args": ["serve"]}), true),
            (json!({"command": "leanctx", "args": ["serve", "--x"]}), true),
            (json!({"command": "C:\\t\\leanctx.exe", "args": ["serve"]}), true),
            (json!({"command": "/x/leanctx", "args": []}), false),
            (json!({"command": "/x/leanctx", "args": ["hook", "codex"]}), false),
            (json!({"command": "/x/lean-ctx", "args": ["serve"]}), false),
            (json!({"command": "/home/leanctx/bin/tool", "args": ["serve"]}), false),
            (json!({"url": "http://x/leanctx"}), false),
            (json!("leanctx serve"), false),
        ] {
            assert_eq!(is_ours(&v), ours, "{v}");
        }
    }

    #[test]
    fn install_then_uninstall_gives_the_bytes_back() {
        for text in [
            "{}",
            "{\n  \"numStartups\": 3,\n  \"mcpServers\": {\n    \"other\": {\"command\": \"x\"}\n  }\n}\n",
            "{\r\n\t\"mcpServers\": {\"o\": {\"url\": \"http://o\"}}\r\n}",
            "\u{feff}{\"a\":[1,2],\"mcpServers\":{\"lean-ctx\":{\"command\":\"/b/lean-ctx\",\"args\":[]}}}",
        ] {
            let (installed, ch) = edit(text, |d| upsert(d, Host::ClaudeCode, "/x/leanctx"));
            assert_eq!(ch.added, ["mcpServers.leanctx"], "{text}");
            let v: Value = serde_json::from_str(installed.trim_start_matches('\u{feff}')).unwrap();
            assert_eq!(v["mcpServers"]["leanctx"], Value::Object(entry(Host::ClaudeCode, "/x/leanctx")));
            let (again, ch) = edit(&installed, |d| upsert(d, Host::ClaudeCode, "/x/leanctx"));
            assert!(ch.is_empty() && again == installed, "idempotent");
            let (back, ch) = edit(&installed, |d| remove(d, Host::ClaudeCode));
            assert_eq!(ch.removed, ["mcpServers.leanctx"]);
            assert_eq!(back, text);
        }
    }

    #[test]
    fn an_entry_of_ours_under_another_name_is_updated_and_keeps_the_users_fields() {
        let text = r#"{"mcpServers": {"lctx": {"command": "/old/leanctx", "args": ["serve"], "env": {"A": "1"}}}}"#;
        let (out, ch) = edit(text, |d| upsert(d, Host::ClaudeCode, "/new/leanctx"));
        assert_eq!(ch.updated, ["mcpServers.lctx"]);
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["mcpServers"]["lctx"]["command"], "/new/leanctx");
        assert_eq!(v["mcpServers"]["lctx"]["env"], json!({"A": "1"}));
        assert!(v["mcpServers"].get("leanctx").is_none(), "not doubled");
        let (out, _) = edit(&out, |d| remove(d, Host::ClaudeCode));
        assert_eq!(out, "{}", "ours goes whatever its name; the table it emptied too");
    }

    #[test]
    fn someone_elses_server_under_our_name_is_refused() {
        let text = "{\n  \"mcpServers\": {\n    \"leanctx\": {\"command\": \"/usr/bin/other\"}\n  }\n}";
        let mut d = jsonfile::parse(text, false).unwrap();
        let e = upsert(&mut d.root, Host::ClaudeCode, "/x/leanctx").unwrap_err();
        assert!(e.msg.contains("another server"), "{}", e.msg);
        assert_eq!(d.pos(e.at).line, 3);
        let (out, ch) = edit(text, |d| remove(d, Host::ClaudeCode));
        assert!(ch.is_empty() && out == text, "uninstall leaves it alone");
    }

    #[test]
    fn a_table_of_the_wrong_type_is_refused_where_it_is() {
        for text in ["{\"mcpServers\": []}", "{\"mcpServers\": \"x\"}", "[]"] {
            let mut d = jsonfile::parse(text, false).unwrap();
            assert!(upsert(&mut d.root, Host::Cursor, "/x/leanctx").is_err(), "{text}");
            let mut d = jsonfile::parse(text, false).unwrap();
            assert!(remove(&mut d.root, Host::Cursor).is_err(), "{text}");
        }
    }

    #[test]
    fn codex_env_vars_only_gain_names() {
        let text =
            r#"{"mcp_servers": {"leanctx": {"command": "/x/leanctx", "args": ["serve"], "env_vars": ["MINE"]}}}"#;
        let (out, ch) = edit(text, |d| upsert(d, Host::Codex, "/x/leanctx"));
        assert_eq!(ch.updated, ["mcp_servers.leanctx"]);
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["mcp_servers"]["leanctx"]["env_vars"], json!(["MINE", "LEAN_CTX_DATA_DIR", "XDG_DATA_HOME"]));
    }

    #[test]
    fn codex_config_toml_install_then_uninstall_gives_the_file_back() {
        use crate::install::tomlfile;
        let run = |text: &str, f: &dyn Fn(&mut Node) -> Changes| {
            let mut d = tomlfile::parse(text).unwrap();
            let mut tree = d.tree_of("mcp_servers");
            let ch = f(&mut tree);
            if !ch.is_empty() {
                d.apply_of("mcp_servers", &tree);
            }
            d.render()
        };
        let install = |d: &mut Node| upsert(d, Host::Codex, "/x/leanctx").unwrap();
        let uninstall = |d: &mut Node| remove(d, Host::Codex).unwrap();
        for text in [
            "",
            "model = \"o3\" # mine\n",
            "# top\nmodel = \"x\"\n\n[mcp_servers.other]\ncommand = \"foo\" # keep\n\n[features]\nhooks = true\n",
            "mcp_servers = { other = { command = \"foo\" } }\n",
            "model = \"x\"\r\n\r\n[mcp_servers.a]\r\ncommand = \"a\"\r\n",
        ] {
            let installed = run(text, &install);
            let doc = tomlfile::parse(&installed).unwrap();
            let v = doc.tree_of("mcp_servers").to_value();
            assert_eq!(names(&v, Host::Codex), ["leanctx"], "{installed}");
            assert_eq!(v["mcp_servers"]["leanctx"], Value::Object(entry(Host::Codex, "/x/leanctx")));
            assert_eq!(run(&installed, &install), installed, "idempotent");
            assert_eq!(run(&installed, &uninstall), text, "installed:\n{installed}");
        }
    }
}
