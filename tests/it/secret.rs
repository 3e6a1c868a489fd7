//! Nothing leanctx stores gives content away (issue 21): every digest,
//! argument fingerprint and name hash in the journal is keyed with the data
//! dir's secret, lengths are coarse, and without the secret the journal
//! answers no guess. The secret is created once (0600, 32 bytes) even when
//! processes race for it; one that cannot be read withholds every stub;
//! records from before the change never back a stub.

use crate::support::Sandbox;
use leanctx::state::journal::{self, Journal, Record};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn s(p: &Path) -> String {
    p.to_str().unwrap().to_string()
}

/// A Claude Code MCP read of `path` with tool-use id `id` (the hook's
/// record, then the server's request in a file).
fn claude_call(sb: &Sandbox, session: &str, id: &str, path: &str) -> PathBuf {
    // The turn names the session's transcript (the stub's second witness).
    let t = sb.tmp.path().join(format!("transcript-{session}.jsonl"));
    if !t.exists() {
        std::fs::write(&t, "").unwrap();
    }
    let turn = json!({"session_id": session, "hook_event_name": "UserPromptSubmit", "transcript_path": t, "cwd": "/p"});
    sb.hook("claude-code", turn.to_string()).ok();
    crate::support::host_writes_call(&t, id);
    let pre = json!({"session_id": session, "hook_event_name": "PreToolUse", "tool_name": "mcp__ctx__ctx_read",
        "tool_input": {"path": path}, "tool_use_id": id, "cwd": "/p"});
    sb.hook("claude-code", pre.to_string()).ok();
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "ctx_read", "arguments": {"path": path}, "_meta": {"claudecode/toolUseId": id}}});
    let p = sb.tmp.path().join(format!("{id}.json"));
    std::fs::write(&p, call.to_string()).unwrap();
    p
}

fn claude_batch(sb: &Sandbox, session: &str, id: &str, text: &str) {
    let b = json!({"session_id": session, "hook_event_name": "PostToolBatch", "tool_calls": [
        {"tool_name": "mcp__ctx__ctx_read", "tool_use_id": id, "tool_input": {},
         "tool_response": [{"type": "text", "text": text}]}]});
    sb.hook("claude-code", b.to_string()).ok();
}

fn result_file(sb: &Sandbox, text: &str) -> PathBuf {
    let p = sb.tmp.path().join("result.json");
    std::fs::write(&p, json!({"content": [{"type": "text", "text": text}]}).to_string()).unwrap();
    p
}

fn stub(sb: &Sandbox, call: &Path, key: &str, ver: &str, result: Option<&Path>) -> String {
    let mut argv = vec!["stub".to_string(), "--call".into(), s(call), "--key".into(), key.into()];
    argv.extend(["--version".into(), ver.into()]);
    if let Some(r) = result {
        argv.extend(["--result".into(), s(r)]);
    }
    sb.cmd(&argv).run().stdout.trim().to_string()
}

/// What the journal held before: BLAKE3 of the text, 32 hex digits.
fn unkeyed_digest(text: &str) -> String {
    blake3::hash(text.as_bytes()).to_hex()[..32].to_string()
}

/// What the journal held before for a key or version.
fn unkeyed_name(kind: &str, s: &str) -> String {
    leanctx::base::fingerprint::sha256_hex(format!("leanctx-{kind}\0{s}").as_bytes())[..32].to_string()
}

