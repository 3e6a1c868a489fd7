//! Ranges through the real `leanctx serve` (issue 23): a range is a
//! delivery of those lines, and a stub goes out only for lines covered by
//! held deliveries of this version, one piece or several.

use crate::serve::{Serve, claude_batch, claude_pre, is_stub, text};
use crate::support::Sandbox;
use serde_json::{Value, json};

/// A Claude Code chat reading through the server; `ack` says whether the
/// host's PostToolBatch confirmed what the model got.
struct Chat<'a> {
    sb: &'a Sandbox,
    s: Serve,
    n: usize,
}

impl Chat<'_> {
    fn read(&mut self, session: &str, args: Value, ack: bool) -> Value {
        self.n += 1;
        let id = format!("toolu_r{:03}", self.n);
        let meta = claude_pre(self.sb, session, None, &id, "f.txt");
        let r = self.s.read(args, meta);
        assert_eq!(r["isError"], false, "{r}");
        if ack {
            claude_batch(self.sb, session, &id, &r);
        }
        r
    }

    fn lines(&mut self, first: usize, count: usize, ack: bool) -> Value {
        self.read("A", json!({"path": "f.txt", "offset": first, "limit": count}), ack)
    }
}

fn body(tag: &str) -> String {
    (1..=100).map(|i| format!("{tag} line {i:03}\n")).collect()
}

#[test]
fn a_range_covered_by_several_held_pieces_is_a_stub() {
    let sb = Sandbox::new();
    std::fs::write(sb.project.join("f.txt"), body("v1")).unwrap();
    let s = Serve::init(&sb, "claude-code");
    let mut c = Chat { sb: &sb, s, n: 0 };
    assert!(text(&c.lines(1, 40, true)).starts_with("[f.txt: lines 1-40 of 100]"));
    assert!(text(&c.lines(41, 30, true)).starts_with("[f.txt: lines 41-70 of 100]"));
    // Lines 20-60 lie in two held pieces: a stub that names the lines.
    let r = c.lines(20, 41, true);
    assert!(is_stub(&r), "{r}");
    assert!(text(&r).contains("lines 20-60"), "{r}");
    // One line past what is held: those lines are sent (the range whole).
    let r = c.lines(60, 20, true);
    assert!(text(&r).starts_with("[f.txt: lines 60-79 of 100]\nv1 line 060\n"), "{r}");
    // Now 1-79 is held in three pieces; 80-100 once more, then the whole
    // file is covered: a stub for it too.
    assert!(!is_stub(&c.lines(80, 21, true)));
    let r = c.read("A", json!({"path": "f.txt"}), true);
    assert!(is_stub(&r), "{r}");
    assert!(text(&r).contains("delivered in 4 ranges"), "{r}");
    // Another chat holds none of it.
    assert!(!is_stub(&c.read("B", json!({"path": "f.txt", "offset": 20, "limit": 41}), true)));
    // Edited: no piece is of this version.
    std::fs::write(sb.project.join("f.txt"), body("v2")).unwrap();
    let r = c.lines(20, 41, true);
    assert!(text(&r).starts_with("[f.txt: lines 20-60 of 100]\nv2 line 020\n"), "{r}");
}

#[test]
fn a_piece_not_provably_held_covers_nothing() {
    let sb = Sandbox::new();
    std::fs::write(sb.project.join("f.txt"), body("v1")).unwrap();
    let s = Serve::init(&sb, "claude-code");
    let mut c = Chat { sb: &sb, s, n: 0 };
    c.lines(1, 50, true);
    c.lines(51, 50, false); // the host never confirmed the model got it
    // (The probes themselves are never confirmed: each asks afresh.)
    assert!(!is_stub(&c.lines(40, 20, false)), "51-59 unconfirmed: sent");
    c.lines(51, 50, true);
    assert!(is_stub(&c.lines(40, 20, false)));
    // A compaction ends every piece.
    sb.hook("claude-code", json!({"session_id": "A", "hook_event_name": "PreCompact"}).to_string()).ok();
    assert!(!is_stub(&c.lines(39, 20, false)));
}
