"""Subagents and compaction with the real Claude Code 2.1.328 (docs/DELIVERY.md §8, "Subagents and
compaction").

The main thread and each subagent hold contexts of their own. Two scenarios, each one live Claude
Code process over stream-json, leanctx installed by `leanctx hooks install` (ledger mode), every
hook also logged with its time and the transcript's size (`log_hook_indexed.py`):

- `ledger-subagent-main-compact`: the main agent reads M; a background subagent
  (`run_in_background`) reads S, then a file that takes 15 s; while that call runs, `/compact`
  compacts the main thread. The subagent then re-reads S: its model request still holds S whole (so
  a stub is true, and leanctx must give it), while the main thread's re-read of M after the
  compaction is withheld (the model's request no longer holds M).
- `ledger-subagent-own-compact`: the main agent reads M; a subagent auto-compacts (the mock reports
  995,000 input tokens on its answers); the main agent then re-reads M: its context was not touched
  (the request still holds M), so the re-read is a stub.
- `ledger-workflow-own-compact`: the same with the subagent an agent of a `Workflow` run (the tool
  allowed): the host keeps its transcript in `subagents/workflows/<run id>/`, where its boundary
  goes (docs/HOST-FACTS.md §9).

With `E2E_FIXTURE_DIR=<dir>` each run is also exported as a fixture (`<dir>/<scenario>/`: hooks,
their index, the MCP server's log with leanctx's answers, the mock's request log, the transcripts;
long strings shortened), as tests/fixtures/payloads/withdrawal/claude/subagent-*/ was made.
"""
import glob
import json
import os
import time
import uuid

E = None  # leanctx_e2e, set by scenarios()
HERE = os.path.dirname(os.path.abspath(__file__))
M, S, SLOW = "big-4096-m1", "big-10240-s1", "E2E-SLOW-15/big-2048-s2"
EVENTS = ["PreToolUse", "PostToolUse", "PostToolBatch", "UserPromptSubmit", "SessionStart", "SessionEnd", "Stop",
          "SubagentStart", "SubagentStop", "PreCompact", "PostCompact"]


def world(name):
    w = E.World(name, mode="ledger")
    cmd = os.path.join(HERE, "log_hook_indexed.py")
    w.edit_hooks("claude-code", lambda hk: [hk.setdefault(ev, []).append(
        {"hooks": [{"type": "command", "command": cmd, "timeout": 10}]}) for ev in EVENTS])
    return w


def hooks(w):
    try:
        with open(os.path.join(w.sb.root, "logs", "hooks.jsonl.indexed")) as f:
            return [json.loads(l) for l in f if l.strip()]
    except OSError:
        return []


def request_of(w, call):
    """The mock request whose answer made this MCP call: what the model held when it asked."""
    tid = (call.get("_meta") or {}).get("claudecode/toolUseId")
    for q in w.sb.mock_requests():
        if tid and tid in (q.get("reply_tool_use_ids") or []):
            return q
    return None


def answers(w):
    return [(E.lc(c).get("exit"), E.reason(c), (c.get("arguments") or {}).get("path")) for c in w.mcp()]


def wait_for(pred, timeout=90):
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return True
        time.sleep(0.2)
    return False


