#!/usr/bin/env python3
"""Scripted mock model server for the leanctx e2e harness (python3 stdlib only).

Speaks just enough of
  * the Anthropic Messages API  (POST /v1/messages, streaming SSE or JSON) for Claude Code, and
  * the OpenAI Responses API    (POST /v1/responses, streaming SSE) for Codex (wire_api="responses")
to drive scripted scenarios. It listens on 127.0.0.1 only.

    mock_model.py [--port 0] [--port-file FILE] [--log FILE] [--dump-dir DIR]
                  [--max-lifetime SECONDS] [--parent-pid PID] [--max-requests-per-session N]

Prints `PORT=<n>` on stdout once listening (and writes the port to --port-file). Exits on
SIGTERM/SIGINT, after --max-lifetime seconds (default 1800), or when --parent-pid is gone.

Behaviour is stateless and scripted by the text of the user prompt (the last user message that is
not a tool result). Markers (may be combined):

  read <PATH> via ctx_read   call the MCP tool ctx_read {"path": PATH} ("README" -> "README.md"),
                             then answer with final text that quotes the tool result text.
  [reads=A,B,...]            call ctx_read once per path, in order (one call per model request).
  [parallel=A,B,...]         call ctx_read once per path, all in ONE model response (parallel tool
                             calls: one Claude tool batch, several Codex function_call items).
  [subagent]                 main agent delegates the prompt (marker removed) to a subagent:
                             Claude: tool `Agent` {subagent_type: general-purpose, ...};
                             Codex: `spawn_agent` {message}, then `wait_agent` {targets}.
                             The subagent's own prompt then drives it (e.g. it calls ctx_read).
  [slow=N]                   sleep N seconds (max 120) before answering the first request of the
                             turn (the request whose last message is the prompt itself).
  [error]                    answer the prompt's request with HTTP 400.
  [usage=N]                  report N input tokens (Claude) with the turn's final answer, until the
                             conversation is compacted (N = 995000 makes Claude Code auto-compact
                             before the next turn).
  [usage-all=N]              report N input tokens (Claude) with every answer to a request whose
                             prompt holds it, tool calls included, until that context is compacted
                             (in a subagent's prompt: the subagent auto-compacts before its next
                             request).
  [subusage=N]               with [subagent]: becomes [usage-all=N] in the subagent's prompt only.
  [bg]                       with [subagent]: the Agent call asks run_in_background (Claude).
  [workflow]                 main agent runs the prompt (marker removed) in one agent of a
                             workflow (Claude: tool `Workflow` {script} whose body is one
                             `agent(prompt)` call; the run goes on in the background).
  anything else              plain text "MOCK_DONE: ok".

Claude defers MCP tools behind `ToolSearch`: when `mcp__ctx__ctx_read` is not (yet) in `tools`,
the mock first calls ToolSearch {"query": "select:mcp__ctx__ctx_read", "max_results": 5}.
Codex gets `{"type":"function_call","namespace":"mcp__ctx","name":"ctx_read",...}`.

Compaction requests (Claude `/compact`, Codex auto-compaction) are recognised by their summary
prompt and answered with "<summary>MOCK_SUMMARY: ...</summary>".
Final text after tool results: "MOCK_DONE: <tool>(<args>) -> <result text>; ...".

Request log (--log, JSON lines, one per request, no bodies):
  ts, api, path, model, session (X-Claude-Code-Session-Id / session-id header), stream,
  kind (main | compact | side | other), n_input, prompt (first 200 chars of the current prompt),
  reply_tool_use_ids (Claude: the ids of the tool uses the answer makes),
  tool_results: [{tool, tool_use_id, input, is_error, text (first 2000 chars), chars, sha256,
  markers, whole, unchanged}]  (only those in the last message, i.e. what the host just sent
  back; `whole` names each big-<N> fixture whose complete text is in the result, `unchanged` says
  it holds an `[unchanged]` stub; whole_before: the fixtures whole in a tool result before it in
  the request), context_whole (the big-<N> fixtures whose complete text is in
  any tool result of the whole request, i.e. in the model's context), reply (short description),
  delay, status.
  Claude requests also log context_management (the body's, as the host sent it), context_short
  ({tool_use_id: text} of the results of at most 100 characters in the model's view, e.g. a
  host's `[Old tool result content cleared]` stand-in) and, when the mock applied it, cleared
  (below).
--dump-dir writes every full request body to DIR/NNNN-<api>.json (debugging only).

Server-side clearing (Claude): a request whose context_management.edits holds
clear_tool_uses_20250919 is treated as Anthropic documents that edit
(platform.claude.com/docs/en/build-with-claude/context-editing): once the request holds at least
`trigger` tool uses, the oldest tool results not in `exclude_tools` are cleared, all but the newest
`keep` tool uses, if that clears at least `clear_at_least` input tokens (about 4 characters a
token). The model's view (context_whole, whole_before) then lacks them, `cleared` lists their ids,
and the answer reports `context_management.applied_edits` as the API does. The request body itself
still holds them whole (the client keeps the full history). An emulation: what the real API clears
was not observed.
"""
import argparse
import json
import os
import re
import signal
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fixture_text  # noqa: E402