/// The attack: a `.env` holding `DB_PIN=4821` is delivered and
/// confirmed; whoever reads the journal (not the secret) tries all 10,000
/// PINs against every digest and every length it holds. It recovered the
/// PIN in under a second; now no candidate matches, the stored length says
/// only "up to 64 bytes", and the key and version names match no guess —
/// while the stub itself still works.
#[test]
fn the_db_pin_brute_force_no_longer_recovers_the_secret() {
    let sb = Sandbox::new();
    let text = "DB_PIN=4821\n";
    let res = result_file(&sb, text);
    let c1 = claude_call(&sb, "A", "toolu_1", ".env");
    let version = leanctx::base::fingerprint::sha256_hex(text.as_bytes());
    assert_eq!(stub(&sb, &c1, ".env", &version, Some(&res)), "send-content not-delivered; delivery recorded");
    claude_batch(&sb, "A", "toolu_1", text);
    let c2 = claude_call(&sb, "A", "toolu_2", ".env");
    assert_eq!(stub(&sb, &c2, ".env", &version, None), "serve-stub confirmed-delivery", "the keyed ledger still works");

    let j = sb.journal();
    let fields: Vec<&str> = j.lines().flat_map(|l| l.split('\t')).collect();
    let mut found = Vec::new();
    for pin in 0..10_000 {
        let guess = format!("DB_PIN={pin:04}\n");
        let (d, v) = (unkeyed_digest(&guess), leanctx::base::fingerprint::sha256_hex(guess.as_bytes()));
        let names = [d.clone(), unkeyed_name("version", &v), v];
        if fields.iter().any(|f| names.iter().any(|n| f == n)) {
            found.push(pin);
        }
    }
    assert!(found.is_empty(), "the journal answers guesses: {found:?}\n{j}");
    assert!(!fields.contains(&unkeyed_name("key", ".env").as_str()), "the key's name is guessable");
    // Lengths: the coarse class, never the exact 12.
    let parsed = journal::parse(&j);
    let lens: Vec<u64> = parsed
        .iter()
        .filter_map(|r| match r {
            Record::Delivery(d) => Some(d.len),
            Record::Ack(a) => Some(a.len),
            _ => None,
        })
        .collect();
    assert_eq!(lens, [64, 64], "{j}");
    // And the fingerprint of the call's arguments is not the plain one.
    let plain_fp = leanctx::base::fingerprint::args_fingerprint(Some(&json!({"path": ".env"})));
    assert!(!j.contains(&plain_fp), "{j}");
}

/// The secret: 32 bytes, 0600, made by the first hook that records a call.
#[test]
fn the_secret_is_32_private_bytes_made_once() {
    let sb = Sandbox::new();
    let sighting = json!({"session_id": "A", "hook_event_name": "UserPromptSubmit"});
    sb.hook("claude-code", sighting.to_string()).ok();
    assert!(!sb.data.join("secret").exists(), "a hook that stores no digest does not need it");
    claude_call(&sb, "A", "toolu_1", "a.rs");
    let key = std::fs::read(sb.data.join("secret")).unwrap();
    assert_eq!(key.len(), 32);
    #[cfg(unix)]
    assert_eq!(leanctx::fsx::mode_of(&std::fs::metadata(sb.data.join("secret")).unwrap()), 0o600);
    claude_call(&sb, "A", "toolu_2", "a.rs");
    assert_eq!(std::fs::read(sb.data.join("secret")).unwrap(), key, "never replaced");
}

/// Processes racing on a data dir without a secret: one secret wins and
/// every process keys with it. Cursor's calls are found again only by
/// their fingerprint, so a loser that kept its own key would leave a call
/// record no server could claim.
#[test]
fn racing_processes_agree_on_one_secret() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(&sb.data).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&sb.data, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    let n = 12;
    let children: Vec<_> = (0..n)
        .map(|i| {
            let p = json!({"conversation_id": format!("c{i}"), "hook_event_name": "beforeMCPExecution",
                "tool_name": "ctx_read", "mcp_server_name": "ctx", "tool_input": format!("{{\"path\":\"f{i}.rs\"}}")});
            sb.hook("cursor", p.to_string()).spawn()
        })
        .collect();
    for c in children {
        assert!(c.wait_with_output().unwrap().status.success());
    }
    assert_eq!(std::fs::read(sb.data.join("secret")).unwrap().len(), 32);
    let left: Vec<String> = std::fs::read_dir(&sb.data)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("secret") && n != "secret")
        .collect();
    assert!(left.is_empty(), "temp files left: {left:?}");
    for i in 0..n {
        let call = json!({"jsonrpc": "2.0", "id": i, "method": "tools/call",
            "params": {"name": "ctx_read", "arguments": {"path": format!("f{i}.rs")}}});
        let o = sb.cmd(["scope", "check", "--call", "-", "--json"]).stdin(call.to_string()).run();
        let v: Value = o.json();
        assert_eq!(v["caller"]["scope"], format!("c{i}"), "call {i}: {v}");
    }
}

