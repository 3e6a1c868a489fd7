//! Argument fingerprints: sha256 over a canonical JSON form, so the hook's
//! view of a call (Cursor sends `tool_input` as a JSON string or an object)
//! and the MCP server's `arguments` give the same value.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// Canonical JSON: object keys sorted, no whitespace. `null`/absent
/// arguments count as `{}` (hosts omit them for argument-less tools).
pub fn canonical_json(v: &Value) -> String {
    let mut out = String::new();
    match v {
        Value::Null => out.push_str("{}"),
        _ => write_canonical(v, &mut out),
    }
    out
}

fn write_canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::to_string(k).unwrap_or_default());
                out.push(':');
                write_canonical(&map[k.as_str()], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// Fingerprint of tool arguments given as a JSON value. A string that holds
/// JSON (Cursor's `tool_input`) is parsed first; a string that does not is
/// hashed as a JSON string value.
pub fn args_fingerprint(args: Option<&Value>) -> String {
    let parsed;
    let v = match args {
        None => &Value::Null,
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(inner @ (Value::Object(_) | Value::Null)) => {
                parsed = inner;
                &parsed
            }
            _ => args.unwrap_or(&Value::Null),
        },
        Some(v) => v,
    };
    sha256_hex(canonical_json(v).as_bytes())
}

/// Lower-case hex sha256. `sha2` is built with its portable code only
/// (`force-soft`, Cargo.toml): what leanctx hashes with it is short (argument
/// fingerprints, ids, names), and its CPU probe (`cpuid`, which traps to a
/// hypervisor) cost a fresh hook process more than the hashing.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest: [u8; 32] = Sha256::digest(bytes).into();
    hex(&digest)
}

/// Lower-case hex of `bytes`, two characters each, in one allocation.
pub fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        s.push(HEX[(b >> 4) as usize] as char);
        s.push(HEX[(b & 15) as usize] as char);
    }
    s
}

const HEX: &[u8; 16] = b"0123456789abcdef";

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn string_and_object_inputs_agree() {
        let obj = json!({"path": "src/main.rs", "mode": "map"});
        let s = Value::String("{\"path\":\"src/main.rs\",\"mode\":\"map\"}".into());
        let reordered = json!({"mode": "map", "path": "src/main.rs"});
        assert_eq!(args_fingerprint(Some(&obj)), args_fingerprint(Some(&s)));
        assert_eq!(args_fingerprint(Some(&obj)), args_fingerprint(Some(&reordered)));
        assert_ne!(args_fingerprint(Some(&obj)), args_fingerprint(Some(&json!({"path": "x"}))));
    }

    #[test]
    fn absent_equals_empty() {
        assert_eq!(args_fingerprint(None), args_fingerprint(Some(&json!({}))));
        assert_eq!(args_fingerprint(Some(&Value::Null)), args_fingerprint(Some(&json!({}))));
        assert_eq!(args_fingerprint(Some(&Value::String("{}".into()))), args_fingerprint(None));
    }

    #[test]
    fn nested_keys_sorted() {
        let a = json!({"b": {"y": 1, "x": [1, {"q": 1, "p": 2}]}, "a": null});
        assert_eq!(canonical_json(&a), r#"{"a":null,"b":{"x":[1,{"p":2,"q":1}],"y":1}}"#);
    }
}