MCP_TOOL_CLAUDE = "mcp__ctx__ctx_read"
MCP_NS_CODEX = "mcp__ctx"
MCP_NAME_CODEX = "ctx_read"
USAGE_IN, USAGE_OUT = 50, 12
USAGE_IN_AFTER_COMPACTION = 5
# Must not contain any scenario marker (it comes back as context after compaction).
SUMMARY_TEXT = ("<analysis>mock analysis</analysis>\n<summary>MOCK_SUMMARY: earlier turns used the ctx "
                "tool and got fixture content; nothing is pending.</summary>")
# Host-written messages that carry a compaction summary (never a prompt).
SUMMARY_MSG_RE = re.compile(r"^(Another language model started to solve this problem|"
                            r"This session is being continued from a previous conversation)")
_session_counts = {}

COMPACT_RE = re.compile(
    r"(create a detailed summary of the conversation|summary of the conversation so far|"
    r"CONTEXT CHECKPOINT COMPACTION|handoff summary|summarize the conversation|"
    r"Your task is to create a detailed summary)", re.I)
READ_RE = re.compile(r"\bread\s+(\S+)\s+via\s+ctx_read", re.I)
READS_RE = re.compile(r"\[reads=([^\]]+)\]")
PARALLEL_RE = re.compile(r"\[parallel=([^\]]+)\]")
SLOW_RE = re.compile(r"\[slow=(\d+(?:\.\d+)?)\]")
USAGE_RE = re.compile(r"\[usage=(\d+)\]")
USAGE_ALL_RE = re.compile(r"\[usage-all=(\d+)\]")
HOST_TAG_RE = re.compile(r"^<[a-z][a-z_-]*>")
SYSREM_RE = re.compile(r"<system-reminder>.*?</system-reminder>", re.S)

_log_lock = threading.Lock()
_counter = [0]
ARGS = None


def now():
    return time.time()


def short(s, n=200):
    s = s if isinstance(s, str) else json.dumps(s)
    return s if len(s) <= n else s[:n] + "..."


def log_request(rec):
    if not ARGS.log:
        return
    rec = dict(rec)
    rec.setdefault("ts", now())
    line = json.dumps(rec, sort_keys=True) + "\n"
    with _log_lock:
        with open(ARGS.log, "a") as f:
            f.write(line)


def logged_result(r, before=()):
    """A tool result the host sent, as logged: its text (first 2000 chars) and what it holds in
    full: chars, sha256, the size markers present, `whole` (the big-<N> fixtures whose complete
    text it contains), `unchanged` (it contains an `[unchanged]` stub) and `whole_before` (the
    fixtures whole in some tool result before it in the request: what the model has read by the
    time it reads this one)."""
    t = r["text"] or ""
    return {"tool": r["tool"], "tool_use_id": r["tool_use_id"], "input": r.get("input"),
            "is_error": r["is_error"], "text": short(t, 2000), "chars": len(t),
            "sha256": fixture_text.sha256(t), "markers": fixture_text.markers(t),
            "whole": fixture_text.whole_copies(t), "unchanged": "[unchanged]" in t,
            "whole_before": sorted(before)}


def logged_results(a):
    """logged_result for each of the request's new tool results (the last ones of its context)."""
    wholes = [fixture_text.whole_copies(t or "") for t in a["context_results"]]
    n, last = len(wholes), a["last_results"]
    out = []
    for k, r in enumerate(last):
        idx = n - len(last) + k
        out.append(logged_result(r, {x for w in wholes[:max(idx, 0)] for x in w}))
    return out


def context_whole(texts):
    """The big-<N> fixtures whose complete text is in some tool result of the request's input: what
    the model has in its context at this request (a compaction replaces history by a summary)."""
    return sorted({name for t in texts for name in fixture_text.whole_copies(t or "")})


def dump_body(api, body):
    if not ARGS.dump_dir:
        return
    with _log_lock:
        _counter[0] += 1
        n = _counter[0]
    os.makedirs(ARGS.dump_dir, exist_ok=True)
    with open(os.path.join(ARGS.dump_dir, "%04d-%s.json" % (n, api)), "w") as f:
        json.dump(body, f, indent=1)


# ---------------------------------------------------------------------------------------------
# Scenario logic shared by both APIs


def plan_reads(prompt):
    m = READS_RE.search(prompt)
    if m:
        return [p.strip() for p in m.group(1).split(",") if p.strip()]
    m = READ_RE.search(prompt)
    if m:
        p = m.group(1).strip("`'\".,;:")
        return ["README.md" if p == "README" else p]
    return []


def plan_parallel(prompt):
    m = PARALLEL_RE.search(prompt)
    return [p.strip() for p in m.group(1).split(",") if p.strip()] if m else []


def prompt_delay(prompt):
    m = SLOW_RE.search(prompt)
    return min(float(m.group(1)), 120.0) if m else 0.0


