//! The layering rule of docs/ARCHITECTURE.md, checked on the source
//! rather than claimed: each folder of `src/` uses only the layers listed
//! below it in the doc's layer table, and no module imports one that
//! imports it back (directly or round a longer loop). Code only: tests
//! (`#[cfg(test)] mod tests`, `tests.rs`) and comments are left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Module = Vec<String>;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The layers, top first, from the ```text block under "## Layers".
fn doc_layers() -> Vec<String> {
    let doc = std::fs::read_to_string(root().join("docs/ARCHITECTURE.md")).unwrap();
    let at = doc.find("## Layers").expect("docs/ARCHITECTURE.md has ## Layers");
    let block = &doc[at..];
    let start = block.find("```text\n").expect("a ```text block under ## Layers") + 8;
    let end = start + block[start..].find("```").unwrap();
    block[start..end].lines().filter_map(|l| l.split_whitespace().next()).map(String::from).collect()
}

/// Every module of `src/` (lib.rs and main.rs aside) and its file.
fn modules() -> BTreeMap<Module, PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let src = root().join("src");
    let mut files = Vec::new();
    walk(&src, &mut files);
    let mut out = BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(&src).unwrap().with_extension("");
        let mut m: Module = rel.iter().map(|c| c.to_string_lossy().into_owned()).collect();
        if m.last().is_some_and(|l| l == "mod") {
            m.pop();
        }
        if m.len() < 2 || m.last().is_some_and(|l| l == "tests") {
            continue;
        }
        out.insert(m, f);
    }
    out
}

/// The code of a file: its unit tests and comments cut.
fn code(path: &Path) -> String {
    let s = std::fs::read_to_string(path).unwrap();
    let s = match s.find("#[cfg(test)]\nmod tests") {
        Some(i) => &s[..i],
        None => &s[..],
    };
    let mut out = String::new();
    for line in s.lines() {
        let t = line.trim_start();
        if t.starts_with("//") {
            continue;
        }
        // A comment after code: `//` outside a string (an even number of
        // quotes before it); "file://" inside a string stays.
        let cut = line.match_indices("//").map(|(i, _)| i).find(|&i| line[..i].matches('"').count() % 2 == 0);
        out.push_str(&line[..cut.unwrap_or(line.len())]);
        out.push('\n');
    }
    out
}

/// The paths that start `crate::` or `super::` in `code`, as segments (a
/// `{a, b::c}` group gives one path per item, each cut at its first
/// segment).
fn paths(code: &str) -> Vec<Vec<String>> {
    let b = code.as_bytes();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let starts = (b[i..].starts_with(b"crate::") || b[i..].starts_with(b"super::"))
            && (i == 0 || !(ident(b[i - 1]) || b[i - 1] == b':'));
        if !starts {
            i += 1;
            continue;
        }
        let mut segs = Vec::new();
        let mut j = i;
        loop {
            let s = j;
            while j < b.len() && ident(b[j]) {
                j += 1;
            }
            if s == j {
                break;
            }
            segs.push(code[s..j].to_string());
            if b[j..].starts_with(b"::") {
                j += 2;
            } else {
                break;
            }
        }
        if b[j..].starts_with(b"{") {
            let mut depth = 0usize;
            let mut item = String::new();
            let mut items = Vec::new();
            for c in code[j..].chars() {
                match c {
                    '{' => {
                        depth += 1;
                        if depth > 1 {
                            item.push(c);
                        }
                    }
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                        item.push(c);
                    }
                    ',' if depth == 1 => items.push(std::mem::take(&mut item)),
                    _ => item.push(c),
                }
            }
            items.push(item);
            for it in items {
                let first = it.trim().split("::").next().unwrap_or("").trim().to_string();
                if !first.is_empty() && first != "self" {
                    let mut p = segs.clone();
                    p.push(first);
                    out.push(p);
                }
            }
        } else {
            out.push(segs);
        }
        i = j.max(i + 1);
    }
    out
}

/// `crate::Name` → the module it is re-exported from (lib.rs `pub use`).
fn reexports() -> BTreeMap<String, Vec<String>> {
    let lib = std::fs::read_to_string(root().join("src/lib.rs")).unwrap();
    let mut out = BTreeMap::new();
    for part in lib.split("pub use ").skip(1) {
        let stmt = &part[..part.find(';').unwrap()];
        let (prefix, names) = match stmt.find('{') {
            Some(k) => (&stmt[..k], stmt[k + 1..stmt.rfind('}').unwrap()].to_string()),
            None => {
                let k = stmt.rfind("::").unwrap();
                (&stmt[..k + 2], stmt[k + 2..].to_string())
            }
        };
        let prefix: Vec<String> =
            prefix.split("::").filter(|s| !s.trim().is_empty()).map(|s| s.trim().into()).collect();
        for n in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let mut p = prefix.clone();
            p.push(n.to_string());
            out.insert(n.to_string(), p);
        }
    }
    out
}