def sc_main_compact(host):
    tag = "%s/ledger-subagent-main-compact" % host
    w = world("%s-subagent-main-compact" % host)
    c = None
    try:
        c = E.live.ClaudeStream(w.sb, timeout=180)
        c.user(str(uuid.uuid4()), "read %s via ctx_read" % M)
        # The background subagent: the turn ends once it is launched.
        c.user(str(uuid.uuid4()), "[subagent] [bg] [reads=%s,%s,%s]" % (S, SLOW, S))
        slow_started = wait_for(lambda: len(w.mcp()) >= 3)
        compacted = c.user(str(uuid.uuid4()), "/compact")
        done = wait_for(lambda: len(w.mcp()) >= 4)
        # Claude Code tells the main thread when the subagent is done (a turn of its own).
        c.until(lambda m: m.get("type") == "result")
        c.user(str(uuid.uuid4()), "read %s via ctx_read again" % M)
        E.check("%s: the host ran every turn (the compaction while the subagent's call was running)" % tag,
                slow_started and compacted is not None and done, json.dumps(compacted)[:300])
        hk = hooks(w)
        pre = [h for h in hk if h["event"] == "PreCompact"]
        slow_pre, slow_post = ([h for h in hk if h["event"] == ev and (h["payload"].get("tool_name") or "").startswith("mcp__")
                                and (h["payload"].get("tool_input") or {}).get("path") == SLOW]
                               for ev in ("PreToolUse", "PostToolUse"))
        E.check("%s: the main thread compacted while the subagent's call ran (PreCompact between its Pre- and "
                "PostToolUse)" % tag, len(pre) == 1 and slow_pre and slow_post
                and slow_pre[0]["t"] < pre[0]["t"] < slow_post[0]["t"],
                [(h["event"], h["t"]) for h in pre + slow_pre + slow_post])
        comp = [h for h in hk if h["event"] in ("PreCompact", "PostCompact")
                or (h["event"] == "SessionStart" and h["payload"].get("source") == "compact")]
        E.check("%s: the main thread's compaction hooks carry no agent_id; the subagent's calls do" % tag,
                len(comp) == 3 and not any("agent_id" in h["payload"] for h in comp)
                and all(h["payload"].get("agent_id") for h in slow_pre + slow_post), [h["payload"] for h in comp])
        E.check("%s: leanctx: M content, S content, the slow file content, S stub after the main thread's "
                "compaction, M withheld" % tag,
                [(x, r) for x, r, _ in answers(w)] == [(1, "not-delivered"), (1, "not-delivered"),
                                                       (1, "not-delivered"), (0, "confirmed-delivery"),
                                                       (1, "compacted")], answers(w))
        mcp = w.mcp()
        if len(mcp) == 5:
            q = request_of(w, mcp[3])
            E.check("%s: oracle: the subagent's request that re-read S, after the compaction, still held S whole"
                    % tag, q is not None and S in (q.get("context_whole") or []), q and q.get("context_whole"))
            q = request_of(w, mcp[4])
            E.check("%s: oracle: the main thread's request that re-read M, after the compaction, held no M" % tag,
                    q is not None and M not in (q.get("context_whole") or []), q and q.get("context_whole"))
        E.check_stubs_truthful(tag, w)
        export(w, "subagent-main-compact", c.session_id)
    finally:
        if c is not None:
            c.close()
        w.close()


def sc_own_compact(host):
    tag = "%s/ledger-subagent-own-compact" % host
    w = world("%s-subagent-own-compact" % host)
    try:
        u = [str(uuid.uuid4()) for _ in range(3)]
        rc, lines, sid = E.run_claude_stream(w, [
            ("user", u[0], "read %s via ctx_read" % M),
            ("user", u[1], "[subagent] [subusage=995000] [reads=%s,%s]" % (S, SLOW.split("/")[-1])),
            ("user", u[2], "read %s via ctx_read again" % M)], timeout=180)
        done = [m for m in lines if m.get("type") == "result"]
        E.check("%s: the host ran the three turns" % tag, rc == 0 and len(done) == 3, json.dumps(done)[:300])
        hk = hooks(w)
        comp = [h for h in hk if h["event"] in ("PreCompact", "PostCompact")
                or (h["event"] == "SessionStart" and h["payload"].get("source") == "compact")]
        agent = [h["payload"].get("agent_id") for h in hk if h["event"] == "SubagentStart"]
        E.check("%s: the subagent compacted itself: PreCompact, SessionStart(compact), PostCompact, each with its "
                "agent_id" % tag, len(comp) == 3 and len(agent) == 1
                and all(h["payload"].get("agent_id") == agent[0] for h in comp), [h["payload"] for h in comp])
        main_tx = glob.glob(os.path.join(w.sb.claude_dir, "projects", "*", "%s.jsonl" % sid))
        sub_tx = glob.glob(os.path.join(w.sb.claude_dir, "projects", "*", sid, "subagents", "agent-*.jsonl"))

        def boundaries(paths):
            n = 0
            for p in paths:
                with open(p) as f:
                    n += sum(1 for l in f if '"compact_boundary"' in l)
            return n
        E.check("%s: its compact_boundary is in the subagent's own transcript, none in the session's" % tag,
                main_tx and boundaries(main_tx) == 0 and boundaries(sub_tx) == 1, (main_tx, sub_tx))
        mcp = w.mcp()
        E.check("%s: leanctx: M content, then a stub after the subagent's compaction" % tag,
                [(x, r) for x, r, _ in answers(w)][:1] == [(1, "not-delivered")]
                and answers(w)[-1][:2] == (0, "confirmed-delivery") and answers(w)[-1][2] == M, answers(w))
        q = request_of(w, mcp[-1]) if mcp else None
        E.check("%s: oracle: the main thread's request that re-read M, after the subagent's compaction, held M "
                "whole" % tag, q is not None and M in (q.get("context_whole") or []), q and q.get("context_whole"))
        E.check_stubs_truthful(tag, w)
        export(w, "subagent-own-compact", sid)
    finally:
        w.close()