def strip_markers(prompt):
    return re.sub(r"\s+", " ", re.sub(r"\[(subagent|bg|workflow|slow=[^\]]*|error)\]", "", prompt)).strip()


def final_text(results, prefix="MOCK_DONE"):
    if not results:
        return prefix + ": ok"
    parts = []
    for r in results:
        t = r.get("text", "")
        if len(t) > 2000:
            t = t[:2000] + "..."
        err = " (error)" if r.get("is_error") else ""
        parts.append("%s%s -> %s" % (r.get("tool"), err, t))
    return prefix + ": " + "; ".join(parts)


# ---------------------------------------------------------------------------------------------
# Anthropic Messages API (Claude Code)


def blocks_of(content):
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in (content or []) if isinstance(b, dict)]


def text_of_tool_result(block):
    c = block.get("content")
    if isinstance(c, str):
        return c
    out = []
    for b in c or []:
        if isinstance(b, dict):
            if b.get("type") == "text":
                out.append(b.get("text", ""))
            elif b.get("type") == "tool_reference":
                out.append("tool_reference:%s" % b.get("tool_name"))
    return "\n".join(out)


def user_prompt_text(msg):
    """Text the user typed in a user message (system reminders removed), or None if the message
    is a pure tool-result message."""
    bl = blocks_of(msg.get("content"))
    if any(b.get("type") == "tool_result" for b in bl):
        return None
    texts = [SYSREM_RE.sub("", b.get("text", "")) for b in bl if b.get("type") == "text"]
    # drop host-injected blocks: <system-reminder>, <local-command-caveat>, <command-name>, ...
    texts = [t.strip() for t in texts if t.strip() and not HOST_TAG_RE.match(t.strip())
             and not SUMMARY_MSG_RE.match(t.strip())]
    return "\n".join(texts)


def claude_analyse(body):
    msgs = body.get("messages") or []
    tools = {}
    for t in body.get("tools") or []:
        if isinstance(t, dict) and t.get("name"):
            tools[t["name"]] = t
    # id -> (name, input) for every tool_use the assistant made
    uses = {}
    for m in msgs:
        if m.get("role") == "assistant":
            for b in blocks_of(m.get("content")):
                if b.get("type") == "tool_use":
                    uses[b.get("id")] = (b.get("name"), b.get("input"))
    # the current prompt: last user message with typed text; tool results after it
    prompt, prompt_idx = "", -1
    for i in range(len(msgs) - 1, -1, -1):
        if msgs[i].get("role") == "user":
            t = user_prompt_text(msgs[i])
            if t:
                prompt, prompt_idx = t, i
                break
    results_since = []  # tool results after the prompt, in order
    for m in msgs[prompt_idx + 1:]:
        if m.get("role") == "user":
            for b in blocks_of(m.get("content")):
                if b.get("type") == "tool_result":
                    name, inp = uses.get(b.get("tool_use_id"), (None, None))
                    results_since.append({"tool": name, "input": inp, "tool_use_id": b.get("tool_use_id"),
                                          "is_error": bool(b.get("is_error")),
                                          "text": text_of_tool_result(b)})
    # Claude Code may end a request with a `system` message of its own ("The user hasn't heard from
    # you in a while", after a long turn), even after its compaction instructions: the last message
    # the user side sent is the one that says what the request is.
    last = next((m for m in reversed(msgs) if m.get("role") != "system"), {})
    # tool results the host sent back since the model last spoke (what this request adds)
    last_asst = max([i for i, m in enumerate(msgs) if m.get("role") == "assistant"] or [-1])
    ids = set()
    for m in msgs[last_asst + 1:]:
        ids |= {b.get("tool_use_id") for b in blocks_of(m.get("content")) if b.get("type") == "tool_result"}
    last_results = [r for r in results_since if r["tool_use_id"] in ids]
    system = body.get("system")
    if isinstance(system, list):
        system = "\n".join(b.get("text", "") for b in system if isinstance(b, dict))
    last_text = "\n".join(b.get("text", "") for b in blocks_of(last.get("content")) if b.get("type") == "text")
    is_compact = bool(COMPACT_RE.search(last_text or "")) or (
        bool(COMPACT_RE.search(system or "")) and not tools)
    in_context = [(b.get("tool_use_id"), text_of_tool_result(b)) for m in msgs if m.get("role") == "user"
                  for b in blocks_of(m.get("content")) if b.get("type") == "tool_result"]
    applied, cleared = server_clearing(body, uses, in_context)
    context = [CLEARED_TEXT if i in cleared else t for i, t in in_context]
    # The model's view of this request's new results (the newest are never cleared).
    for r in last_results:
        if r["tool_use_id"] in cleared:
            r["text"] = CLEARED_TEXT
    summarized = any(m.get("role") == "user" and any(
        SUMMARY_MSG_RE.match(SYSREM_RE.sub("", b.get("text", "")).strip()) or "MOCK_SUMMARY" in b.get("text", "")
        for b in blocks_of(m.get("content")) if b.get("type") == "text") for m in msgs)
    return {"msgs": msgs, "tools": tools, "prompt": prompt, "results_since": results_since,
            "context_results": context, "summarized": summarized, "applied_edits": applied,
            "cleared": sorted(cleared),
            "context_short": {i: t for i, t in zip([i for i, _ in in_context], context) if len(t or "") <= 100},
            "last_results": last_results, "is_compact": is_compact,
            # the model has not answered the prompt yet (Claude may put a role "system" message
            # after the prompt, so "prompt is the last message" is not the test)
            "prompt_is_last": prompt_idx >= 0 and last_asst < prompt_idx}


