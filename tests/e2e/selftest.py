#!/usr/bin/env python3
"""Self-test of the e2e harness: real Claude Code and Codex, offline, with the logging hook.

    bash tests/e2e/setup-hosts.sh && python3 tests/e2e/selftest.py [--host claude|codex|both]
                                                                    [--only baseline,subagent,...]
                                                                    [--keep] [-v]

Scenarios per host: baseline, subagent, compact, concurrent, gate (PreToolUse deny).
Prints one PASS/FAIL line per check and a closing "N passed, M failed" line; exits 1 on any
failure. Everything runs in a loopback-only network namespace when possible (root + unshare).
"""
import argparse
import json
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as H  # noqa: E402

DENY_REASON = "E2E-DENY-REASON"
DENY_JSON = json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                               "permissionDecisionReason": DENY_REASON}})
MCP_HOOK_NAME = "mcp__ctx__ctx_read"
FIXTURE = "fixture content of README.md"

RESULTS = []
VERBOSE = False
REAL_HOME = os.environ.get("HOME", "")


def check(name, ok, detail=""):
    RESULTS.append((name, bool(ok)))
    line = "%s %s" % ("PASS" if ok else "FAIL", name)
    if detail and (not ok or VERBOSE):
        line += "  -- " + detail
    print(line, flush=True)
    return bool(ok)


def events(sb, since=0):
    return sb.hook_events()[since:]


def names(evs):
    return [e.get("hook_event_name") for e in evs]


def tool_events(evs, event, tool=MCP_HOOK_NAME):
    return [e for e in evs if e.get("hook_event_name") == event and e.get("tool_name") == tool]


def env_hook():
    """SessionStart hook that records the HOME its process sees."""
    return {"SessionStart": [{"hooks": [{"type": "command", "timeout": 10, "command":
                                         'cat >/dev/null; printf "%s\\n" "$HOME" >> "$E2E_SANDBOX/logs/hook-home.txt"'}]}]}


def hooks_for(extra=None):
    def f(host, sb):
        return H.merge_hooks(H.logging_hooks(host), env_hook(), extra or {})
    return f


def hook_homes(sb):
    try:
        with open(os.path.join(sb.logs, "hook-home.txt")) as fh:
            return [l.strip() for l in fh if l.strip()]
    except OSError:
        return []


def describe_run(r):
    return "%r stderr tail: %s" % (r, r.stderr[-600:].replace("\n", " | "))


def run(sb, host, prompt, **kw):
    fn = H.run_claude if host == "claude" else H.run_codex
    r = fn(sb, prompt, **kw)
    if VERBOSE:
        print("    run %s %r -> %r" % (host, prompt, r), flush=True)
    return r


def common_checks(tag, host, sb, r, evs, mcp):
    check("%s: exit code 0, no timeout" % tag, r.exit_code == 0 and not r.timed_out, describe_run(r))
    mcp_homes = {c.get("HOME") for c in mcp}
    check("%s: MCP server ran with the sandbox HOME" % tag, mcp and mcp_homes == {sb.home},
          "homes=%s" % mcp_homes)
    homes = hook_homes(sb)
    check("%s: hook processes ran with the sandbox HOME (not the real one)" % tag,
          homes and set(homes) == {sb.home} and REAL_HOME not in homes, "homes=%s" % set(homes))
    check("%s: every hook payload has session_id" % tag, evs and all(e.get("session_id") for e in evs))


# ---------------------------------------------------------------------------------------------
# scenarios