def sc_workflow_own_compact(host):
    tag = "%s/ledger-workflow-own-compact" % host
    w = world("%s-workflow-own-compact" % host)
    c = None
    try:
        c = E.live.ClaudeStream(w.sb, timeout=180, allowed_tools=("mcp__ctx__ctx_read", "Workflow"))
        c.user(str(uuid.uuid4()), "read %s via ctx_read" % M)
        # The run goes on in the background: the turn ends once it is launched.
        c.user(str(uuid.uuid4()), "[workflow] [subusage=995000] [reads=%s,%s]" % (S, SLOW.split("/")[-1]))
        # Its own SubagentStop (the compaction's summarising fork has one too, with another id).
        started = lambda: {h["payload"].get("agent_id") for h in hooks(w) if h["event"] == "SubagentStart"}
        stopped = wait_for(lambda: any(h["event"] == "SubagentStop" and h["payload"].get("agent_id") in started()
                                       for h in hooks(w)), timeout=150)
        # Claude Code tells the main thread when the run is done (a turn of its own).
        c.until(lambda m: m.get("type") == "result")
        c.user(str(uuid.uuid4()), "read %s via ctx_read again" % M)
        sid = c.session_id
        hk = hooks(w)
        agent = [h["payload"].get("agent_id") for h in hk if h["event"] == "SubagentStart"]
        comp = [h for h in hk if h["event"] in ("PreCompact", "PostCompact")
                or (h["event"] == "SessionStart" and h["payload"].get("source") == "compact")]
        E.check("%s: the workflow's agent ran and compacted itself: PreCompact, SessionStart(compact), "
                "PostCompact, each with its agent_id" % tag, stopped and len(agent) == 1 and len(comp) == 3
                and all(h["payload"].get("agent_id") == agent[0] for h in comp), [h["payload"] for h in comp])
        base = glob.glob(os.path.join(w.sb.claude_dir, "projects", "*", sid or "-"))
        flat = glob.glob(os.path.join(base[0] if base else "-", "subagents", "agent-*.jsonl"))
        nested = glob.glob(os.path.join(base[0] if base else "-", "subagents", "workflows", "wf_*",
                                        "agent-%s.jsonl" % (agent[0] if agent else "-")))
        stop = [h["payload"] for h in hk if h["event"] == "SubagentStop" and h["payload"].get("agent_id") in agent]
        E.check("%s: its transcript is in subagents/workflows/<run id>/, none directly in subagents/, and "
                "SubagentStop names it" % tag, not flat and len(nested) == 1 and stop
                and stop[0].get("agent_transcript_path") == nested[0], (flat, nested, stop[:1]))
        n = 0
        for p in nested:
            with open(p) as f:
                n += sum(1 for l in f if '"compact_boundary"' in l)
        E.check("%s: its compact_boundary is in that transcript" % tag, n == 1, nested)
        E.check("%s: leanctx: M content, then a stub after the workflow agent's compaction" % tag,
                [(x, r) for x, r, _ in answers(w)][:1] == [(1, "not-delivered")]
                and answers(w)[-1][:2] == (0, "confirmed-delivery") and answers(w)[-1][2] == M, answers(w))
        E.check_stubs_truthful(tag, w)
        export(w, "workflow-own-compact", sid)
    finally:
        if c is not None:
            c.close()
        w.close()


