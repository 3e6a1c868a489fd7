#!/usr/bin/env python3
"""End-to-end: real Claude Code and Codex, offline, with leanctx's hooks installed by
`leanctx hooks install` and an MCP server that asks leanctx before serving a stub.

    python3 tests/e2e/leanctx_e2e.py --leanctx target/debug/leanctx [--host claude|codex|both]
                                     [--only baseline,gate,...] [--keep] [-v]

Everything the assertions look at is leanctx's own state (the slot, the journal, `status --json`)
and the MCP server's log (what leanctx answered for each tools/call, what the model was served).
Prints one PASS/FAIL line per check and a closing "N passed, M failed" line; exits 1 on failure.
Runs in a loopback-only network namespace when possible (see harness.isolate_network).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as H  # noqa: E402

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


class World:
    """A harness sandbox whose hooks are leanctx's, installed by `leanctx hooks install`."""

    def __init__(self, name):
        root = tempfile.mkdtemp(prefix="leanctx-e2e-%s-" % name, dir=os.environ.get("E2E_SANDBOX_BASE"))
        self.cache = os.path.join(root, "mcp-cache.json")
        mcp_argv = [H.PYTHON, H.MCP_SERVER, "--log", os.path.join(root, "logs", "mcp.jsonl"),
                    "--leanctx", LEANCTX, "--cache", self.cache]
        self.sb = H.Sandbox(hooks=None, root=root, name=name, keep=KEEP, mcp_argv=mcp_argv)
        # Data dir as leanctx resolves it from the sandbox HOME (XDG_DATA_HOME for the hooks,
        # $HOME/.local/share for Codex's MCP server, whose env Codex filters: the same dir).
        self.data = os.path.join(self.sb.home, ".local", "share", "lean-ctx")
        for host in ("claude-code", "codex"):
            out = self.leanctx(["hooks", "install", host])
            check("%s: leanctx hooks install %s" % (name, host), out.returncode == 0,
                  out.stdout + out.stderr)

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


SCENARIOS = [("baseline", sc_baseline), ("gate", sc_gate), ("concurrent", sc_concurrent),
             ("subagent", sc_subagent), ("compact", sc_compact)]


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
    for host in hosts:
        for name, fn in SCENARIOS:
            if only and name not in only:
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