/// A secret that cannot be trusted (not 32 bytes, readable by others, a
/// FIFO, a symlink; another user's: tests/privileged): no digest can be
/// computed, so every stub is withheld `state-unavailable`, nothing is
/// recorded as delivered, and hooks still answer, saying why on stderr.
#[test]
fn a_secret_that_cannot_be_read_withholds_every_stub() {
    type Plant = fn(&Path);
    #[cfg_attr(not(unix), allow(unused_mut))]
    let mut cases: Vec<(&str, Plant)> = vec![
        ("31 bytes", |p| std::fs::write(p, [7u8; 31]).unwrap()),
        ("33 bytes", |p| std::fs::write(p, [7u8; 33]).unwrap()),
    ];
    #[cfg(unix)]
    cases.extend::<[(&str, Plant); 3]>([
        ("mode 0644", |p| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o644)).unwrap();
        }),
        ("a FIFO", |p| {
            std::fs::remove_file(p).unwrap();
            assert!(std::process::Command::new("mkfifo").arg(p).status().unwrap().success());
        }),
        ("a symlink", |p| {
            let real = p.with_file_name("real-secret");
            std::fs::rename(p, &real).unwrap();
            std::os::unix::fs::symlink(&real, p).unwrap();
        }),
    ]);
    for (case, plant) in cases {
        untrusted_secret_withholds(case, plant);
    }
}

/// One case of [`a_secret_that_cannot_be_read_withholds_every_stub`]: a
/// confirmed delivery, then `plant` spoils the secret.
pub fn untrusted_secret_withholds(case: &str, plant: fn(&Path)) {
    let sb = Sandbox::new();
    let text = "fn a() {}";
    let res = result_file(&sb, text);
    let c1 = claude_call(&sb, "A", "toolu_1", "a.rs");
    assert_eq!(stub(&sb, &c1, "a.rs", "v1", Some(&res)), "send-content not-delivered; delivery recorded", "{case}");
    claude_batch(&sb, "A", "toolu_1", text);
    let c2 = claude_call(&sb, "A", "toolu_2", "a.rs");
    assert_eq!(stub(&sb, &c2, "a.rs", "v1", None), "serve-stub confirmed-delivery", "{case}");
    plant(&sb.data.join("secret"));
    let o = sb.cmd(["stub", "--call", &s(&c2), "--key", "a.rs", "--version", "v1", "--json"]).run();
    assert_eq!((o.code, o.json()["decision"]["reason"].as_str()), (1, Some("state-unavailable")), "{case}: {o:?}");
    let o = sb.cmd(["deliver", "--call", &s(&c2), "--key", "a.rs", "--version", "v1", "--result", &s(&res)]).run();
    assert_eq!(o.code, 1, "{case}: not recorded: {o:?}");
    let pre = json!({"session_id": "A", "hook_event_name": "PreToolUse", "tool_name": "mcp__ctx__ctx_read",
        "tool_input": {"path": "a.rs"}, "tool_use_id": "toolu_3"});
    let o = sb.hook("claude-code", pre.to_string()).run();
    assert_eq!(o.code, 0, "{case}");
    assert!(o.stderr.contains("secret"), "{case}: the hook says why: {}", o.stderr);
}

/// Records written before digests were keyed (unkeyed names and digests,
/// exact lengths) never back a stub: the question's names are keyed, so
/// they match nothing, and the answer is "not delivered".
#[test]
fn records_from_before_the_change_never_back_a_stub() {
    let sb = Sandbox::new();
    let text = "fn a() {}";
    let c1 = claude_call(&sb, "A", "toolu_1", "a.rs");
    let (key, ver, digest) = (unkeyed_name("key", "a.rs"), unkeyed_name("version", "v1"), unkeyed_digest(text));
    let now = leanctx::base::clock::now_ms();
    let d = Record::Delivery(leanctx::state::ledger::Delivery {
        t: now,
        host: leanctx::Host::ClaudeCode,
        conv: "A",
        scope: "A",
        window: None,
        call_ref: "id:toolu_1",
        key: &key,
        version: &ver,
        digest: &digest,
        len: text.len() as u64,
        base: None,
    });
    let a = Record::Ack(leanctx::state::ledger::Ack {
        t: now,
        host: leanctx::Host::ClaudeCode,
        scope: "A",
        call_ref: "id:toolu_1",
        digest: &digest,
        len: text.len() as u64,
        whole: true,
    });
    Journal::new(&sb.data).append(&[d, a], now).unwrap();
    let c2 = claude_call(&sb, "A", "toolu_2", "a.rs");
    assert_eq!(stub(&sb, &c2, "a.rs", "v1", None), "send-content not-delivered");
    let _ = c1;
}