# ---------------------------------------------------------------------------------------------
# Fixture export (E2E_FIXTURE_DIR)

CUT_AT = 1500


def cut(v):
    """Long strings shortened as the withdrawal fixtures are (200 chars and a note)."""
    if isinstance(v, str) and len(v) > CUT_AT:
        return v[:200] + "\u2026[cut by export: %d chars]" % len(v)
    if isinstance(v, list):
        return [cut(x) for x in v]
    if isinstance(v, dict):
        return {k: cut(x) for k, x in v.items()}
    return v


def export(w, name, sid):
    base = os.environ.get("E2E_FIXTURE_DIR")
    if not base or not sid:
        return
    out = os.path.join(base, name)
    os.makedirs(os.path.join(out, "hooks"), exist_ok=True)
    index = []
    for n, h in enumerate(hooks(w), 1):
        p = h["payload"]
        with open(os.path.join(out, "hooks", "%03d-%s.json" % (n, h["event"])), "w") as f:
            json.dump(cut(p), f, indent=1, sort_keys=True)
        index.append({"n": n, "event": h["event"], "started_at": h["t"], "session_id": p.get("session_id"),
                      "agent_id": p.get("agent_id"), "tool_use_id": p.get("tool_use_id"),
                      "source": p.get("source"), "trigger": p.get("trigger"),
                      "transcript_size": h["transcript_size"]})
    write_jsonl(os.path.join(out, "hooks-index.jsonl"), index)
    write_jsonl(os.path.join(out, "mcp-ledger.jsonl"),
                [cut({k: v for k, v in c.items() if k != "HOME"}) for c in w.mcp()])
    reqs = []
    for q in w.sb.mock_requests():
        if q.get("api") != "anthropic" or q.get("kind") == "other":
            continue
        reqs.append({k: q.get(k) for k in ("t_start", "ts", "kind", "prompt", "n_input", "context_whole",
                                           "reply", "reply_tool_use_ids")}
                    | {"tool_results": [{k: t.get(k) for k in ("tool", "tool_use_id", "input", "chars", "whole",
                                                               "unchanged")} for t in q.get("tool_results", [])]})
    write_jsonl(os.path.join(out, "model-requests.jsonl"), reqs)
    for p in glob.glob(os.path.join(w.sb.claude_dir, "projects", "*", "%s.jsonl" % sid)):
        copy_transcript(p, os.path.join(out, "transcript.jsonl"))
    # Where the host put each subagent's transcript under `subagents/` (a workflow's agent's one level
    # down, in `workflows/<run id>/`), kept as it was.
    for subs in glob.glob(os.path.join(w.sb.claude_dir, "projects", "*", sid, "subagents")):
        for p in glob.glob(os.path.join(subs, "**", "agent-*.jsonl"), recursive=True):
            copy_transcript(p, os.path.join(out, "subagents", os.path.relpath(p, subs)))


def copy_transcript(src, dst):
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    with open(src) as f:
        lines = [json.loads(l) for l in f if l.strip()]
    write_jsonl(dst, [cut(v) for v in lines])


def write_jsonl(path, rows):
    with open(path, "w") as f:
        for r in rows:
            f.write(json.dumps(r, sort_keys=True) + "\n")


def scenarios(e2e):
    """This module's scenarios for leanctx_e2e.SCENARIOS (`e2e`: that module, for its helpers)."""
    global E
    E = e2e
    return [("ledger-subagent-main-compact", sc_main_compact, ("claude",)),
            ("ledger-subagent-own-compact", sc_own_compact, ("claude",)),
            ("ledger-workflow-own-compact", sc_workflow_own_compact, ("claude",))]
