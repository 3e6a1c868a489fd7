#!/usr/bin/env python3
"""End-to-end: real Claude Code and Codex, offline, with leanctx's hooks installed by
`leanctx hooks install` and an MCP server that asks leanctx before serving a stub.

    python3 tests/e2e/leanctx_e2e.py --leanctx target/debug/leanctx [--host claude|codex|both]
                                     [--only baseline,gate,...] [--keep] [-v]

Two families of scenarios:
- baseline, gate, concurrent, subagent, compact: the MCP server asks `leanctx scope check` (and
  keeps its own delivery memory). They look at leanctx's own state (the slot, the journal,
  `status --json`) and the MCP server's log (what leanctx answered, what was served).
- ledger-*: the MCP server asks `leanctx stub ... --result` (the delivery ledger) and keeps no
  memory of its own. The oracle is what the model received: the mock model logs, for every
  request, each tool result's text, which big-<N> fixtures it holds whole, whether it is an
  `[unchanged]` stub, and which fixtures are whole anywhere in the request's context. Every stub
  the model got must stand next to a whole copy of that file in its context.

Prints one PASS/FAIL line per check and a closing "N passed, M failed" line; exits 1 on failure
(3 with a SKIP line when a host binary is missing).
Runs in a loopback-only network namespace when possible (see harness.isolate_network).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import traceback
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fixture_text  # noqa: E402
import harness as H  # noqa: E402
import live  # noqa: E402
import sc_idle  # noqa: E402
import sc_serve  # noqa: E402
import sc_subcompact  # noqa: E402
import sc_workload  # noqa: E402

RESULTS = []
VERBOSE = False
LEANCTX = None
GATE_MESSAGE = "LEANCTX-GATE-DENY: reads are off today"
FIXTURE = "fixture content of README.md"
HOST_NAME = {"claude": "claude-code", "codex": "codex"}


def check(name, ok, detail=""):
    RESULTS.append((name, bool(ok)))
    line = "%s %s" % ("PASS" if ok else "FAIL", name)
    if detail and (not ok or VERBOSE):
        line += "  -- " + str(detail)[:800]
    print(line, flush=True)
    return bool(ok)


# The hook that acknowledges deliveries, per host: Claude's PostToolBatch shows what the model got,
# Codex's PostToolUse names the call (its size rule decides whether it arrived whole).
ACK_EVENT = {"claude-code": "PostToolBatch", "codex": "PostToolUse"}
ACK_CHECKED = set()


class World:
    """A harness sandbox whose hooks are leanctx's, installed by `leanctx hooks install`.

    mode "scope": the MCP server asks `scope check`; "ledger": it asks `stub --result`.
    max_result_chars: the MCP tool declares anthropic/maxResultSizeChars. drop_hooks: {host:
    [events]} removed from the installed config. codex_config_top: top-level config.toml keys.
    serve_files: ctx_read serves the project's real files (else fixture text only). server: let
    `hooks install` register `leanctx serve` as the hosts' MCP server too (else `--no-server`: the
    scenarios about the Python ctx server see only that one). mode "installed": that registration
    is the only MCP server the hosts have (the harness writes none), and the mock calls its `read`;
    the mock also saves every request body (World.bodies)."""

    def __init__(self, name, mode="scope", max_result_chars=None, drop_hooks=None, codex_config_top="",
                 serve_files=False, server=False, codex_config_first=False):
        root = tempfile.mkdtemp(prefix="leanctx-e2e-%s-" % name, dir=os.environ.get("E2E_SANDBOX_BASE"))
        self.cache = os.path.join(root, "mcp-cache.json")
        mcp_argv = [H.PYTHON, H.MCP_SERVER, "--log", os.path.join(root, "logs", "mcp.jsonl"),
                    "--leanctx", LEANCTX]
        mcp_argv += ["--cache", self.cache] if mode == "scope" else ["--mode", "ledger"]
        if max_result_chars:
            mcp_argv += ["--max-result-chars", str(max_result_chars)]
        if serve_files:  # ctx_read reads the project's files as they are at each call
            mcp_argv += ["--root", os.path.join(root, "home", "project")]
        tool, installed = None, None
        if mode == "serve":  # the server is `leanctx serve` itself: tool `read` on server `ctx`
            mcp_argv, tool = [LEANCTX, "serve"], "read"
        if mode == "installed":  # `leanctx serve` as `hooks install` registered it, nothing else
            tool, installed, server = "read", "leanctx", True
        self.sb = H.Sandbox(hooks=None, root=root, name=name, keep=KEEP, mcp_argv=mcp_argv,
                            codex_config_top=codex_config_top, mcp_tool=tool, installed_mcp=installed,
                            mock_dump=installed is not None)
        if codex_config_first:  # config.toml exists before the install, as in a user's CODEX_HOME
            self.sb._write_codex_config()
        # Data dir as leanctx resolves it from the sandbox HOME (XDG_DATA_HOME for the hooks,
        # $HOME/.local/share for Codex's MCP server, whose env Codex filters: the same dir).
        self.data = os.path.join(self.sb.home, ".local", "share", "lean-ctx")
        for host in ("claude-code", "codex"):
            out = self.leanctx(["hooks", "install", host] + ([] if server else ["--no-server"]))
            check("%s: leanctx hooks install %s" % (name, host), out.returncode == 0,
                  out.stdout + out.stderr)
        if mode in ("ledger", "serve", "installed"):
            for host in ("claude-code", "codex"):
                self.ensure_ack_hook(host)
        for host, events in (drop_hooks or {}).items():
            self.edit_hooks(host, lambda hooks: [hooks.pop(e, None) for e in events])

    def hooks_file(self, host):
        if host == "claude-code":
            return os.path.join(self.sb.claude_dir, "settings.json")
        return os.path.join(self.sb.codex_home, "hooks.json")

    def edit_hooks(self, host, fn):
        path = self.hooks_file(host)
        with open(path) as f:
            doc = json.load(f)
        fn(doc.setdefault("hooks", {}))
        with open(path, "w") as f:
            json.dump(doc, f, indent=2)
        return doc["hooks"]

    def ensure_ack_hook(self, host):
        """The ledger needs the host's acknowledging hook. `leanctx hooks install` must put it
        there (checked once per host); when it did not, the same command is added by hand so the
        ledger itself can still be tested."""
        event = ACK_EVENT[host]
        with open(self.hooks_file(host)) as f:
            hooks = json.load(f).get("hooks", {})
        ours = [h.get("command", "") for g in hooks.get(event, []) for h in g.get("hooks", [])
                if "hook %s" % host in h.get("command", "")]
        if host not in ACK_CHECKED:
            ACK_CHECKED.add(host)
            check("ledger: `leanctx hooks install %s` installs the %s hook that acknowledges deliveries"
                  % (host, event), ours, "installed events: %s" % sorted(hooks))
        if not ours:
            pre = [h["command"] for g in hooks.get("PreToolUse", []) for h in g.get("hooks", [])
                   if "hook %s" % host in h.get("command", "")]
            cmd = pre[0] if pre else "%s hook %s" % (LEANCTX, host)
            self.edit_hooks(host, lambda hk: hk.setdefault(event, []).append(
                {"hooks": [{"type": "command", "command": cmd, "timeout": 5}]}))

    def env(self):
        e = {k: v for k, v in self.sb.env("codex").items() if k not in ("MOCK_API_KEY",)}
        e["CODEX_HOME"] = self.sb.codex_home
        return e

    def leanctx(self, args, stdin=None):
        return subprocess.run([LEANCTX] + args, env=self.env(), input=stdin, capture_output=True, text=True,
                              timeout=30, cwd=self.sb.project)

    def status(self):
        return json.loads(self.leanctx(["status", "--json"]).stdout)

    def journal(self):
        try:
            with open(os.path.join(self.data, "journal")) as f:
                return [l.rstrip("\n").split("\t") for l in f if not l.startswith("#")]
        except OSError:
            return []

    def slot(self):
        try:
            with open(os.path.join(self.data, "active_transcript.json")) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def run(self, host, prompt, **kw):
        fn = H.run_claude if host == "claude" else H.run_codex
        r = fn(self.sb, prompt, **kw)
        if VERBOSE:
            print("    run %s %r -> %r" % (host, prompt, r), flush=True)
        return r

    def mcp(self):
        return self.sb.mcp_calls()

    def close(self):
        self.sb.close()


def ok_run(tag, r):
    return check("%s: host exit 0, no timeout" % tag, r.exit_code == 0 and not r.timed_out,
                 "%r %s" % (r, r.stderr[-500:].replace("\n", " | ")))


def answer(call):
    return ((call.get("leanctx") or {}).get("answer")) or {}


def caller(call):
    return answer(call).get("caller") or {}


def records(w, tag, sid=None):
    return [r for r in w.journal() if r and r[0] == tag and (sid is None or (len(r) > 3 and r[3] == sid))]


def served(w, text):
    """Tool results the model received that contain `text`."""
    return [tr for q in w.sb.mock_requests() for tr in q.get("tool_results", []) if text in tr.get("text", "")]


# ---------------------------------------------------------------------------------------------


def sc_baseline(host):
    tag = "%s/baseline" % host
    w = World("%s-baseline" % host)
    try:
        r = w.run(host, "read README via ctx_read [reads=README.md,README.md]")
        ok_run(tag, r)
        sid = r.session_id
        slot = w.slot() or {}
        check("%s: slot names the session" % tag, sid and slot.get("session_id") == sid, json.dumps(slot))
        check("%s: slot has lean-ctx's keys" % tag,
              all(k in slot for k in ("transcript_path", "conversation_id", "session_id", "updated_at")))
        check("%s: sightings journaled" % tag, len(records(w, "S", sid)) >= 3, "S=%d" % len(records(w, "S", sid)))
        calls = records(w, "C", sid)
        mcp = w.mcp()
        meta_ids = [(c.get("_meta") or {}).get("claudecode/toolUseId") or (c.get("_meta") or {}).get("callId")
                    for c in mcp]
        check("%s: a call record per MCP call, with the host's call id" % tag,
              len(calls) == 2 and sorted(c[8] for c in calls) == sorted(meta_ids),
              "journal=%s meta=%s" % (calls, meta_ids))
        check("%s: session end journaled" % tag, len(records(w, "E", sid)) == 1)
        want_src = "tool-use-id" if host == "claude" else "meta-session"
        check("%s: every MCP call resolved exactly to the session via %s" % (tag, want_src),
              len(mcp) == 2 and all(caller(c).get("scope") == sid and caller(c).get("source") == want_src
                                    and caller(c).get("exact") for c in mcp),
              json.dumps([caller(c) for c in mcp]))
        second = mcp[1] if len(mcp) > 1 else {}
        check("%s: the re-read was answered with a stub (same-conversation)" % tag,
              (second.get("leanctx") or {}).get("stub") and answer(second).get("decision", {}).get("reason") == "same-conversation",
              json.dumps(answer(second))[:400])
        check("%s: the model was served [unchanged] for the re-read" % tag, len(served(w, "[unchanged] README.md")) == 1)
        st = w.status()
        hosts = {h["host"]: h for h in st.get("hosts", [])}
        check("%s: status shows the host's last event" % tag, HOST_NAME[host] in hosts, json.dumps(st.get("hosts")))
        check("%s: status: ended session is not live" % tag, not any(l["conversation"] == sid for l in st.get("live", [])))
        st = json.loads(w.leanctx(["hooks", "status", HOST_NAME[host], "--json"]).stdout or "{}")
        hs = (st.get("hosts") or [{}])[0]
        check("%s: hooks status: installed, fired, no warning" % tag,
              hs.get("installed") and (hs.get("last_event") or {}).get("event") and not hs.get("warnings"),
              json.dumps(hs)[:400])
    finally:
        w.close()


def sc_gate(host):
    tag = "%s/gate" % host
    w = World("%s-gate" % host)
    try:
        os.makedirs(w.data, mode=0o700, exist_ok=True)
        with open(os.path.join(w.data, "gate.json"), "w") as f:
            json.dump({"rules": [{"server": "ctx", "tool": "ctx_read", "action": "deny", "message": GATE_MESSAGE}]}, f)
        r = w.run(host, "read README via ctx_read")
        ok_run(tag, r)
        check("%s: the deny rule stopped the MCP tool (no tools/call)" % tag, len(w.mcp()) == 0, json.dumps(w.mcp())[:300])
        check("%s: the model saw the gate's reason" % tag, len(served(w, GATE_MESSAGE)) == 1,
              json.dumps([q.get("tool_results") for q in w.sb.mock_requests()])[:600])
        check("%s: the denied call was still recorded" % tag, len(records(w, "C", r.session_id)) == 1)
    finally:
        w.close()


def sc_concurrent(host):
    tag = "%s/concurrent" % host
    w = World("%s-concurrent" % host)
    try:
        prompt = "[slow=3] read README via ctx_read [reads=README.md,README.md]"
        ra, rb = H.run_concurrently([lambda: w.run(host, prompt), lambda: w.run(host, prompt)])
        if isinstance(ra, BaseException) or isinstance(rb, BaseException):
            check("%s: both sessions ran" % tag, False, "%r %r" % (ra, rb))
            return
        ok_run(tag + " A", ra)
        ok_run(tag + " B", rb)
        check("%s: the runs overlapped (>2 s)" % tag, H.overlap(ra, rb) > 2.0, "%.2f" % H.overlap(ra, rb))
        sids = {ra.session_id, rb.session_id}
        mcp = w.mcp()
        check("%s: four MCP calls" % tag, len(mcp) == 4, len(mcp))
        # Which session made each call: the journal's call record with the host's call id.
        by_id = {c[8]: c[3] for c in records(w, "C")}
        truth = [by_id.get((c.get("_meta") or {}).get("claudecode/toolUseId") or (c.get("_meta") or {}).get("callId"))
                 for c in mcp]
        check("%s: every MCP call resolved to its own session" % tag,
              all(t in sids for t in truth) and [caller(c).get("scope") for c in mcp] == truth,
              "truth=%s resolved=%s" % (truth, [caller(c) for c in mcp]))
        # The re-reads run after the slow turns; the session that finishes first ends (and stops
        # counting as live), so the later re-read may rightly see a single live session.
        conc = [answer(c).get("concurrent") for c in mcp if (c.get("leanctx") or {}).get("prev")]
        check("%s: leanctx saw the two sessions as concurrent" % tag, conc and any(conc), conc)
        stubs = [c for c in mcp if (c.get("leanctx") or {}).get("stub")]
        check("%s: each session still got its own re-read stub despite concurrency" % tag,
              len(stubs) == 2 and {caller(c).get("scope") for c in stubs} == sids,
              json.dumps([answer(c).get("decision") for c in mcp]))
    finally:
        w.close()


def sc_subagent(host):
    tag = "%s/subagent" % host
    w = World("%s-subagent" % host)
    try:
        r = w.run(host, "[subagent] read README via ctx_read")
        ok_run(tag, r)
        calls = [c for c in records(w, "C") if c[4] != "-"]
        mcp = w.mcp()
        check("%s: the subagent's call record carries its agent scope" % tag,
              len(calls) == 1 and calls[0][4].startswith("agent:"), calls)
        check("%s: the subagent's MCP call resolved to the subagent, exactly" % tag,
              len(mcp) == 1 and calls and caller(mcp[0]).get("scope") == calls[0][4] and caller(mcp[0]).get("exact"),
              json.dumps([caller(c) for c in mcp]))
        check("%s: the subagent is not the parent conversation" % tag,
              mcp and caller(mcp[0]).get("scope") != r.session_id and caller(mcp[0]).get("conversation") == r.session_id)
        # The parent's scope never gets the subagent's delivery.
        sid = r.session_id
        out = w.leanctx(["scope", "check", "--delivered", caller(mcp[0]).get("scope") or "x", "--json"],
                        stdin=None)
        check("%s: a parent-scoped caller is refused the subagent's delivery" % tag,
              out.returncode == 1 or json.loads(out.stdout or "{}").get("caller", {}).get("scope") != sid,
              out.stdout[:300])
    finally:
        w.close()


def sc_compact(host):
    tag = "%s/compact" % host
    w = World("%s-compact" % host)
    try:
        r1 = w.run(host, "read README via ctx_read")
        ok_run(tag + " first", r1)
        sid = r1.session_id
        if host == "claude":
            r2 = w.run(host, "read README via ctx_read again", resume=sid)
        else:
            r2 = w.run(host, "read README via ctx_read again", resume_last=True)
        ok_run(tag + " resume", r2)
        mcp = w.mcp()
        check("%s: after a plain resume the cold entry gives a stub (same conversation, no compaction)" % tag,
              len(mcp) == 2 and (mcp[1].get("leanctx") or {}).get("stub")
              and answer(mcp[1]).get("decision", {}).get("reason") == "same-conversation",
              json.dumps([c.get("leanctx") for c in mcp])[:600])
        if host == "claude":
            r3 = w.run(host, "/compact", resume=sid)
            ok_run(tag + " /compact", r3)
            r4 = w.run(host, "read README via ctx_read once more", resume=sid)
        else:
            r4 = w.run(host, "read README via ctx_read once more", resume_last=True,
                       config=["model_auto_compact_token_limit=60"])
        ok_run(tag + " after compaction", r4)
        check("%s: compaction journaled" % tag, len(records(w, "P", sid)) >= 1, records(w, "P"))
        mcp = w.mcp()
        last = mcp[-1] if mcp else {}
        check("%s: the compaction invalidated the earlier delivery (withheld: compacted)" % tag,
              len(mcp) == 3 and not (last.get("leanctx") or {}).get("stub")
              and answer(last).get("decision", {}).get("reason") == "compacted",
              json.dumps(last.get("leanctx"))[:600])
        check("%s: the model got the content again, not a stub" % tag, len(served(w, FIXTURE)) >= 2)
    finally:
        w.close()


# ---------------------------------------------------------------------------------------------
# The delivery ledger. The oracle is the mock model's log: what the model received.

CTX_TOOLS = ("mcp__ctx__ctx_read", "ctx_read", "mcp__ctx__read", "read", "mcp__leanctx__read")
STUB_RE = re.compile(r"\[unchanged\] (\S+)")


def lc(call):
    return call.get("leanctx") or {}


def reason(call):
    return ((lc(call).get("answer") or {}).get("decision") or {}).get("reason")


def confirmation(call):
    return ((lc(call).get("answer") or {}).get("delivery") or {}).get("confirmation")


def summary(calls):
    return json.dumps([(c.get("arguments", {}).get("path"), lc(c).get("exit"), reason(c), confirmation(c),
                        (c.get("_meta") or {}).get("windowId")) for c in calls])


def main_requests(w, session=None):
    return [q for q in w.sb.mock_requests()
            if q.get("kind") == "main" and (session is None or q.get("session") == session)]


def model_results(w, session=None):
    """ctx_read results the model received, in order, each with the request that carried it."""
    return [dict(tr, _context=q.get("context_whole") or [], _session=q.get("session"))
            for q in main_requests(w, session) for tr in q.get("tool_results", []) if tr.get("tool") in CTX_TOOLS]


def is_stub(tr, name):
    return not tr.get("whole") and "[unchanged] %s" % name in tr.get("text", "")


def desc(results):
    return json.dumps([{"chars": t.get("chars"), "whole": t.get("whole"), "unchanged": t.get("unchanged"),
                        "markers": len(t.get("markers") or []), "head": (t.get("text") or "")[:80]}
                       for t in results])


def check_stubs_truthful(tag, w):
    """Every `[unchanged] P` the model received came after a whole copy of P in the same request
    (an earlier turn's result, or an earlier result of the same batch)."""
    stubs = [(STUB_RE.search(t.get("text", "")).group(1).rsplit("/", 1)[-1], t.get("whole_before") or [])
             for t in model_results(w) if t.get("unchanged") and STUB_RE.search(t.get("text", ""))]
    stubs = [(name, before) for name, before in stubs if re.match(r"big-\d+(?:-[A-Za-z0-9]+)?$", name)]
    bad = [(name, before) for name, before in stubs if name not in before]
    return check("%s: oracle: each of the %d stubs of big files the model got comes after the whole file in its context"
                 % (tag, len(stubs)), not bad, "unbacked: %s" % bad)


def check_each_read_asked(tag, w, n):
    mcp = w.mcp()
    return check("%s: %d ctx_read calls, each asked `leanctx stub --result`" % (tag, n),
                 len(mcp) == n and all(lc(c).get("mode") == "ledger" and lc(c).get("exit") in (0, 1) for c in mcp),
                 summary(mcp) + " " + json.dumps([lc(c).get("stderr") for c in mcp]))


def check_first_delivery(tag, call):
    rec = (lc(call).get("answer") or {}).get("recorded") or {}
    return check("%s: first read: content, its delivery recorded (not-delivered)" % tag,
                 lc(call).get("exit") == 1 and reason(call) == "not-delivered" and rec.get("recorded") is True,
                 json.dumps(lc(call).get("answer"))[:600])


def ledger_reread(host, scen, path, stubbed, first, world_kw=None, want_reason=None, want_conf=None):
    """One session reads `path` twice. `stubbed`: the second read must be a stub. `first`: what the
    model must have received the first time: "whole", "preview" (Claude) or "cut" (Codex)."""
    tag = "%s/%s" % (host, scen)
    w = World("%s-%s" % (host, scen), mode="ledger", **(world_kw or {}))
    try:
        r = w.run(host, "[reads=%s,%s]" % (path, path))
        ok_run(tag, r)
        check_each_read_asked(tag, w, 2)
        mcp = w.mcp()
        if len(mcp) == 2:
            check_first_delivery(tag, mcp[0])
            if stubbed:
                check("%s: second read: leanctx says stub (confirmed-delivery)" % tag,
                      lc(mcp[1]).get("exit") == 0 and reason(mcp[1]) == "confirmed-delivery", summary(mcp))
            else:
                check("%s: second read: leanctx withholds the stub (%s, %s)" % (tag, want_reason, want_conf),
                      lc(mcp[1]).get("exit") == 1 and reason(mcp[1]) == want_reason
                      and confirmation(mcp[1]) == want_conf, summary(mcp))
        res = model_results(w, r.session_id)
        check("%s: oracle: the model received two ctx_read results" % tag, len(res) == 2, desc(res))
        if len(res) == 2:
            a, b = res
            if first == "whole":
                ok = path in a.get("whole", [])
            elif first == "preview":
                ok = not a.get("whole") and "<persisted-output>" in a.get("text", "") and a.get("chars", 0) < 5000
            elif first == "error":
                ok = not a.get("whole") and "exceeds maximum allowed tokens" in a.get("text", "")
            else:  # Codex's middle cut: start and end kept, the middle gone
                ok = (not a.get("whole") and "MARK-START" in a.get("markers", []) and "MARK-END" in a.get("markers", [])
                      and "MARK-MID-5" not in a.get("markers", []))
            check("%s: oracle: first result reached the model %s (%d of %d chars)"
                  % (tag, first, a.get("chars", 0), len(fixture_text.text_for(path))), ok, desc(res))
            if stubbed:
                check("%s: oracle: the model's second result is `[unchanged] %s`" % (tag, path), is_stub(b, path),
                      desc(res))
            else:
                again = ("exceeds maximum allowed tokens" in b.get("text", "") if first == "error"
                         else "MARK-START" in b.get("markers", []))
                check("%s: oracle: the model's second result is the content again (as the host shows it), not a stub"
                      % tag, not b.get("unchanged") and again, desc(res))
                check("%s: oracle: the model never had %s whole (a stub would have lied)" % (tag, path),
                      path not in b["_context"], desc(res))
        check_stubs_truthful(tag, w)
    finally:
        w.close()


def sc_ledger_reread(host):
    """A 10 KB file read twice in one session: the second read is a stub (on Codex 10,240 bytes is
    exactly the largest result the default budget of 2,500 tokens counts as whole)."""
    ledger_reread(host, "ledger-reread", "big-10240", stubbed=True, first="whole")


def sc_ledger_large(host):
    """A 60 KB file: Claude shows the model a 2 KB preview, Codex cuts the middle out (default
    budget): no stub on the re-read."""
    if host == "claude":
        ledger_reread(host, "ledger-large", "big-61440", stubbed=False, first="preview",
                      want_reason="unconfirmed", want_conf="different-content")
    else:
        ledger_reread(host, "ledger-large", "big-61440", stubbed=False, first="cut",
                      want_reason="unconfirmed", want_conf="cut")


def sc_ledger_declared(host):
    """The 60 KB file arrives whole when the tool declares anthropic/maxResultSizeChars 500000
    (Claude) or config.toml sets tool_output_token_limit = 50000 (Codex): then it is stubbed."""
    if host == "claude":
        ledger_reread(host, "ledger-declared", "big-61440", stubbed=True, first="whole",
                      world_kw={"max_result_chars": 500000})
    else:
        ledger_reread(host, "ledger-declared", "big-61440", stubbed=True, first="whole",
                      world_kw={"codex_config_top": "tool_output_token_limit = 50000"})


def sc_ledger_concurrent(host):
    """Two sessions at once read the same file twice each. B starts reading only after A's delivery
    was confirmed: B's first read must still be content (A's delivery is not B's), and each
    session's re-read is a stub backed by its own delivery."""
    tag = "%s/ledger-concurrent" % host
    path = "big-10240"
    w = World("%s-ledger-concurrent" % host, mode="ledger")
    try:
        ra, rb = H.run_concurrently([lambda: w.run(host, "[slow=3] [reads=%s,%s]" % (path, path)),
                                     lambda: w.run(host, "[slow=8] [reads=%s,%s]" % (path, path))])
        if isinstance(ra, BaseException) or isinstance(rb, BaseException):
            check("%s: both sessions ran" % tag, False, "%r %r" % (ra, rb))
            return
        ok_run(tag + " A", ra)
        ok_run(tag + " B", rb)
        check("%s: the runs overlapped (>2 s)" % tag, H.overlap(ra, rb) > 2.0, "%.2f" % H.overlap(ra, rb))
        check_each_read_asked(tag, w, 4)
        mcp = w.mcp()
        sids = {"A": ra.session_id, "B": rb.session_id}
        by_sess = {k: [c for c in mcp if ((lc(c).get("answer") or {}).get("caller") or {}).get("scope") == sid]
                   for k, sid in sids.items()}
        check("%s: every call resolved to its own session, two each" % tag,
              sids["A"] != sids["B"] and all(len(v) == 2 for v in by_sess.values()), summary(mcp))
        order = [c.get("ts") for c in mcp]
        a_done = by_sess["A"][1]["ts"] if len(by_sess["A"]) == 2 else None
        b_first = by_sess["B"][0]["ts"] if by_sess["B"] else None
        check("%s: B's first read came after A's confirmed re-read (A's delivery existed)" % tag,
              a_done is not None and b_first is not None and b_first > a_done, order)
        for k in ("A", "B"):
            calls = by_sess[k]
            if len(calls) != 2:
                continue
            check_first_delivery("%s %s" % (tag, k), calls[0])
            own = ((lc(calls[1]).get("answer") or {}).get("delivery") or {}).get("scope")
            check("%s %s: re-read stubbed on the session's own delivery" % (tag, k),
                  lc(calls[1]).get("exit") == 0 and reason(calls[1]) == "confirmed-delivery" and own == sids[k],
                  summary(calls) + " delivery scope %s" % own)
            res = model_results(w, sids[k])
            check("%s %s: oracle: the model got the file whole, then `[unchanged]`" % (tag, k),
                  len(res) == 2 and path in res[0].get("whole", []) and is_stub(res[1], path), desc(res))
        check_stubs_truthful(tag, w)
    finally:
        w.close()


def sc_ledger_compact(host):
    """Claude: read; resume and read again (stub: the result is in the resumed history); /compact;
    read again: withheld (compacted), the model gets the content.
    Codex: the same with auto-compaction (in a turn of its own), and with the compaction hooks REMOVED from the hooks
    config (PreCompact, PostCompact, and SessionStart, whose source=compact also records one): the
    journal never hears of the compaction; `_meta.windowId` alone withholds the stub."""
    tag = "%s/ledger-compact" % host
    path = "big-10240"
    drop = {"codex": ["PreCompact", "PostCompact", "SessionStart"]} if host == "codex" else None
    w = World("%s-ledger-compact" % host, mode="ledger", drop_hooks=drop)
    try:
        r1 = w.run(host, "read %s via ctx_read" % path)
        ok_run(tag + " first", r1)
        sid = r1.session_id
        resume = {"resume": sid} if host == "claude" else {"resume_last": True}
        r2 = w.run(host, "read %s via ctx_read again" % path, **resume)
        ok_run(tag + " resume", r2)
        mcp = w.mcp()
        check("%s: after a plain resume the re-read is stubbed (confirmed-delivery)" % tag,
              len(mcp) == 2 and lc(mcp[0]).get("exit") == 1 and lc(mcp[1]).get("exit") == 0
              and reason(mcp[1]) == "confirmed-delivery", summary(mcp))
        if host == "claude":
            r3 = w.run(host, "/compact", resume=sid)
            ok_run(tag + " /compact", r3)
            r4 = w.run(host, "read %s via ctx_read once more" % path, resume=sid)
        else:
            # A turn with no read, compacted before it starts (the mock reports 62 tokens used).
            # A read in the compacting turn itself would compact again after each 10 KB result.
            r3 = w.run(host, "say ok", resume_last=True, config=["model_auto_compact_token_limit=60"])
            ok_run(tag + " compacting turn", r3)
            r4 = w.run(host, "read %s via ctx_read once more" % path, resume_last=True)
        ok_run(tag + " after compaction", r4)
        compactions = [q for q in w.sb.mock_requests() if q.get("kind") == "compact"]
        check("%s: the host compacted (the model was asked for a summary)" % tag, len(compactions) >= 1,
              len(compactions))
        mcp = w.mcp()
        last = mcp[-1] if mcp else {}
        if host == "claude":
            check("%s: compaction journaled" % tag, len(records(w, "P", sid)) >= 1, records(w, "P"))
            check("%s: after the compaction leanctx withholds the stub (compacted)" % tag,
                  len(mcp) == 3 and lc(last).get("exit") == 1 and reason(last) == "compacted", summary(mcp))
        else:
            hooks = json.load(open(w.hooks_file("codex"))).get("hooks", {})
            check("%s: no compaction hook is configured" % tag,
                  not any(e in hooks for e in drop["codex"]) and "PostToolUse" in hooks, sorted(hooks))
            check("%s: no compaction record in the journal" % tag, records(w, "P") == [], records(w, "P"))
            wins = [(c.get("_meta") or {}).get("windowId") for c in mcp]
            check("%s: windowId: same window across the resume, the next one after the compaction" % tag,
                  len(wins) == 3 and wins[0] == wins[1] == "%s:0" % sid and wins[2] == "%s:1" % sid, wins)
            check("%s: after the compaction leanctx withholds the stub by windowId alone (window-changed)" % tag,
                  len(mcp) == 3 and lc(last).get("exit") == 1 and reason(last) == "window-changed", summary(mcp))
        res = model_results(w)
        check("%s: oracle: the model got whole, `[unchanged]`, whole" % tag,
              len(res) == 3 and path in res[0].get("whole", []) and is_stub(res[1], path)
              and path in res[2].get("whole", []), desc(res))
        check("%s: oracle: the compaction took the file out of the model's context" % tag,
              context_lost(w, path), json.dumps([q.get("context_whole") for q in main_requests(w)]))
        check_stubs_truthful(tag, w)
    finally:
        w.close()


def sc_ledger_subagent(host):
    """A subagent reads the file twice (its re-read is a stub: its own confirmed delivery); then the
    parent reads it: the subagent's delivery is not the parent's (the parent only got the
    subagent's final text), so the parent gets the content."""
    tag = "%s/ledger-subagent" % host
    path = "big-10240"
    w = World("%s-ledger-subagent" % host, mode="ledger")
    try:
        r1 = w.run(host, "[subagent] [reads=%s,%s]" % (path, path))
        ok_run(tag + " subagent", r1)
        sid = r1.session_id
        resume = {"resume": sid} if host == "claude" else {"resume_last": True}
        r2 = w.run(host, "read %s via ctx_read" % path, **resume)
        ok_run(tag + " parent", r2)
        mcp = w.mcp()
        callers = [((lc(c).get("answer") or {}).get("caller") or {}).get("scope") for c in mcp]
        check("%s: the subagent's reads resolved to agent:<id>, the parent's to the session" % tag,
              len(mcp) == 3 and (callers[0] or "").startswith("agent:") and callers[1] == callers[0]
              and callers[2] == sid, callers)
        if len(mcp) == 3:
            check_first_delivery(tag + " subagent", mcp[0])
            check("%s: the subagent's re-read is stubbed (confirmed-delivery)" % tag,
                  lc(mcp[1]).get("exit") == 0 and reason(mcp[1]) == "confirmed-delivery", summary(mcp))
            check("%s: the parent's read is not stubbed on the subagent's delivery (not-delivered)" % tag,
                  lc(mcp[2]).get("exit") == 1 and reason(mcp[2]) == "not-delivered", summary(mcp))
        res = model_results(w)
        check("%s: oracle: the subagent's model got the file whole, then `[unchanged]`" % tag,
              len(res) == 3 and path in res[0].get("whole", []) and is_stub(res[1], path), desc(res))
        later = [q for q in main_requests(w) if q.get("t_start", 0) >= r2.t_start]
        res = [t for q in later for t in q.get("tool_results", []) if t.get("tool") in CTX_TOOLS]
        check("%s: oracle: the parent's context did not hold the file before its read" % tag,
              later and path not in (later[0].get("context_whole") or []),
              json.dumps([q.get("context_whole") for q in later]))
        check("%s: oracle: the parent's model got the file whole" % tag,
              len(res) == 1 and path in res[0].get("whole", []), desc(res))
        check_stubs_truthful(tag, w)
    finally:
        w.close()


def sc_ledger_version(host):
    """A file is read, then changed, then read again in the same session (resumed): the new
    version is delivered (version-changed), and the read after that is a stub of the new one."""
    tag = "%s/ledger-version" % host
    path = "notes.txt"
    v1, v2 = fixture_text.big_text("notes-v1", 3000), fixture_text.big_text("notes-v2", 3000)
    w = World("%s-ledger-version" % host, mode="ledger", serve_files=True)
    try:
        with open(os.path.join(w.sb.project, path), "w") as f:
            f.write(v1)
        r1 = w.run(host, "read %s via ctx_read" % path)
        ok_run(tag + " v1", r1)
        sid = r1.session_id
        resume = {"resume": sid} if host == "claude" else {"resume_last": True}
        with open(os.path.join(w.sb.project, path), "w") as f:
            f.write(v2)
        r2 = w.run(host, "read %s via ctx_read again" % path, **resume)
        ok_run(tag + " v2", r2)
        r3 = w.run(host, "read %s via ctx_read once more" % path, **resume)
        ok_run(tag + " v2 again", r3)
        mcp = w.mcp()
        check("%s: leanctx: not-delivered, then version-changed, then confirmed-delivery" % tag,
              [(lc(c).get("exit"), reason(c)) for c in mcp]
              == [(1, "not-delivered"), (1, "version-changed"), (0, "confirmed-delivery")], summary(mcp))
        res = model_results(w)
        check("%s: oracle: the model got v1 whole, v2 whole, then `[unchanged] %s`" % (tag, path),
              len(res) == 3 and "notes-v1" in res[0].get("whole", []) and "notes-v2" in res[1].get("whole", [])
              and is_stub(res[2], path), desc(res))
        check("%s: oracle: the stub came with v2 whole in the model's context" % tag,
              len(res) == 3 and "notes-v2" in res[2]["_context"], desc(res))
    finally:
        w.close()


def sc_ledger_huge(host):
    """Claude: a 150 KB result is over the token limit; the model gets only an error string
    ("exceeds maximum allowed tokens"), so the re-read is not stubbed."""
    ledger_reread(host, "ledger-huge", "big-153600", stubbed=False, first="error",
                  want_reason="unconfirmed", want_conf="different-content")


def sc_ledger_midturn(host):
    """Codex: a compaction right after a call swallows its result (it goes only into the
    compaction request; DELIVERY.md §3) although PostToolUse acknowledged it whole. The model
    then asks again: the re-read must not be a stub, and it is not, by windowId."""
    tag = "%s/ledger-midturn" % host
    path = "big-400"
    w = World("%s-ledger-midturn" % host, mode="ledger")
    try:
        # ~100 tokens of result on top of the 62 the mock reports: over 140, so Codex compacts
        # right after the read; after it the mock reports 17, and 17 + 100 stays under.
        r = w.run(host, "read %s via ctx_read" % path, config=["model_auto_compact_token_limit=140"])
        ok_run(tag, r)
        sid = r.session_id
        mcp = w.mcp()
        wins = [(c.get("_meta") or {}).get("windowId") for c in mcp]
        check("%s: read, compaction, read again: windowId :0 then :1" % tag,
              wins == ["%s:0" % sid, "%s:1" % sid], wins)
        if len(mcp) == 2:
            check_first_delivery(tag, mcp[0])
            check("%s: the swallowed delivery was acknowledged whole, and still backs no stub (window-changed)"
                  % tag, lc(mcp[1]).get("exit") == 1 and reason(mcp[1]) == "window-changed"
                  and confirmation(mcp[1]) == "whole", summary(mcp))
        qs = w.sb.mock_requests()
        kinds = [q.get("kind") for q in qs]
        ci = kinds.index("compact") if "compact" in kinds else -1
        check("%s: oracle: the first result went into the compaction request only" % tag,
              ci > 0 and path in (qs[ci].get("context_whole") or [])
              and ci + 1 < len(qs) and path not in (qs[ci + 1].get("context_whole") or []),
              json.dumps([(q.get("kind"), q.get("context_whole")) for q in qs]))
        res = model_results(w)
        check("%s: oracle: the model's only ctx_read result is the re-read, whole" % tag,
              len(res) == 1 and path in res[0].get("whole", []), desc(res))
        check_stubs_truthful(tag, w)
    finally:
        w.close()


def sc_ledger_interrupt(host):
    """The user interrupts (SIGINT) while the MCP server is still working: the delivery was
    recorded, but the model never got the result and no hook acknowledged it. After a resume the
    re-read is content (unconfirmed, no acknowledgement); the read after that is a stub."""
    tag = "%s/ledger-interrupt" % host
    path = "E2E-SLOW-3/big-10240"  # the server answers after 3 s
    name = "big-10240"
    w = World("%s-ledger-interrupt" % host, mode="ledger")
    try:
        fn = H.run_claude if host == "claude" else H.run_codex
        r1 = fn(w.sb, "read %s via ctx_read" % path, interrupt_when=lambda: len(w.sb.mcp_calls()) >= 1)
        check("%s: the host was interrupted while the server worked, and ended" % tag,
              r1.interrupted_at is not None and not r1.timed_out and r1.t_end - r1.interrupted_at < 10,
              "%r interrupted_at=%s" % (r1, r1.interrupted_at))
        sid = r1.session_id
        resume = {"resume": sid} if host == "claude" else {"resume_last": True}
        r2 = w.run(host, "read %s via ctx_read again" % path, **resume)
        ok_run(tag + " resume", r2)
        r3 = w.run(host, "read %s via ctx_read once more" % path, **resume)
        ok_run(tag + " resume again", r3)
        mcp = w.mcp()
        if len(mcp) >= 1:
            check_first_delivery(tag, mcp[0])
        # Claude Code: the resume is a new host process, a window of its own, and the
        # unacknowledged delivery was the old process's: `window-changed` comes first
        # (docs/DELIVERY.md §8). Either way it withholds, with no confirmation.
        got = [(lc(c).get("exit"), reason(c), confirmation(c)) for c in mcp]
        middle = {(1, "unconfirmed", "none")} | ({(1, "window-changed", "none")} if host == "claude" else set())
        check("%s: leanctx: the unacknowledged delivery backs no stub (unconfirmed, none); the next one does"
              % tag, len(got) == 3 and got[0] == (1, "not-delivered", None) and got[1] in middle
              and got[2] == (0, "confirmed-delivery", "whole"),
              summary(mcp))
        res = model_results(w)
        first = [q for q in main_requests(w) if q.get("t_start", 0) >= r2.t_start]
        check("%s: oracle: the interrupted result never reached the model" % tag,
              len(res) == 2 and first and name not in (first[0].get("context_whole") or []),
              json.dumps([q.get("context_whole") for q in main_requests(w)]) + desc(res))
        check("%s: oracle: the model got the re-read whole, then `[unchanged]`" % tag,
              len(res) == 2 and name in res[0].get("whole", []) and is_stub(res[1], path), desc(res))
        check_stubs_truthful(tag, w)
    finally:
        w.close()


def sc_ledger_budget_elsewhere(host):
    """Codex: the output budget lowered outside $CODEX_HOME/config.toml: on the command line (`-c`,
    `--config=`, in hex, under `profiles.<p>` with `--profile p`), in the project's
    .codex/config.toml (also at the repository root when Codex runs in a subdirectory), in a
    profile file `$CODEX_HOME/<name>.config.toml` chosen with `--profile` (Codex 0.169 refuses the
    legacy [profiles.x] table with --profile). With 1,000 tokens the model gets 4.8 KB of a 10 KB
    file: a re-read must not be a stub."""
    path = "big-10240"
    cases = [
        ("-c", {"config": ["tool_output_token_limit=1000"]}, None),
        ("project .codex/config.toml", {}, "project"),
        ("--profile small", {"extra_args": ["--profile", "small"]}, "profile"),
        # issue 22: spellings leanctx missed.
        ("-c hex", {"config": ["tool_output_token_limit=0x3e8"]}, None),
        ("--config=", {"extra_args": ["--config=tool_output_token_limit=1000"]}, None),
        ("-c profiles.small.tool_output_token_limit --profile small",
         {"config": ["profiles.small.tool_output_token_limit=1000"], "extra_args": ["--profile", "small"]},
         "empty-profile"),
        ("repository root .codex/config.toml, Codex run in a subdirectory", {}, "repo-root"),
    ]
    for label, run_kw, where in cases:
        tag = "%s/ledger-budget-elsewhere (%s)" % (host, label)
        w = World("%s-ledger-budget" % host, mode="ledger")
        try:
            if where == "project":
                os.makedirs(os.path.join(w.sb.project, ".codex"), exist_ok=True)
                with open(os.path.join(w.sb.project, ".codex", "config.toml"), "w") as f:
                    f.write("tool_output_token_limit = 1000\n")
            elif where == "profile":
                with open(os.path.join(w.sb.codex_home, "small.config.toml"), "w") as f:
                    f.write("tool_output_token_limit = 1000\n")
            elif where == "empty-profile":
                with open(os.path.join(w.sb.codex_home, "small.config.toml"), "w") as f:
                    f.write("# the budget comes from -c\n")
            elif where == "repo-root":
                # Codex reads .codex/config.toml from the project root (the nearest .git above)
                # down to its cwd; the hooks' cwd is the subdirectory. A real repository: Codex
                # trusts the subdirectory through its git root (an empty .git is not enough).
                subprocess.run(["git", "init", "-q", w.sb.project], check=True, capture_output=True)
                os.makedirs(os.path.join(w.sb.project, ".codex"), exist_ok=True)
                with open(os.path.join(w.sb.project, ".codex", "config.toml"), "w") as f:
                    f.write("tool_output_token_limit = 0x3e8\n")
                sub = os.path.join(w.sb.project, "src", "deep")
                os.makedirs(sub, exist_ok=True)
                run_kw = dict(run_kw, cwd=sub)
            r = H.run_codex(w.sb, "[reads=%s,%s]" % (path, path), **run_kw)
            ok_run(tag, r)
            res = model_results(w)
            mcp = w.mcp()
            if where == "empty-profile":
                # Measured: with --profile layering small.config.toml, Codex 0.169 does not apply a
                # `-c profiles.small.…` override; leanctx counts it anyway (a hook cannot tell).
                check("%s: oracle: Codex did not apply it (the model got the file whole); leanctx "
                      "still withholds, the conservative side" % tag,
                      len(res) == 2 and path in res[0].get("whole", []), desc(res))
            else:
                check("%s: oracle: the budget applied: the model got a cut copy the first time" % tag,
                      len(res) == 2 and not res[0].get("whole") and "MARK-END" in res[0].get("markers", []),
                      desc(res))
            check("%s: the re-read is not a stub (leanctx takes the smallest budget set anywhere Codex reads one)"
                  % tag, len(res) == 2 and not res[1].get("unchanged") and len(mcp) == 2
                  and lc(mcp[1]).get("exit") == 1, summary(mcp) + " " + desc(res))
        finally:
            w.close()


def sc_ledger_structured(host):
    """A result with both `content` (the file) and `structuredContent`: Codex and Claude Code give
    the model only the serialised structuredContent (docs/DELIVERY.md §7), so the file was never
    delivered and the re-read must not be a stub. A result whose content is that same JSON reached
    the model: its re-read is a stub."""
    # The echo's content is the JSON, not a file: no big-<N> name, which the oracle would take for one.
    for path, stubbed in (("structured/big-3000", False), ("structured-echo/notes", True)):
        tag = "%s/ledger-structured (%s)" % (host, path)
        w = World("%s-ledger-structured" % host, mode="ledger")
        try:
            r = w.run(host, "[reads=%s,%s]" % (path, path))
            ok_run(tag, r)
            check_each_read_asked(tag, w, 2)
            mcp = w.mcp()
            if len(mcp) == 2:
                check_first_delivery(tag, mcp[0])
                if stubbed:
                    check("%s: second read: leanctx says stub (confirmed-delivery)" % tag,
                          lc(mcp[1]).get("exit") == 0 and reason(mcp[1]) == "confirmed-delivery", summary(mcp))
                else:
                    check("%s: second read: leanctx withholds (unconfirmed, different-content)" % tag,
                          lc(mcp[1]).get("exit") == 1 and reason(mcp[1]) == "unconfirmed"
                          and confirmation(mcp[1]) == "different-content", summary(mcp))
            res = model_results(w, r.session_id)
            texts = [t.get("text", "") for t in res]
            check("%s: oracle: the model's first result is the structured content only" % tag,
                  len(res) == 2 and '{"path":"%s","bytes":' % path in texts[0].replace(" ", "")
                  and "MARK-START" not in texts[0] and "fixture content" not in texts[0],
                  desc(res))
            if stubbed:
                check("%s: oracle: the model's second result is `[unchanged] %s`" % (tag, path),
                      len(res) == 2 and "[unchanged] %s" % path in texts[1], desc(res))
            else:
                check("%s: oracle: the second result is not a stub, and the model never had the file" % tag,
                      len(res) == 2 and not res[1].get("unchanged") and "[unchanged]" not in texts[1]
                      and not any("MARK-START" in t for t in texts), desc(res))
            check_stubs_truthful(tag, w)
        finally:
            w.close()


def sc_ledger_parallel(host):
    """Parallel tool calls: one model response asks for big-10240 twice and big-2048 once. Claude:
    one tool batch, whose PostToolBatch acknowledges all three at the end, so none is a stub.
    Codex runs them one after the other, each acknowledged by its PostToolUse before the next:
    the repeated read may be a stub, which reaches the model right after the whole copy. After a
    resume both files are stubs."""
    tag = "%s/ledger-parallel" % host
    a, b = "big-10240", "big-2048"
    w = World("%s-ledger-parallel" % host, mode="ledger")
    try:
        r1 = w.run(host, "[parallel=%s,%s,%s]" % (a, a, b))
        ok_run(tag, r1)
        sid = r1.session_id
        resume = {"resume": sid} if host == "claude" else {"resume_last": True}
        r2 = w.run(host, "[reads=%s,%s]" % (a, b), **resume)
        ok_run(tag + " resume", r2)
        check_each_read_asked(tag, w, 5)
        mcp = w.mcp()
        if host == "claude":
            # PostToolBatch comes after the whole batch: nothing is acknowledged in between.
            check("%s: the parallel reads are all content, their deliveries recorded" % tag,
                  len(mcp) == 5 and all(lc(c).get("exit") == 1 and (((lc(c).get("answer") or {}).get("recorded")
                                                                   or {}).get("recorded")) for c in mcp[:3]),
                  summary(mcp))
        else:
            # Codex runs the calls one after the other, each PostToolUse acknowledging before the
            # next: the repeated read may be a stub, coming right after the whole copy.
            check("%s: parallel reads: content, content or stub of the same file, content" % tag,
                  len(mcp) == 5 and [lc(c).get("exit") for c in (mcp[0], mcp[2])] == [1, 1]
                  and (lc(mcp[1]).get("exit") == 1 or reason(mcp[1]) == "confirmed-delivery"), summary(mcp))
        check("%s: after the resume both files are stubs (confirmed-delivery)" % tag,
              len(mcp) == 5 and all(lc(c).get("exit") == 0 and reason(c) == "confirmed-delivery" for c in mcp[3:]),
              summary(mcp))
        res = model_results(w)
        first = [q for q in main_requests(w) if any(t.get("tool") in CTX_TOOLS for t in q.get("tool_results", []))]
        got = first[0].get("tool_results", []) if first else []
        check("%s: oracle: the three parallel results reached the model in one request: whole, whole or a "
              "stub right after it, whole" % tag,
              len(got) == 3 and got[0].get("whole") == [a] and got[2].get("whole") == [b]
              and (got[1].get("whole") == [a] or (host == "codex" and is_stub(got[1], a))), desc(got))
        check("%s: oracle: then `[unchanged]` for both" % tag,
              len(res) == 5 and is_stub(res[3], a) and is_stub(res[4], b), desc(res))
        check_stubs_truthful(tag, w)
    finally:
        w.close()


def sc_ledger_autocompact(host):
    """Claude auto-compaction: the mock reports 995,000 input tokens with the first turn's answer
    ([usage=...]), so Claude Code compacts on its own before the next turn; that turn's read is
    withheld (compacted) and the model gets the content."""
    tag = "%s/ledger-autocompact" % host
    path = "big-10240"
    w = World("%s-ledger-autocompact" % host, mode="ledger")
    try:
        r1 = w.run(host, "[usage=995000] read %s via ctx_read" % path)
        ok_run(tag + " first", r1)
        r2 = w.run(host, "read %s via ctx_read again" % path, resume=r1.session_id)
        ok_run(tag + " next turn", r2)
        qs = w.sb.mock_requests()
        check("%s: Claude compacted on its own before the next turn" % tag,
              [q.get("kind") for q in qs if q.get("t_start", 0) >= r2.t_start][:1] == ["compact"],
              [(q.get("kind"), (q.get("prompt") or "")[:30]) for q in qs])
        check("%s: compaction journaled" % tag, len(records(w, "P", r1.session_id)) >= 1, records(w, "P"))
        mcp = w.mcp()
        check("%s: leanctx: content, then withheld (compacted)" % tag,
              [(lc(c).get("exit"), reason(c)) for c in mcp] == [(1, "not-delivered"), (1, "compacted")], summary(mcp))
        res = model_results(w)
        check("%s: oracle: the model got the file whole both times, and the compaction had taken it out of "
              "its context" % tag, len(res) == 2 and all(path in t.get("whole", []) for t in res)
              and path not in (res[1].get("whole_before") or []) and context_lost(w, path), desc(res))
        check_stubs_truthful(tag, w)
    finally:
        w.close()


def context_lost(w, path):
    """Between the last two ctx_read results, some main request had no whole copy of `path` in its
    context (the compaction's summary replaced the history)."""
    qs = main_requests(w)
    idx = [i for i, q in enumerate(qs) if any(t.get("tool") in CTX_TOOLS for t in q.get("tool_results", []))]
    if len(idx) < 2:
        return False
    return any(path not in (q.get("context_whole") or []) for q in qs[idx[-2] + 1:idx[-1] + 1])


def host_cli(w, host, args):
    """The real host's own CLI (`claude mcp …`, `codex mcp …`) in the sandbox's environment."""
    exe = H.claude_bin() if host == "claude" else H.codex_bin()
    return subprocess.run([exe] + args, env=w.sb.env(host), capture_output=True, text=True, timeout=60,
                          cwd=w.sb.project)


def sc_server_registered(host):
    """`leanctx hooks install` registers `leanctx serve` where the real host reads its user MCP
    servers, `claude mcp get` / `codex mcp list` show it, and `hooks uninstall` takes it out again.
    When this binary has `serve`, Claude Code must also connect to it."""
    name = "%s/server-registered" % host
    w = World("server-%s" % host, server=True, codex_config_first=True)
    hc = HOST_NAME[host]
    has_serve = w.leanctx(["serve", "--help"]).returncode == 0
    if not has_serve:  # not in this binary yet: the installer must be told to register it
        out = w.leanctx(["hooks", "install", hc, "--server"])
        check("%s: hooks install --server" % name, out.returncode == 0, out.stdout + out.stderr)
    if host == "claude":
        got = host_cli(w, host, ["mcp", "get", "leanctx"])
        text = got.stdout + got.stderr
        check("%s: claude mcp get leanctx finds it in the user config" % name,
              got.returncode == 0 and "Scope: User config" in text and "Command: %s" % LEANCTX in text
              and "Args: serve" in text, text)
        if has_serve:
            check("%s: Claude Code connects to leanctx serve" % name, "Connected" in text, text)
        # Claude rewrites ~/.claude.json at start-up: the registration survives it.
        listed = host_cli(w, host, ["mcp", "list"])
        check("%s: claude mcp list lists it" % name, "leanctx: %s serve" % LEANCTX in listed.stdout,
              listed.stdout + listed.stderr)
    else:
        w.sb._write_codex_config()  # the harness's rewrite (before each codex run) keeps it
        got = host_cli(w, host, ["mcp", "list", "--json"])
        try:
            servers = {s["name"]: s for s in json.loads(got.stdout)}
        except ValueError:
            servers = {}
        t = servers.get("leanctx", {}).get("transport", {})
        check("%s: codex mcp list shows it, enabled, with the data-dir variables passed on" % name,
              t.get("command") == LEANCTX and t.get("args") == ["serve"]
              and "LEAN_CTX_DATA_DIR" in (t.get("env_vars") or []) and servers["leanctx"].get("enabled"),
              got.stdout + got.stderr)
        check("%s: the harness's own ctx server is still there" % name, "ctx" in servers, sorted(servers))
    st = json.loads(w.leanctx(["hooks", "status", hc, "--json"]).stdout)
    check("%s: hooks status says registered" % name, st["hosts"][0]["server"]["state"] == "installed", st)
    out = w.leanctx(["hooks", "uninstall", hc])
    check("%s: hooks uninstall" % name, out.returncode == 0, out.stdout + out.stderr)
    if host == "claude":
        got = host_cli(w, host, ["mcp", "get", "leanctx"])
        check("%s: after uninstall claude mcp get leanctx finds nothing" % name, got.returncode != 0,
              got.stdout + got.stderr)
    else:
        got = host_cli(w, host, ["mcp", "list", "--json"])
        names = [s["name"] for s in json.loads(got.stdout or "[]")]
        check("%s: after uninstall codex mcp list has no leanctx, still ctx" % name,
              "leanctx" not in names and "ctx" in names, names)


def run_claude_stream(w, steps, timeout=120, env=None):
    """Claude Code driven over `--input-format stream-json`, one message at a time, as an SDK host
    does (live.ClaudeStream): each step is ("user", uuid, prompt) (waits for the turn's result),
    ("rewind", uuid) (the control request `rewind_conversation` to that user message; waits for its
    answer) or ("call", fn) (runs fn() between turns, e.g. an edit outside the host, or moving the
    host's clock). One host process, so one MCP server process, serves the whole session. `timeout`
    bounds each step; `env`: extra variables for the host. Returns (exit code, the stdout lines as
    JSON, the session id)."""
    c = live.ClaudeStream(w.sb, timeout=timeout, env=env)
    rc = None
    try:
        for step in steps:
            if step[0] == "call":
                step[1]()
            elif step[0] == "user":
                c.user(step[1], step[2])
            else:
                c.rewind(step[1])
        rc = c.close(wait=timeout)
    finally:
        c.close()
    return rc, c.lines, c.session_id


def sc_ledger_rewind(host):
    """Claude Code's rewind (the SDK's `rewind_conversation`, as `/rewind` and Esc-Esc do) takes
    results out of the model's context with no hook; the transcript records it. Turn 1 reads A; turn
    2 re-reads it (a stub: nothing was withdrawn) and is rewound, which leaves turn 1's copy in the
    context: turn 3's re-read is a stub again. Turn 4 reads B and is rewound: turn 5's read of B is
    withheld (`withdrawn`) and the model, which no longer had it, gets the content."""
    tag = "%s/ledger-rewind" % host
    a, b = "big-10240", "big-2048"
    w = World("%s-ledger-rewind" % host, mode="ledger")
    try:
        u = [str(uuid.uuid4()) for _ in range(5)]
        rc, lines, sid = run_claude_stream(w, [
            ("user", u[0], "read %s via ctx_read" % a),
            ("user", u[1], "read %s via ctx_read again" % a),
            ("rewind", u[1]),
            ("user", u[2], "read %s via ctx_read once more" % a),
            ("user", u[3], "read %s via ctx_read" % b),
            ("rewind", u[3]),
            ("user", u[4], "read %s via ctx_read again" % b)])
        rewound = [m for m in lines if m.get("type") == "control_response"]
        check("%s: the host rewound twice" % tag,
              len(rewound) == 2 and all('"rewound": true' in json.dumps(m) for m in rewound),
              json.dumps(rewound)[:600])
        mcp = w.mcp()
        check("%s: leanctx: A content, stub, stub after a rewind that kept it; B content, withheld after the "
              "rewind that took it (withdrawn)" % tag,
              [(lc(c).get("exit"), reason(c)) for c in mcp]
              == [(1, "not-delivered"), (0, "confirmed-delivery"), (0, "confirmed-delivery"), (1, "not-delivered"),
                  (1, "withdrawn")], summary(mcp))
        res = model_results(w)
        check("%s: oracle: the model got A, `[unchanged]` twice, B, then B again" % tag,
              len(res) == 5 and a in res[0].get("whole", []) and is_stub(res[1], a) and is_stub(res[2], a)
              and b in res[3].get("whole", []) and b in res[4].get("whole", []), desc(res))
        check_stubs_truthful(tag, w)
    finally:
        w.close()

BOTH = ("claude", "codex")
SCENARIOS = [("server-registered", sc_server_registered, BOTH), ("baseline", sc_baseline, BOTH), ("gate", sc_gate, BOTH), ("concurrent", sc_concurrent, BOTH),
             ("subagent", sc_subagent, BOTH), ("compact", sc_compact, BOTH),
             ("ledger-reread", sc_ledger_reread, BOTH), ("ledger-large", sc_ledger_large, BOTH),
             ("ledger-huge", sc_ledger_huge, ("claude",)),
             ("ledger-declared", sc_ledger_declared, BOTH), ("ledger-concurrent", sc_ledger_concurrent, BOTH),
             ("ledger-compact", sc_ledger_compact, BOTH), ("ledger-midturn", sc_ledger_midturn, ("codex",)),
             ("ledger-autocompact", sc_ledger_autocompact, ("claude",)),
             ("ledger-subagent", sc_ledger_subagent, BOTH), ("ledger-version", sc_ledger_version, BOTH),
             ("ledger-interrupt", sc_ledger_interrupt, BOTH), ("ledger-parallel", sc_ledger_parallel, BOTH),
             ("ledger-budget-elsewhere", sc_ledger_budget_elsewhere, ("codex",)),
             ("ledger-structured", sc_ledger_structured, BOTH), ("ledger-rewind", sc_ledger_rewind, ("claude",)),
             ("serve", lambda host: sc_serve.scenario(sys.modules[__name__], host), BOTH),
             ("workload", lambda host: sc_workload.sc_workload(host, check, LEANCTX, KEEP), BOTH)]
SCENARIOS += sc_idle.scenarios(sys.modules[__name__])
SCENARIOS += sc_subcompact.scenarios(sys.modules[__name__])


def main():
    global VERBOSE, KEEP, LEANCTX
    ap = argparse.ArgumentParser()
    ap.add_argument("--leanctx", required=True)
    ap.add_argument("--host", default="both", choices=["claude", "codex", "both"])
    ap.add_argument("--only", default="")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("-v", action="store_true")
    a = ap.parse_args()
    VERBOSE, KEEP, LEANCTX = a.v, a.keep, os.path.abspath(a.leanctx)
    H.isolate_network()
    for b in (H.claude_bin(), H.codex_bin()):
        if not os.path.exists(b):
            print("SKIP: host binary %s missing: run tests/e2e/setup-hosts.sh" % b, flush=True)
            sys.exit(3)
    hosts = ["claude", "codex"] if a.host == "both" else [a.host]
    only = set(filter(None, a.only.split(",")))
    unknown = only - {name for name, _, _ in SCENARIOS}
    if unknown:
        ap.error("unknown scenario(s) in --only: %s" % ", ".join(sorted(unknown)))
    for host in hosts:
        for name, fn, on in SCENARIOS:
            if (only and name not in only) or host not in on:
                continue
            try:
                fn(host)
            except Exception:
                check("%s/%s: scenario crashed" % (host, name), False, traceback.format_exc())
    passed = sum(1 for _, ok in RESULTS if ok)
    failed = len(RESULTS) - passed
    print("%d passed, %d failed" % (passed, failed), flush=True)
    sys.exit(1 if failed else 0)


KEEP = False

if __name__ == "__main__":
    main()