/// Which module each module uses (its own ancestors and descendants aside:
/// a folder's `mod.rs` and its files are one unit).
fn graph() -> BTreeMap<Module, BTreeSet<Module>> {
    let mods = modules();
    let re = reexports();
    let resolve = |p: &[String]| (1..=p.len()).rev().map(|k| p[..k].to_vec()).find(|m| mods.contains_key(m));
    let mut g = BTreeMap::new();
    for (m, file) in &mods {
        let is_dir = file.ends_with("mod.rs");
        let mut uses = BTreeSet::new();
        for p in paths(&code(file)) {
            let full: Vec<String> = if p[0] == "crate" {
                match re.get(p.get(1).map_or("", String::as_str)) {
                    Some(r) => r.iter().chain(&p[2..]).cloned().collect(),
                    None => p[1..].to_vec(),
                }
            } else {
                let ups = p.iter().take_while(|s| *s == "super").count();
                // `super` of a folder's mod.rs is the folder's parent.
                let base = m.len() + usize::from(is_dir);
                let Some(keep) = base.checked_sub(ups + 1) else { continue };
                m[..keep].iter().chain(&p[ups..]).cloned().collect()
            };
            if let Some(t) = resolve(&full)
                && !t.starts_with(m)
                && !m.starts_with(&t)
            {
                uses.insert(t);
            }
        }
        g.insert(m.clone(), uses);
    }
    g
}

#[test]
fn every_layer_uses_only_the_layers_below_it() {
    let order = doc_layers();
    let src = root().join("src");
    let folders: BTreeSet<String> = std::fs::read_dir(&src)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(folders, order.iter().cloned().collect(), "src/ folders vs the layer table in docs/ARCHITECTURE.md");
    let rank = |l: &str| order.iter().position(|x| x == l).unwrap();
    let mut bad = Vec::new();
    for (m, uses) in graph() {
        for t in uses {
            if t[0] != m[0] && rank(&t[0]) <= rank(&m[0]) {
                bad.push(format!("{} uses {} (listed above it)", m.join("::"), t.join("::")));
            }
        }
    }
    assert!(bad.is_empty(), "layering broken:\n{}", bad.join("\n"));
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let g = graph();
    // Depth-first; a back edge is a cycle.
    fn visit<'a>(
        m: &'a Module,
        g: &'a BTreeMap<Module, BTreeSet<Module>>,
        state: &mut BTreeMap<&'a Module, u8>,
        stack: &mut Vec<&'a Module>,
        cycles: &mut Vec<String>,
    ) {
        state.insert(m, 1);
        stack.push(m);
        for t in g.get(m).into_iter().flatten() {
            match state.get(t) {
                Some(1) => {
                    let at = stack.iter().position(|s| *s == t).unwrap();
                    let names: Vec<String> = stack[at..].iter().chain([&t]).map(|s| s.join("::")).collect();
                    cycles.push(names.join(" -> "));
                }
                Some(_) => {}
                None => visit(t, g, state, stack, cycles),
            }
        }
        stack.pop();
        state.insert(m, 2);
    }
    let (mut state, mut cycles) = (BTreeMap::new(), Vec::new());
    for m in g.keys() {
        if !state.contains_key(m) {
            visit(m, &g, &mut state, &mut Vec::new(), &mut cycles);
        }
    }
    assert!(cycles.is_empty(), "import cycles:\n{}", cycles.join("\n"));
}

/// The checker itself: it sees a path in a group, through `super`, and
/// through a root re-export, and ignores comments and strings.
#[test]
fn the_checker_reads_paths() {
    let p = paths(
        "use crate::{a::b, c};\nuse super::x::Y;\nlet s = \"// not a comment\"; crate::Host::x();\n\
         fn f() { crate::state::journal::Journal::new() }",
    );
    let p: Vec<String> = p.iter().map(|s| s.join("::")).collect();
    assert_eq!(p, ["crate::a", "crate::c", "super::x::Y", "crate::Host::x", "crate::state::journal::Journal::new"]);
    assert!(!code(&root().join("src/serve/page.rs")).contains("mod tests"));
    assert_eq!(reexports()["Host"], ["base", "host", "Host"]);
    let g = graph();
    assert!(g[&vec!["serve".to_string(), "read".to_string()]].contains(&vec!["identity".into(), "readpath".into()]));
    assert!(g[&vec!["identity".to_string(), "stub".to_string()]].iter().any(|m| m[0] == "state"));
}