CLEARED_TEXT = "[cleared by the mock's emulation of clear_tool_uses_20250919]"


def server_clearing(body, uses, in_context):
    """The documented effect of a `clear_tool_uses_20250919` edit on the request (see the module
    doc): (applied_edits for the answer, ids of the tool results the model does not see)."""
    edits = (body.get("context_management") or {}).get("edits") or []
    applied, cleared = [], set()
    for e in edits:
        if not isinstance(e, dict) or e.get("type") != "clear_tool_uses_20250919":
            continue
        ids = [i for i, _ in in_context if i not in cleared]
        trigger = ((e.get("trigger") or {}).get("value")) or 100000
        keep = ((e.get("keep") or {}).get("value")) or 3
        least = ((e.get("clear_at_least") or {}).get("value")) or 0
        if len(ids) < trigger:
            continue
        excluded = set(e.get("exclude_tools") or [])
        texts = dict(in_context)
        gone = [i for i in ids[:max(len(ids) - keep, 0)] if (uses.get(i) or (None,))[0] not in excluded]
        tokens = sum(len(texts[i]) for i in gone) // 4
        if not gone or tokens < least:
            continue
        cleared |= set(gone)
        applied.append({"type": "clear_tool_uses_20250919", "cleared_tool_uses": len(gone),
                        "cleared_input_tokens": tokens})
    return applied, cleared


def claude_usage(a):
    """Input tokens to report with the turn's final answer: `[usage=N]` in the prompt reports N
    until the conversation was compacted (its history then starts with the host's summary
    message), else the default."""
    m = USAGE_RE.search(a["prompt"] or "")
    if not m or a.get("summarized"):
        return USAGE_IN
    return int(m.group(1))


def claude_usage_all(a):
    """`[usage-all=N]` in the prompt: N input tokens with every answer until the context holds a
    summary (None: no such marker, or compacted)."""
    m = USAGE_ALL_RE.search(a["prompt"] or "")
    if not m or a.get("summarized"):
        return None
    return int(m.group(1))


def claude_decide(a):
    """Returns (kind, action) with action one of
    ("text", str) | ("tool", name, input) | ("error", status, message)."""
    if a["is_compact"]:
        return "compact", ("text", SUMMARY_TEXT)
    tools, prompt = a["tools"], a["prompt"]
    if not tools:
        return "side", ("text", "MOCK_DONE: ok")
    if a["prompt_is_last"] and "[error]" in prompt:
        return "main", ("error", 400, "E2E mock error requested by [error] marker")
    last = a["last_results"]
    if last and last[-1]["tool"] == "Agent":
        return "main", ("text", final_text(last, "MOCK_DONE (via subagent)"))
    if last and last[-1]["tool"] == "Workflow":
        return "main", ("text", final_text(last, "MOCK_DONE (workflow launched)"))
    if "[workflow]" in prompt and "Workflow" in tools:
        if not any(r["tool"] == "Workflow" for r in a["results_since"]):
            sub_prompt = strip_markers(prompt).replace("[subusage=", "[usage-all=")
            script = ("export const meta = { name: 'e2e-read', description: 'Read via ctx_read in a workflow "
                      "agent' }\nawait agent(%s, { label: 'read' })\n" % json.dumps(sub_prompt))
            return "main", ("tool", "Workflow", {"script": script})
    if "[subagent]" in prompt and "Agent" in tools:
        if not any(r["tool"] == "Agent" for r in a["results_since"]):
            sub_prompt = strip_markers(prompt).replace("[subusage=", "[usage-all=")
            inp = {"description": "Read via ctx_read in a subagent", "prompt": sub_prompt,
                   "subagent_type": "general-purpose"}
            props = ((tools["Agent"].get("input_schema") or {}).get("properties") or {})
            if "run_in_background" in props:
                inp["run_in_background"] = "[bg]" in prompt
            return "main", ("tool", "Agent", inp)
    reads = plan_reads(prompt)
    par = plan_parallel(prompt)
    done = [r for r in a["results_since"] if r["tool"] == MCP_TOOL_CLAUDE]
    if (par and not done) or len(done) < len(reads):
        path = (par or reads)[len(done)]
        mcp = tools.get(MCP_TOOL_CLAUDE)
        searched = any(r["tool"] == "ToolSearch" for r in a["results_since"])
        if (mcp is None or (mcp.get("defer_loading") and not searched)) and "ToolSearch" in tools and not searched:
            return "main", ("tool", "ToolSearch", {"query": "select:" + MCP_TOOL_CLAUDE, "max_results": 5})
        if mcp is None and not searched:
            return "main", ("text", "MOCK_DONE: tool %s is not available" % MCP_TOOL_CLAUDE)
        if par:
            return "main", ("tools", [(MCP_TOOL_CLAUDE, {"path": p}) for p in par])
        return "main", ("tool", MCP_TOOL_CLAUDE, {"path": path})
    return "main", ("text", final_text([r for r in a["results_since"] if r["tool"] != "ToolSearch"]))


