//! JSON-RPC over stdio as MCP frames it: one message a line, each line
//! bounded. The reader runs on its own thread so the server can see a
//! `notifications/cancelled` for a request still waiting in the queue.

use serde_json::{Value, json};
use std::io::{BufRead, Write};
use std::sync::mpsc::Sender;

/// The longest line read (a request, or a client's answer to ours). MCP
/// requests are small; hook payloads have the same bound. Past it the rest
/// of the line is skipped unread into memory and answered with an error.
pub const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

/// JSON-RPC error codes.
pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
/// A handler that failed (a panic caught: `serve::guard`).
pub const INTERNAL_ERROR: i64 = -32603;

/// One line off stdin, as the reader thread hands it over.
#[derive(Debug)]
pub enum Incoming {
    Line(Vec<u8>),
    /// A line longer than [`MAX_LINE_BYTES`] (its length), skipped.
    TooLarge(usize),
    /// End of input (or a read error): the client is gone.
    End,
}

/// Read lines from `input` until it ends, sending each (bounded) to `tx`.
/// Stops when the receiver is gone.
pub fn read_lines(mut input: impl BufRead, tx: Sender<Incoming>, cap: usize) {
    let mut line = Vec::new();
    let mut skipped: Option<usize> = None;
    loop {
        let buf = match input.fill_buf() {
            Ok([]) | Err(_) => break,
            Ok(b) => b,
        };
        let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        match &mut skipped {
            Some(n) => *n += chunk.len(),
            None if line.len() + chunk.len() > cap => skipped = Some(line.len() + chunk.len()),
            None => line.extend_from_slice(chunk),
        }
        let used = done.unwrap_or(buf.len());
        input.consume(used);
        if done.is_some() {
            let msg = match skipped.take() {
                Some(n) => Incoming::TooLarge(n),
                None => Incoming::Line(std::mem::take(&mut line)),
            };
            line.clear();
            if tx.send(msg).is_err() {
                return;
            }
        }
    }
    // A last line without its newline still counts (a client that closes
    // stdin right after its last request).
    if let Some(n) = skipped {
        let _ = tx.send(Incoming::TooLarge(n));
    } else if !line.iter().all(u8::is_ascii_whitespace) {
        let _ = tx.send(Incoming::Line(line));
    }
    let _ = tx.send(Incoming::End);
}

/// What one parsed message is.
#[derive(Debug, PartialEq)]
pub enum Message {
    /// A request: answer it, under its id.
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
        params: Value,
    },
    /// The client's answer to a request of ours (`roots/list`).
    Response {
        id: Value,
        result: Option<Value>,
    },
    /// Not a JSON-RPC 2.0 message: answered with -32600 (under its id when
    /// it has a usable one).
    Invalid {
        id: Value,
        why: String,
    },
}

/// Classify one JSON value (a batch's element or a whole line).
pub fn classify(v: Value) -> Message {
    let Value::Object(mut o) = v else {
        return Message::Invalid { id: Value::Null, why: "a message must be a JSON object".into() };
    };
    // Only a string or number id can be answered under it (null is not an id).
    let id = match o.remove("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => Some(id),
        Some(Value::Null) | None => None,
        Some(_) => return Message::Invalid { id: Value::Null, why: "\"id\" must be a string or a number".into() },
    };
    if o.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Message::Invalid { id: id.unwrap_or(Value::Null), why: "\"jsonrpc\" must be \"2.0\"".into() };
    }
    let params = o.remove("params").unwrap_or(Value::Null);
    match (o.remove("method"), id) {
        (Some(Value::String(method)), Some(id)) => Message::Request { id, method, params },
        (Some(Value::String(method)), None) => Message::Notification { method, params },
        (Some(_), id) => Message::Invalid { id: id.unwrap_or(Value::Null), why: "\"method\" must be a string".into() },
        (None, Some(id)) if o.contains_key("result") || o.contains_key("error") => {
            Message::Response { id, result: o.remove("result") }
        }
        (None, id) => Message::Invalid { id: id.unwrap_or(Value::Null), why: "no \"method\"".into() },
    }
}

pub fn result(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

pub fn error(id: &Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// Write one message as one line and flush. `false`: the client is gone.
pub fn send(out: &mut impl Write, msg: &Value) -> bool {
    let mut line = serde_json::to_vec(msg).unwrap_or_default();
    line.push(b'\n');
    out.write_all(&line).and_then(|()| out.flush()).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::channel;

    fn lines(input: &[u8], cap: usize) -> Vec<String> {
        let (tx, rx) = channel();
        read_lines(input, tx, cap);
        rx.iter()
            .map(|m| match m {
                Incoming::Line(l) => String::from_utf8(l).unwrap(),
                Incoming::TooLarge(n) => format!("<{n}>"),
                Incoming::End => "<end>".into(),
            })
            .collect()
    }

    #[test]
    fn lines_are_split_and_bounded() {
        assert_eq!(lines(b"a\nbb\n", 2), ["a", "bb", "<end>"]);
        assert_eq!(lines(b"abc\nd\n", 2), ["<3>", "d", "<end>"]);
        // Exactly at the cap is accepted; a torn last line still counts.
        assert_eq!(lines(b"ab\ncd", 2), ["ab", "cd", "<end>"]);
        assert_eq!(lines(b"abcdef", 2), ["<6>", "<end>"]);
        assert_eq!(lines(b"", 2), ["<end>"]);
        // Through a tiny buffer: a line split over many reads.
        let r = std::io::BufReader::with_capacity(1, &b"hello\nworld-too-long\nok\n"[..]);
        let (tx, rx) = channel();
        read_lines(r, tx, 8);
        let got: Vec<_> = rx.iter().map(|m| format!("{m:?}")).collect();
        assert_eq!(got, ["Line([104, 101, 108, 108, 111])", "TooLarge(14)", "Line([111, 107])", "End"]);
    }

    #[test]
    fn messages_are_classified() {
        let c = |s: &str| classify(serde_json::from_str(s).unwrap());
        assert!(matches!(c(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#), Message::Request { .. }));
        assert!(matches!(c(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#), Message::Notification { .. }));
        assert!(matches!(c(r#"{"jsonrpc":"2.0","id":"r","result":{}}"#), Message::Response { .. }));
        assert!(matches!(c(r#"{"jsonrpc":"2.0","id":"r","error":{}}"#), Message::Response { result: None, .. }));
        for bad in [
            r#"[]"#,
            r#"{"id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":3}"#,
            r#"{"jsonrpc":"2.0","id":1}"#,
            r#"3"#,
        ] {
            assert!(matches!(c(bad), Message::Invalid { .. }), "{bad}");
        }
        let Message::Invalid { id, .. } = c(r#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#) else { panic!() };
        assert_eq!(id, 7);
    }
}
