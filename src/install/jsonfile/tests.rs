use super::*;
use serde_json::json;

fn edit(text: &str, comments: bool, f: impl FnOnce(&mut Node)) -> String {
    let mut d = parse(text, comments).unwrap();
    f(&mut d.root);
    d.render()
}

fn add_hooks(n: &mut Node) {
    n.as_obj_mut().unwrap().insert("hooks", Node::from_value(&json!({"Stop": [{"command": "x", "timeout": 5}]})));
}

#[test]
fn comments_are_refused_at_their_position_unless_allowed() {
    let e = parse("{\n  \"a\": 1, // note\n  \"b\": 2\n}\n", false).unwrap_err();
    assert_eq!(e.pos, Pos { line: 2, col: 11 });
    assert!(e.msg.contains("comments"), "{}", e.msg);
    let e = parse("{\"a\": \"http://x\" /* c */}", false).unwrap_err();
    assert_eq!(e.pos, Pos { line: 1, col: 18 });
    assert!(parse("{\"a\": \"http://x\" /* c */}", true).is_ok());
}

#[test]
fn syntax_errors_carry_line_and_column() {
    let e = parse("{\n  \"a\": 1,\n  \"b\": ,\n}", false).unwrap_err();
    assert_eq!(e.pos.line, 3);
    assert!(e.msg.starts_with("not valid JSON"), "{}", e.msg);
    assert!(parse("{\"a\": 1,}", false).is_err(), "no trailing commas");
    assert!(parse("{a: 1}", false).is_err());
    assert!(parse("{\"a\": 'x'}", false).is_err());
    assert!(parse("{\"a\": 0x10}", false).is_err());
    assert!(parse("{\"a\": \"\u{1}\"}", false).is_err(), "a raw control character");
}

#[test]
fn duplicate_keys_are_refused() {
    let e = parse("{\"hooks\": {}, \"hooks\": []}", false).unwrap_err();
    assert!(e.msg.contains("duplicate key \"hooks\""), "{}", e.msg);
    assert_eq!(e.pos, Pos { line: 1, col: 15 });
    assert!(parse("{\"a\": {\"x\": 1}, \"b\": {\"x\": 2}}", false).is_ok(), "same key in two objects is fine");
}

#[test]
fn empty_text_is_an_empty_object_and_renders_as_itself() {
    let d = parse(" \n", false).unwrap();
    assert_eq!(d.root.to_value(), json!({}));
    assert_eq!(d.render(), " \n");
    assert_eq!(
        edit("", false, add_hooks),
        "{\n  \"hooks\": {\n    \"Stop\": [\n      {\n        \"command\": \"x\",\n        \"timeout\": 5\n      }\n    ]\n  }\n}\n"
    );
}

#[test]
fn an_untouched_file_renders_byte_for_byte() {
    for text in ["{\"z\": 1, \"a\": 2, \"m\": [1.5e3, -3, null, true]}", "\u{feff}{\r\n\t\"a\": 1 // x\r\n}\r\n"] {
        assert_eq!(parse(text, true).unwrap().render(), text);
    }
}

#[test]
fn a_property_goes_in_and_out_leaving_the_rest() {
    for text in [
        "{}",
        "{\"a\":1}",
        "{\"a\": 1, \"b\": [1,2,3]}",
        "{\n  \"a\": [1,2,3]\n}\n",
        "{\n\t\"a\": {\n\t\t\"b\": true\n\t}\n}",
        "\u{feff}{\r\n    \"a\": 1\r\n}\r\n",
        "{\n  \"a\": 1 // about a\n}\n",
        "{\n  // nothing yet\n}\n",
        "{ /* x */ }",
        "  {\"a\" : 1 , \"b\":2}  \n",
    ] {
        let installed = edit(text, true, add_hooks);
        assert_ne!(installed, text);
        let d = parse(&installed, true).unwrap_or_else(|e| panic!("{text:?} -> {installed:?}: {e:?}"));
        assert_eq!(d.root.get("hooks").unwrap().to_value()["Stop"][0]["timeout"], 5);
        let back = edit(&installed, true, |n| {
            n.as_obj_mut().unwrap().remove("hooks");
        });
        assert_eq!(back, text, "installed: {installed}");
    }
}

#[test]
fn new_text_follows_the_files_layout() {
    let t = edit("{\n\t\"a\": 1\n}", false, add_hooks);
    assert!(t.starts_with("{\n\t\"a\": 1,\n\t\"hooks\": {\n\t\t\"Stop\": [\n\t\t\t{\n"), "{t}");
    let t = edit("{\"a\":[1,2]}", false, add_hooks);
    assert_eq!(t, "{\"a\":[1,2],\"hooks\":{\"Stop\":[{\"command\":\"x\",\"timeout\":5}]}}");
    let t = edit("{\r\n  \"a\": 1\r\n}\r\n", false, add_hooks);
    assert!(!t.replace("\r\n", "").contains('\n'), "CRLF throughout: {t:?}");
}

#[test]
fn elements_are_added_and_removed_anywhere() {
    let text = "{\"l\": [\n  1, // one\n  2\n]}";
    let mut d = parse(text, true).unwrap();
    let l = d.root.get_mut("l").unwrap().as_arr_mut().unwrap();
    l.push(Node::from_value(&json!(3)));
    l.insert(0, Node::from_value(&json!(0)));
    let out = d.render();
    assert_eq!(out, "{\"l\": [\n  0,\n  1, // one\n  2,\n  3\n]}");
    let mut d = parse(&out, true).unwrap();
    let l = d.root.get_mut("l").unwrap().as_arr_mut().unwrap();
    l.remove(3);
    l.remove(0);
    assert_eq!(d.render(), text);
    // The middle one, and the last one after a commented element.
    let mut d = parse("[1, 2, 3]", true).unwrap();
    d.root.as_arr_mut().unwrap().remove(1);
    assert_eq!(d.render(), "[1, 3]");
    let mut d = parse("[\n  1, // c\n  2\n]", true).unwrap();
    d.root.as_arr_mut().unwrap().remove(1);
    assert_eq!(d.render(), "[\n  1 // c\n]");
}

#[test]
fn a_replaced_value_is_written_in_its_place() {
    let mut d = parse("{\"a\": {\"x\": 1}, \"b\": 2}", false).unwrap();
    d.root.as_obj_mut().unwrap().insert("a", Node::from_value(&json!({"y": 2})));
    assert_eq!(d.render(), "{\"a\": {\"y\": 2}, \"b\": 2}");
}