def sse(event, data):
    return ("event: %s\ndata: %s\n\n" % (event, json.dumps(data))).encode()


def claude_message(model, action, usage_in=USAGE_IN, applied_edits=()):
    mid = "msg_mock_" + uuid.uuid4().hex[:16]
    if action[0] == "text":
        content = [{"type": "text", "text": action[1]}]
        stop = "end_turn"
    else:
        uses = action[1] if action[0] == "tools" else [(action[1], action[2])]
        content = [{"type": "tool_use", "id": "toolu_mock_" + uuid.uuid4().hex[:16], "name": name, "input": inp}
                   for name, inp in uses]
        stop = "tool_use"
    msg = {"id": mid, "type": "message", "role": "assistant", "model": model, "content": content,
           "stop_reason": stop, "stop_sequence": None,
           "usage": {"input_tokens": usage_in, "output_tokens": USAGE_OUT,
                     "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}
    if applied_edits:
        msg["context_management"] = {"applied_edits": list(applied_edits)}
    return msg


def claude_stream(msg):
    start = dict(msg, content=[], stop_reason=None,
                 usage=dict(msg["usage"], output_tokens=1))
    start.pop("context_management", None)
    yield sse("message_start", {"type": "message_start", "message": start})
    for i, b in enumerate(msg["content"]):
        if b["type"] == "text":
            yield sse("content_block_start", {"type": "content_block_start", "index": i,
                                              "content_block": {"type": "text", "text": ""}})
            yield sse("content_block_delta", {"type": "content_block_delta", "index": i,
                                              "delta": {"type": "text_delta", "text": b["text"]}})
        else:
            yield sse("content_block_start", {"type": "content_block_start", "index": i,
                                              "content_block": {"type": "tool_use", "id": b["id"],
                                                                "name": b["name"], "input": {}}})
            yield sse("content_block_delta", {"type": "content_block_delta", "index": i,
                                              "delta": {"type": "input_json_delta",
                                                        "partial_json": json.dumps(b["input"])}})
        yield sse("content_block_stop", {"type": "content_block_stop", "index": i})
    delta = {"type": "message_delta", "delta": {"stop_reason": msg["stop_reason"], "stop_sequence": None},
             "usage": {"output_tokens": USAGE_OUT}}
    if msg.get("context_management"):  # where the API reports what it cleared
        delta["context_management"] = msg["context_management"]
    yield sse("message_delta", delta)
    yield sse("message_stop", {"type": "message_stop"})


# ---------------------------------------------------------------------------------------------
# OpenAI Responses API (Codex)


def codex_item_text(item):
    c = item.get("content")
    if isinstance(c, str):
        return c
    return "\n".join(b.get("text", "") for b in c or [] if isinstance(b, dict) and "text" in b)


def codex_output_text(out):
    if isinstance(out, str):
        return out
    if isinstance(out, dict):
        if "content" in out:
            return codex_output_text(out["content"])
        return json.dumps(out)
    if isinstance(out, list):
        return "\n".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in out)
    return str(out)


def codex_tools(body):
    """Map bare tool name -> namespace (or None) for every tool offered."""
    out = {}
    for t in body.get("tools") or []:
        if not isinstance(t, dict):
            continue
        if t.get("type") == "namespace":
            for sub in t.get("tools") or []:
                if isinstance(sub, dict) and sub.get("name"):
                    out.setdefault(sub["name"], t.get("name"))
        elif t.get("name"):
            out.setdefault(t["name"], None)
    return out


def codex_analyse(body):
    items = [i for i in (body.get("input") or []) if isinstance(i, dict)]
    calls = {}
    for it in items:
        if it.get("type") in ("function_call", "custom_tool_call"):
            calls[it.get("call_id")] = it
    prompt, prompt_idx = "", -1
    summarized = any(it.get("type") in ("compaction", "compaction_summary") for it in items)
    for i in range(len(items) - 1, -1, -1):
        it = items[i]
        if it.get("type", "message") == "message" and it.get("role") == "user":
            t = codex_item_text(it).strip()
            # host-injected user items: <environment_context>, <subagent_notification>, ...
            if not t or HOST_TAG_RE.match(t) or t.startswith("# AGENTS.md"):
                continue
            if SUMMARY_MSG_RE.match(t):
                summarized = True
                continue
            prompt, prompt_idx = t, i
            break
    results_since = []
    for it in items[prompt_idx + 1:]:
        if it.get("type") in ("function_call_output", "custom_tool_call_output"):
            call = calls.get(it.get("call_id"), {})
            out = it.get("output")
            text = codex_output_text(out)
            is_err = False
            if isinstance(out, dict) and out.get("success") is False:
                is_err = True
            results_since.append({"tool": call.get("name"), "namespace": call.get("namespace"),
                                  "input": call.get("arguments"), "tool_use_id": it.get("call_id"),
                                  "is_error": is_err, "text": text})
    # tool outputs the host sent back since the model last spoke (what this request adds)
    model_idx = [i for i, it in enumerate(items) if it.get("type") in ("function_call", "custom_tool_call")
                 or (it.get("type", "message") == "message" and it.get("role") == "assistant")]
    last_model = max(model_idx or [-1])
    last_ids = {it.get("call_id") for it in items[last_model + 1:]
                if it.get("type") in ("function_call_output", "custom_tool_call_output")}
    last_results = [r for r in results_since if r["tool_use_id"] in last_ids]
    last = items[-1] if items else {}
    last_text = codex_item_text(last) if last.get("type", "message") == "message" else ""
    instr = body.get("instructions") or ""
    is_compact = bool(COMPACT_RE.search(last_text)) or (bool(COMPACT_RE.search(instr)) and not body.get("tools"))
    if not summarized:
        summarized = any(SUMMARY_MSG_RE.match(codex_item_text(it).strip()) for it in items
                         if it.get("type", "message") == "message" and it.get("role") == "user")
    context = [codex_output_text(it.get("output")) for it in items
               if it.get("type") in ("function_call_output", "custom_tool_call_output")]
    return {"items": items, "tools": codex_tools(body), "prompt": prompt, "summarized": summarized,
            "context_results": context,
            "results_since": results_since, "last_results": last_results, "is_compact": is_compact,
            "prompt_is_last": prompt_idx >= 0 and last_model < prompt_idx}


def codex_decide(a):
    """Returns (kind, action): ("text", s) | ("call", namespace, name, args) | ("error", st, msg)."""
    if a["is_compact"]:
        return "compact", ("text", SUMMARY_TEXT)
    tools, prompt = a["tools"], a["prompt"]
    if a["prompt_is_last"] and "[error]" in prompt:
        return "main", ("error", 400, "E2E mock error requested by [error] marker")
    rs = a["results_since"]
    last = a["last_results"]
    if "[subagent]" in prompt and "spawn_agent" in tools:
        spawned = [r for r in rs if r["tool"] == "spawn_agent"]
        waited = [r for r in rs if r["tool"] == "wait_agent"]
        if not spawned:
            return "main", ("call", tools["spawn_agent"], "spawn_agent", {"message": strip_markers(prompt)})
        if not waited and "wait_agent" in tools:
            agent_id = None
            try:
                agent_id = json.loads(spawned[-1]["text"]).get("agent_id")
            except (ValueError, AttributeError):
                m = re.search(r'"agent_id"\s*:\s*"([^"]+)"', spawned[-1]["text"])
                agent_id = m.group(1) if m else None
            if agent_id:
                return "main", ("call", tools["wait_agent"], "wait_agent",
                                {"targets": [agent_id], "timeout_ms": 30000})
        if waited:
            return "main", ("text", final_text(waited, "MOCK_DONE (via subagent)"))
    reads = plan_reads(prompt)
    par = plan_parallel(prompt)
    done = [r for r in rs if r["tool"] == MCP_NAME_CODEX]
    if (par and not done) or len(done) < len(reads):
        if MCP_NAME_CODEX not in tools:
            return "main", ("text", "MOCK_DONE: tool %s is not available" % MCP_NAME_CODEX)
        if par:
            return "main", ("calls", tools[MCP_NAME_CODEX], MCP_NAME_CODEX, [{"path": p} for p in par])
        return "main", ("call", tools[MCP_NAME_CODEX], MCP_NAME_CODEX, {"path": reads[len(done)]})
    if not tools and not prompt:
        return "side", ("text", "MOCK_DONE: ok")
    return "main", ("text", final_text([r for r in rs if r["tool"] not in ("spawn_agent",)]))


def codex_stream(model, action, usage_in=USAGE_IN):
    rid = "resp_mock_" + uuid.uuid4().hex[:16]
    base = {"id": rid, "object": "response", "created_at": int(now()), "model": model,
            "status": "in_progress", "output": []}
    yield sse("response.created", {"type": "response.created", "response": base})
    if action[0] == "text":
        item = {"type": "message", "id": "msg_" + uuid.uuid4().hex[:16], "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": action[1], "annotations": []}]}
        added = dict(item, content=[], status="in_progress")
        yield sse("response.output_item.added", {"type": "response.output_item.added",
                                                 "output_index": 0, "item": added})
        yield sse("response.output_text.delta", {"type": "response.output_text.delta",
                                                 "item_id": item["id"], "output_index": 0,
                                                 "content_index": 0, "delta": action[1]})
        items = [item]
    else:
        _, ns, name, args = action
        items = []
        for i, one in enumerate(args if action[0] == "calls" else [args]):
            item = {"type": "function_call", "id": "fc_" + uuid.uuid4().hex[:16],
                    "call_id": "call_" + uuid.uuid4().hex[:16], "name": name,
                    "arguments": json.dumps(one), "status": "completed"}
            if ns:
                item["namespace"] = ns
            items.append(item)
            yield sse("response.output_item.added", {"type": "response.output_item.added",
                                                     "output_index": i, "item": item})
    for i, item in enumerate(items):
        yield sse("response.output_item.done", {"type": "response.output_item.done",
                                                "output_index": i, "item": item})
    done = dict(base, status="completed", output=items,
                usage={"input_tokens": usage_in, "input_tokens_details": {"cached_tokens": 0},
                       "output_tokens": USAGE_OUT, "output_tokens_details": {"reasoning_tokens": 0},
                       "total_tokens": usage_in + USAGE_OUT})
    yield sse("response.completed", {"type": "response.completed", "response": done})


