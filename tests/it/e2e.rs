//! End to end with the real hosts: Claude Code and Codex, offline against a
//! mock model on 127.0.0.1, with leanctx's hooks installed by `leanctx hooks
//! install` and an MCP server that asks leanctx before every stub
//! (tests/e2e/leanctx_e2e.py does the driving; tests/e2e/README.md says how).
//!
//! The hosts come from `bash tests/e2e/setup-hosts.sh` (run by .ci/run). When
//! they are not installed the test says so loudly on stderr and passes: the
//! rest of the suite must still run on a machine without node.

use std::path::Path;
use std::process::Command;

#[test]
fn real_claude_code_and_codex_with_leanctx() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let hosts = std::env::var("E2E_HOSTS_DIR").map(Into::into).unwrap_or_else(|_| root.join("target/e2e-hosts"));
    let bins = ["claude", "codex"].map(|b| hosts.join("node_modules/.bin").join(b));
    if let Some(missing) = bins.iter().find(|b| !b.exists()) {
        eprintln!(
            "\n!!! SKIPPED: end-to-end tests with real hosts: {} is missing.\n!!! Run `bash tests/e2e/setup-hosts.sh` (needs npm) to enable them.\n",
            missing.display()
        );
        return;
    }
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("\n!!! SKIPPED: end-to-end tests need python3 (mock model and MCP server)\n");
        return;
    }
    let out = Command::new("python3")
        .arg(root.join("tests/e2e/leanctx_e2e.py"))
        .arg("--leanctx")
        .arg(crate::support::BIN)
        .env("E2E_HOSTS_DIR", &hosts)
        .output()
        .expect("run tests/e2e/leanctx_e2e.py");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let failed: Vec<&str> = stdout.lines().filter(|l| l.starts_with("FAIL")).collect();
    let summary = stdout.lines().rev().find(|l| l.contains(" passed, ")).unwrap_or("(no summary)");
    println!("end-to-end: {summary}");
    assert!(
        out.status.success() && failed.is_empty(),
        "end-to-end failures:\n{}\n--- stdout tail ---\n{}\n--- stderr tail ---\n{}",
        failed.join("\n"),
        tail(&stdout, 40),
        tail(&stderr, 40)
    );
    // Every scenario ran for both hosts.
    for host in ["claude", "codex"] {
        for scen in ["baseline", "gate", "concurrent", "subagent", "compact"] {
            assert!(stdout.contains(&format!("PASS {host}/{scen}:")), "{host}/{scen} did not run");
        }
    }
}

fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