def sc_baseline(host):
    tag = "%s/baseline" % host
    with H.Sandbox(hooks=hooks_for(), name="%s-baseline" % host, keep=KEEP) as sb:
        r = run(sb, host, "read README via ctx_read")
        evs, mcp, reqs = sb.hook_events(), sb.mcp_calls(), sb.mock_requests()
        common_checks(tag, host, sb, r, evs, mcp)
        n = names(evs)
        for ev in ("SessionStart", "UserPromptSubmit", "Stop", "SessionEnd"):
            check("%s: %s fired" % (tag, ev), ev in n, "events=%s" % n)
        pre = tool_events(evs, "PreToolUse")
        post = tool_events(evs, "PostToolUse")
        check("%s: PreToolUse for %s fired once" % (tag, MCP_HOOK_NAME), len(pre) == 1, "events=%s" % n)
        check("%s: PostToolUse for %s fired once" % (tag, MCP_HOOK_NAME), len(post) == 1, "events=%s" % n)
        if host == "claude":
            check("%s: PreToolUse(ToolSearch) before the MCP tool" % tag,
                  any(e.get("tool_name") == "ToolSearch" for e in evs if e.get("hook_event_name") == "PreToolUse"))
        check("%s: order SessionStart < PreToolUse(mcp) < Stop < SessionEnd" % tag,
              pre and n.index("SessionStart") < evs.index(pre[0]) < n.index("Stop") < n.index("SessionEnd"),
              "events=%s" % n)
        check("%s: MCP server logged exactly one tools/call ctx_read {path: README.md}" % tag,
              len(mcp) == 1 and mcp[0].get("name") == "ctx_read" and mcp[0].get("arguments") == {"path": "README.md"},
              json.dumps(mcp)[:500])
        meta = (mcp[0].get("_meta") or {}) if mcp else {}
        sid = pre[0].get("session_id") if pre else None
        if host == "claude":
            check("%s: MCP _meta claudecode/toolUseId == PreToolUse tool_use_id" % tag,
                  pre and meta.get("claudecode/toolUseId") == pre[0].get("tool_use_id"), json.dumps(meta))
            check("%s: MCP env CLAUDE_CODE_SESSION_ID == hook session_id" % tag,
                  mcp and mcp[0].get("CLAUDE_CODE_SESSION_ID") == sid)
        else:
            check("%s: MCP _meta sessionId == hook session_id" % tag, sid and meta.get("sessionId") == sid,
                  json.dumps(meta)[:300])
            check("%s: MCP _meta callId == PreToolUse tool_use_id" % tag,
                  pre and meta.get("callId") == pre[0].get("tool_use_id"))
        check("%s: stdout/session id from the host == hook session_id" % tag, r.session_id == sid,
              "%s vs %s" % (r.session_id, sid))
        seen = [tr for q in reqs for tr in q.get("tool_results", []) if FIXTURE in tr.get("text", "")]
        check("%s: mock saw the MCP tool result in the next request" % tag, len(seen) == 1)
        check("%s: final answer quotes the tool result" % tag, ("MOCK_DONE" in r.stdout and FIXTURE in r.stdout))


def sc_subagent(host):
    tag = "%s/subagent" % host
    with H.Sandbox(hooks=hooks_for(), name="%s-subagent" % host, keep=KEEP) as sb:
        r = run(sb, host, "[subagent] read README via ctx_read")
        evs, mcp = sb.hook_events(), sb.mcp_calls()
        common_checks(tag, host, sb, r, evs, mcp)
        n = names(evs)
        check("%s: SubagentStart and SubagentStop fired" % tag, "SubagentStart" in n and "SubagentStop" in n,
              "events=%s" % n)
        spawn_tool = "Agent" if host == "claude" else "spawn_agent"
        check("%s: PreToolUse(%s) fired in the main agent" % (tag, spawn_tool),
              any(e.get("tool_name") == spawn_tool and not e.get("agent_id") for e in evs
                  if e.get("hook_event_name") == "PreToolUse"))
        pre = tool_events(evs, "PreToolUse")
        starts = [e for e in evs if e.get("hook_event_name") == "SubagentStart"]
        agent_id = starts[0].get("agent_id") if starts else None
        check("%s: PreToolUse(%s) carries the subagent's agent_id" % (tag, MCP_HOOK_NAME),
              len(pre) == 1 and pre[0].get("agent_id") and pre[0].get("agent_id") == agent_id,
              json.dumps(pre)[:400])
        main_sid = next((e.get("session_id") for e in evs if e.get("hook_event_name") == "SessionStart"), None)
        check("%s: subagent hooks keep the parent session_id" % tag,
              pre and pre[0].get("session_id") == main_sid)
        check("%s: MCP server logged one tools/call" % tag, len(mcp) == 1, json.dumps(mcp)[:300])
        meta = (mcp[0].get("_meta") or {}) if mcp else {}
        if host == "claude":
            check("%s: MCP _meta claudecode/toolUseId == subagent PreToolUse tool_use_id" % tag,
                  pre and meta.get("claudecode/toolUseId") == pre[0].get("tool_use_id"))
        else:
            check("%s: MCP _meta threadId == agent_id, sessionId == parent session" % tag,
                  meta.get("threadId") == agent_id and meta.get("sessionId") == main_sid,
                  json.dumps(meta)[:300])
        check("%s: final answer came back through the subagent" % tag,
              "via subagent" in r.stdout and FIXTURE in r.stdout)