# ---------------------------------------------------------------------------------------------
# HTTP


def describe(action):
    if action[0] == "text":
        return "text: " + short(action[1], 120)
    if action[0] == "tool":
        return "tool_use %s %s" % (action[1], short(action[2], 120))
    if action[0] == "tools":
        return "tool_use x%d %s" % (len(action[1]), short(action[1], 160))
    if action[0] == "call":
        return "function_call %s%s %s" % ((action[1] + "/") if action[1] else "", action[2], short(action[3], 120))
    if action[0] == "calls":
        return "function_call x%d %s%s %s" % (len(action[3]), (action[1] + "/") if action[1] else "", action[2],
                                              short(action[3], 160))
    return "error %s" % action[1]


def over_limit(session):
    """Count requests per session; True once a session exceeds --max-requests-per-session (a
    scripted session never needs that many, so it is a host/mock loop: fail it fast)."""
    with _log_lock:
        n = _session_counts.get(session, 0) + 1
        _session_counts[session] = n
    return ARGS.max_requests_per_session > 0 and n > ARGS.max_requests_per_session


class Handler(BaseHTTPRequestHandler):
    server_version = "leanctx-e2e-mock/1"

    def log_message(self, fmt, *args):  # keep stderr quiet
        pass

    def _json(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        enc = (self.headers.get("Content-Encoding") or "").lower()
        if enc in ("gzip", "deflate"):
            import zlib
            raw = zlib.decompress(raw, 16 + zlib.MAX_WBITS if enc == "gzip" else zlib.MAX_WBITS)
        elif enc == "zstd":
            raise ValueError("zstd request bodies are not supported")
        try:
            return json.loads(raw or b"{}")
        except ValueError:
            return {}

    def do_HEAD(self):
        self.send_response(200)
        self.end_headers()

    def do_GET(self):
        path = self.path.split("?")[0]
        if path.rstrip("/").endswith("/models"):
            self._json(200, {"object": "list", "data": [], "models": []})
            st = 200
        else:
            self._json(404, {"error": {"message": "not found: " + path}})
            st = 404
        log_request({"api": "other", "path": self.path, "method": "GET", "status": st, "kind": "other"})

    def _stream(self, chunks):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for c in chunks:
            self.wfile.write(c)
            self.wfile.flush()
        self.close_connection = True

    def do_POST(self):
        path = self.path.split("?")[0]
        try:
            body = self._read_body()
        except Exception as e:
            self._json(400, {"error": {"message": str(e)}})
            log_request({"api": "other", "path": self.path, "status": 400, "error": str(e)})
            return
        if path.endswith("/messages/count_tokens"):
            # About 4 characters a token, like a real tokenizer on this text: Claude Code counts a
            # large MCP result this way and refuses one over its token limit (150 KB: an error
            # string reaches the model instead of a preview).
            n = max(USAGE_IN, len(json.dumps(body.get("messages") or [])) // 4)
            self._json(200, {"input_tokens": n})
            log_request({"api": "anthropic", "path": self.path, "kind": "other", "status": 200,
                         "model": body.get("model"), "input_tokens": n})
            return
        if path.endswith("/messages"):
            return self.handle_claude(body)
        if path.endswith("/responses"):
            return self.handle_codex(body)
        self._json(404, {"error": {"message": "not found: " + path}})
        log_request({"api": "other", "path": self.path, "method": "POST", "status": 404, "kind": "other"})

    def handle_claude(self, body):
        dump_body("anthropic", body)
        model = body.get("model") or "mock"
        a = claude_analyse(body)
        kind, action = claude_decide(a)
        delay = prompt_delay(a["prompt"]) if (kind == "main" and a["prompt_is_last"]) else 0.0
        rec = {"api": "anthropic", "path": self.path, "model": model,
               "session": self.headers.get("X-Claude-Code-Session-Id"),
               "stream": bool(body.get("stream")), "kind": kind, "n_input": len(a["msgs"]),
               "n_tools": len(a["tools"]), "prompt": short(a["prompt"]),
               "tool_results": logged_results(a),
               "context_whole": context_whole(a["context_results"]),
               "reply": describe(action), "delay": delay, "t_start": now(),
               "context_management": body.get("context_management")}
        if a["cleared"]:
            rec["cleared"] = a["cleared"]
        if a["context_short"]:
            rec["context_short"] = a["context_short"]
        if over_limit(rec["session"]):
            action = ("error", 400, "mock: more than %d requests for session %s (loop?)"
                      % (ARGS.max_requests_per_session, rec["session"]))
            rec["reply"] = describe(action)
            delay = 0
        if delay:
            time.sleep(delay)
        if action[0] == "error":
            rec["status"] = action[1]
            log_request(rec)
            return self._json(action[1], {"type": "error", "error": {"type": "invalid_request_error",
                                                                      "message": action[2]}})
        usage = claude_usage(a) if kind == "main" and action[0] == "text" else USAGE_IN
        if kind == "main" and claude_usage_all(a) is not None:
            usage = claude_usage_all(a)
        msg = claude_message(model, action, usage, a["applied_edits"])
        rec["status"] = 200
        # Which tool uses this answer makes: ties a call (its `claudecode/toolUseId`) to the
        # request whose context the model had when it made it.
        rec["reply_tool_use_ids"] = [b["id"] for b in msg["content"] if b["type"] == "tool_use"]
        log_request(rec)
        if body.get("stream"):
            self._stream(claude_stream(msg))
        else:
            self._json(200, msg)

    def handle_codex(self, body):
        dump_body("openai", body)
        model = body.get("model") or "mock"
        a = codex_analyse(body)
        kind, action = codex_decide(a)
        delay = prompt_delay(a["prompt"]) if (kind == "main" and a["prompt_is_last"]) else 0.0
        rec = {"api": "openai", "path": self.path, "model": model,
               "session": self.headers.get("session-id") or self.headers.get("session_id"),
               "thread": self.headers.get("thread-id"),
               "stream": bool(body.get("stream", True)), "kind": kind, "n_input": len(a["items"]),
               "n_tools": len(a["tools"]), "prompt": short(a["prompt"]),
               "tool_results": logged_results(a),
               "context_whole": context_whole(a["context_results"]),
               "reply": describe(action), "delay": delay, "t_start": now()}
        if over_limit(rec["session"]):
            action = ("error", 400, "mock: more than %d requests for session %s (loop?)"
                      % (ARGS.max_requests_per_session, rec["session"]))
            rec["reply"] = describe(action)
            delay = 0
        if delay:
            time.sleep(delay)
        if action[0] == "error":
            rec["status"] = action[1]
            log_request(rec)
            return self._json(action[1], {"error": {"type": "invalid_request_error", "code": None,
                                                    "message": action[2]}})
        rec["status"] = 200
        log_request(rec)
        # After a compaction report a small context (5+12 tokens), so that a low
        # model_auto_compact_token_limit (e.g. 60) compacts once and not again on every request.
        self._stream(codex_stream(model, action, USAGE_IN_AFTER_COMPACTION if a["summarized"] else USAGE_IN))


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main(argv=None):
    global ARGS
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    ap.add_argument("--log")
    ap.add_argument("--dump-dir")
    ap.add_argument("--max-lifetime", type=float, default=1800.0)
    ap.add_argument("--parent-pid", type=int, default=0)
    # The MCP tool the prompts' `ctx_read` markers call on server `ctx` (`leanctx serve`: read).
    ap.add_argument("--mcp-tool", default="ctx_read")
    # The MCP server that tool is on (Claude names it mcp__<server>__<tool>; Codex's namespace is
    # read from the tools offered): `leanctx` when leanctx's installer registered it.
    ap.add_argument("--mcp-server", default="ctx")
    ap.add_argument("--max-requests-per-session", type=int, default=200,
                    help="answer HTTP 400 after this many requests of one session (0: no limit)")
    ARGS = ap.parse_args(argv)
    global MCP_TOOL_CLAUDE, MCP_NAME_CODEX
    MCP_TOOL_CLAUDE, MCP_NAME_CODEX = "mcp__%s__%s" % (ARGS.mcp_server, ARGS.mcp_tool), ARGS.mcp_tool

    srv = Server(("127.0.0.1", ARGS.port), Handler)
    port = srv.server_address[1]
    if ARGS.port_file:
        tmp = ARGS.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(str(port))
        os.replace(tmp, ARGS.port_file)
    print("PORT=%d" % port, flush=True)

    def stop(*_):
        threading.Thread(target=srv.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    deadline = now() + ARGS.max_lifetime

    def watchdog():
        while True:
            time.sleep(0.5)
            if now() > deadline:
                break
            if ARGS.parent_pid:
                try:
                    os.kill(ARGS.parent_pid, 0)
                except ProcessLookupError:
                    break
        srv.shutdown()

    threading.Thread(target=watchdog, daemon=True).start()
    srv.serve_forever(poll_interval=0.2)
    srv.server_close()


if __name__ == "__main__":
    main()