def sc_compact(host):
    tag = "%s/compact" % host
    with H.Sandbox(hooks=hooks_for(), name="%s-compact" % host, keep=KEEP) as sb:
        r1 = run(sb, host, "read README via ctx_read")
        check("%s: first turn ok" % tag, r1.exit_code == 0 and not r1.timed_out, describe_run(r1))
        mark = len(sb.hook_events())
        if host == "claude":
            r2 = run(sb, host, "/compact", resume=r1.session_id)
            check("%s: /compact --resume exit 0" % tag, r2.exit_code == 0 and not r2.timed_out, describe_run(r2))
            r3 = run(sb, host, "read README via ctx_read again", resume=r1.session_id)
            check("%s: turn after compaction ok" % tag, r3.exit_code == 0 and not r3.timed_out, describe_run(r3))
            trig = "manual"
        else:
            r2 = run(sb, host, "read README via ctx_read again", resume_last=True,
                     config=["model_auto_compact_token_limit=60"])
            check("%s: exec resume --last (auto-compaction) exit 0" % tag,
                  r2.exit_code == 0 and not r2.timed_out, describe_run(r2))
            trig = "auto"
        evs = sb.hook_events()
        later = evs[mark:]
        n = names(later)
        sid = evs[0].get("session_id") if evs else None
        pre_c = [e for e in later if e.get("hook_event_name") == "PreCompact"]
        post_c = [e for e in later if e.get("hook_event_name") == "PostCompact"]
        check("%s: PreCompact(trigger=%s) fired" % (tag, trig), pre_c and pre_c[0].get("trigger") == trig,
              "events=%s" % n)
        check("%s: PostCompact(trigger=%s) fired" % (tag, trig), post_c and post_c[0].get("trigger") == trig)
        sources = [e.get("source") for e in later if e.get("hook_event_name") == "SessionStart"]
        check("%s: SessionStart source=resume and source=compact" % tag,
              "resume" in sources and "compact" in sources, "sources=%s" % sources)
        check("%s: resumed/compacted session keeps the session_id" % tag,
              later and all(e.get("session_id") == sid for e in later))
        reqs = sb.mock_requests()
        check("%s: mock answered a compaction request" % tag, any(q.get("kind") == "compact" for q in reqs))
        if host == "claude":
            check("%s: PostCompact.compact_summary is the mock summary" % tag,
                  post_c and "MOCK_SUMMARY" in (post_c[0].get("compact_summary") or ""))
        mcp = sb.mcp_calls()
        check("%s: MCP read after compaction reached the server (2 calls in total)" % tag, len(mcp) == 2,
              "calls=%d" % len(mcp))
        pre_after = [e for e in tool_events(later, "PreToolUse")]
        check("%s: PreToolUse(%s) after compaction fired" % (tag, MCP_HOOK_NAME), len(pre_after) == 1)
        check("%s: SessionEnd fired for every run" % tag,
              names(evs).count("SessionEnd") == (3 if host == "claude" else 2), "events=%s" % names(evs))


def sc_concurrent(host):
    tag = "%s/concurrent" % host
    with H.Sandbox(hooks=hooks_for(), name="%s-concurrent" % host, keep=KEEP) as sb:
        fn = H.run_claude if host == "claude" else H.run_codex
        ra, rb = H.run_concurrently([lambda: fn(sb, "[slow=3] read README via ctx_read"),
                                     lambda: fn(sb, "[slow=3] read README via ctx_read")])
        for i, r in enumerate((ra, rb)):
            ok = not isinstance(r, BaseException) and r.exit_code == 0 and not r.timed_out
            check("%s: session %d exit 0" % (tag, i + 1), ok, repr(r) if isinstance(r, BaseException) else describe_run(r))
        if isinstance(ra, BaseException) or isinstance(rb, BaseException):
            return
        ov = H.overlap(ra, rb)
        check("%s: the two runs overlapped in time (>2 s)" % tag, ov > 2.0, "overlap=%.2fs" % ov)
        evs = sb.hook_events()
        sids = sorted({e.get("session_id") for e in evs if e.get("hook_event_name") == "SessionStart"})
        check("%s: two different session_ids" % tag, len(sids) == 2, "sids=%s" % sids)
        check("%s: host outputs report the same two session ids" % tag,
              sorted([ra.session_id, rb.session_id]) == sids, "%s %s" % (ra.session_id, rb.session_id))
        pre = tool_events(evs, "PreToolUse")
        check("%s: one PreToolUse(%s) per session" % (tag, MCP_HOOK_NAME),
              sorted(e.get("session_id") for e in pre) == sids)
        mcp = sb.mcp_calls()
        check("%s: two MCP calls from two MCP server processes" % tag,
              len(mcp) == 2 and len({c.get("pid") for c in mcp}) == 2, json.dumps(mcp)[:300])
        if host == "codex":
            check("%s: MCP _meta.sessionId tells the sessions apart" % tag,
                  sorted((c.get("_meta") or {}).get("sessionId") for c in mcp) == sids)
        else:
            check("%s: MCP env CLAUDE_CODE_SESSION_ID tells the sessions apart" % tag,
                  sorted(c.get("CLAUDE_CODE_SESSION_ID") for c in mcp) == sids)
        # the slow model requests of both sessions were in flight at the same time
        slow = [q for q in sb.mock_requests() if q.get("delay")]
        windows = sorted((q["t_start"], q["t_start"] + q["delay"], q.get("session")) for q in slow)
        inter = len(windows) == 2 and windows[1][0] < windows[0][1] and windows[0][2] != windows[1][2]
        check("%s: the slow turns of both sessions overlapped at the mock" % tag, inter, json.dumps(windows))
        # hooks interleaved: a hook of session B fired between two hooks of session A
        seq = [e.get("session_id") for e in evs]
        switches = sum(1 for a, b in zip(seq, seq[1:]) if a != b)
        check("%s: hook events of the two sessions interleave" % tag, switches >= 2, "switches=%d" % switches)


def sc_gate(host):
    tag = "%s/gate" % host
    deny = {"PreToolUse": [{"matcher": MCP_HOOK_NAME, "hooks": [{"type": "command", "timeout": 10,
                                                                 "command": "cat >/dev/null; printf '%%s\\n' '%s'" % DENY_JSON}]}]}
    with H.Sandbox(hooks=hooks_for(deny), name="%s-gate" % host, keep=KEEP) as sb:
        r = run(sb, host, "read README via ctx_read")
        evs, mcp, reqs = sb.hook_events(), sb.mcp_calls(), sb.mock_requests()
        check("%s: exit code 0" % tag, r.exit_code == 0 and not r.timed_out, describe_run(r))
        check("%s: PreToolUse(%s) fired" % (tag, MCP_HOOK_NAME), len(tool_events(evs, "PreToolUse")) == 1)
        check("%s: deny stopped the MCP tool (no tools/call logged)" % tag, len(mcp) == 0, json.dumps(mcp)[:300])
        check("%s: no PostToolUse(%s)" % (tag, MCP_HOOK_NAME), len(tool_events(evs, "PostToolUse")) == 0)
        seen = [tr for q in reqs for tr in q.get("tool_results", []) if DENY_REASON in tr.get("text", "")]
        check("%s: the model's next request carried the deny reason" % tag, len(seen) == 1,
              json.dumps([q.get("tool_results") for q in reqs])[:600])
        if seen:
            print("    %s: model saw: %r" % (tag, seen[0]["text"][:200]), flush=True)
        check("%s: final answer quotes the deny reason" % tag, DENY_REASON in r.stdout)


SCENARIOS = [("baseline", sc_baseline), ("subagent", sc_subagent), ("compact", sc_compact),
             ("concurrent", sc_concurrent), ("gate", sc_gate)]


def leftover_processes(markers):
    """pids (not ours) whose command line mentions one of markers."""
    out = []
    me = os.getpid()
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == me:
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if any(m in cmd for m in markers):
            out.append((int(pid), cmd[:200]))
    return out


def main():
    global VERBOSE, KEEP
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", choices=["claude", "codex", "both"], default="both")
    ap.add_argument("--only", default="", help="comma list of scenarios: " + ",".join(n for n, _ in SCENARIOS))
    ap.add_argument("--keep", action="store_true", help="keep sandboxes (also E2E_KEEP=1)")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    VERBOSE, KEEP = a.verbose, (a.keep or os.environ.get("E2E_KEEP") == "1")

    isolated = H.isolate_network()
    t0 = time.time()
    print("selftest: network isolated (loopback-only netns): %s" % isolated, flush=True)
    for host, b, ver in (("claude", H.claude_bin(), H.CLAUDE_VERSION), ("codex", H.codex_bin(), H.CODEX_VERSION)):
        if not os.path.exists(b):
            print("FAIL %s binary missing at %s: run `bash tests/e2e/setup-hosts.sh` first" % (host, b))
            print("0 passed, 1 failed")
            return 1
    hosts = ["claude", "codex"] if a.host == "both" else [a.host]
    only = [s for s in a.only.split(",") if s]
    for name, fn in SCENARIOS:
        if only and name not in only:
            continue
        for host in hosts:
            t = time.time()
            try:
                fn(host)
            except Exception:
                check("%s/%s: scenario raised" % (host, name), False, traceback.format_exc()[-1500:])
            print("    (%s/%s took %.1fs)" % (host, name, time.time() - t), flush=True)
    time.sleep(0.5)
    left = leftover_processes([H.MOCK_MODEL, H.MCP_SERVER, "leanctx-claude-", "leanctx-codex-"])
    check("no leftover processes (mock model, MCP servers, hosts)", not left, json.dumps(left)[:500])
    passed = sum(1 for _, ok in RESULTS if ok)
    failed = len(RESULTS) - passed
    print("selftest: %.1fs" % (time.time() - t0))
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 else 1


KEEP = False

if __name__ == "__main__":
    sys.exit(main())
