#!/usr/bin/env python3
"""One-tool MCP stdio server for the leanctx e2e harness (python3 stdlib only).

Configured in the hosts as server `ctx`; it offers one tool, `ctx_read` ({"path": string}). No file
is read: `big-<N>` (in any directory) returns exactly N bytes of numbered lines with markers
(`MARK-START`, `MARK-MID-1..9` at every 10 %, `MARK-END`; fixture_text.py, byte-identical to the
captures in tests/fixtures/payloads/*/size-*), every other path the text `fixture content of <path>`.
With `--root DIR`, a regular file DIR/<path> is read instead, as it is at the time of the call.

Usage:  mcp_server.py [--log FILE] [LOGFILE] [--leanctx BIN [--mode scope|ledger] [--cache FILE]] [--mode pathkey]
                      [--max-result-chars N] [--root DIR]
The log path comes from --log / the first positional argument, else from $E2E_MCP_LOG (Codex
filters the MCP server's environment down to HOME, LANG, PATH, SHELL, TERM, TMPDIR, USER, so pass
it on the command line there). Every `tools/call` appends one JSON line:
  {"ts", "method", "name", "arguments", "_meta", "pid", "ppid",
   "CLAUDE_CODE_SESSION_ID": <env value or null>, "HOME": <env value or null>}
Nothing else from the environment is recorded.

`--max-result-chars N` declares `_meta: {"anthropic/maxResultSizeChars": N}` on the tool in
`tools/list` (Claude Code then hands results up to N characters to the model whole).

Protocol: newline-delimited JSON-RPC 2.0 on stdin/stdout. Answers `initialize`, `tools/list`,
`tools/call`, `ping`; ignores notifications; every other request with an id gets -32601
"Method not found" (Claude Code first sends `server/discover`).

leanctx, `--mode ledger` (the delivery ledger: what a context-saving server does): for every
`ctx_read` the server builds the result it would return, its version (`sha256:<hex>` of the text),
and asks `BIN stub --call - --key <path> --version <ver> --result <tmpfile> --json` (the JSON-RPC
request on stdin, the result in a temp file). Exit 0: it answers `[unchanged] <path>`; exit 1: the
content (leanctx recorded the delivery); anything else (error, timeout, no binary): the content
(fail open). The server keeps no delivery memory of its own. Logged under "leanctx" in the
tools/call line: mode, key, version, sent_chars, exit, answer (leanctx's JSON), stub.

`--mode pathkey` (no leanctx; for benches/workload's path-keyed arm, with --root): lean-ctx's
rule, a path whose mtime is the one this server last sent is answered `[unchanged] <path>`, with
no question about who asks or what the chat still holds (`--cache FILE` keeps that memory across
server processes). Logged under "pathkey": mtime_ns, stub.

leanctx, `--mode scope` (the default; the older per-scope check): every tools/call first asks
`BIN scope check --json --call -` (`--delivered SCOPE --at MS` when this path was delivered
before, `--cold` when that delivery came from the persisted cache). When leanctx allows it the
answer is `[unchanged] <path>`; otherwise the content, and the path is remembered as delivered to
the scope leanctx vouches for (`delivery_scope`). `--cache FILE` persists those deliveries so a
later server process (a resumed session) starts with them, as cold entries. The answer and the
inputs are logged under "leanctx" in the tools/call line.

Fixture switches (by argument value, for tests that need them):
  path containing "E2E-TOOL-ERROR"  -> result with isError: true ("ctx_read fixture error: no such file")
  path containing "E2E-SLOW-<n>"    -> sleeps n seconds (max 60) before answering
  path starting "structured"        -> the result also carries structuredContent {"path", "bytes"}
                                       (the content stays the text, e.g. structured/big-3000)
  path starting "structured-echo"   -> the same, with the content being that JSON as text
"""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fixture_text  # noqa: E402

SERVER_NAME = "ctx"
TOOL = {
    "name": "ctx_read",
    "description": "Read a file through the ctx fixture server (returns fixture text).",
    "inputSchema": {
        "type": "object",
        "properties": {"path": {"type": "string", "description": "File path to read"}},
        "required": ["path"],
        "additionalProperties": False,
    },
}


def parse_log_path(argv):
    path = None
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--log" and i + 1 < len(argv):
            path = argv[i + 1]
            i += 2
            continue
        if a.startswith("--log="):
            path = a.split("=", 1)[1]
        elif not a.startswith("-") and path is None:
            path = a
        i += 1
    return path or os.environ.get("E2E_MCP_LOG")


LOG_PATH = parse_log_path(sys.argv[1:])


def parse_opt(argv, name):
    for i, a in enumerate(argv):
        if a == name and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return None


LEANCTX = parse_opt(sys.argv[1:], "--leanctx")
CACHE_PATH = parse_opt(sys.argv[1:], "--cache")
MODE = parse_opt(sys.argv[1:], "--mode") or "scope"
if MODE not in ("scope", "ledger", "pathkey"):
    sys.exit("mcp_server.py: --mode must be scope, ledger or pathkey, not %r" % MODE)
MAX_RESULT_CHARS = parse_opt(sys.argv[1:], "--max-result-chars")
ROOT = parse_opt(sys.argv[1:], "--root")


def content_of(path):
    """The text ctx_read returns: with --root, a regular file at ROOT/<path> (relative, no ..) is
    read as it is now (so a test can change it between reads); otherwise fixture_text."""
    if ROOT and path and not os.path.isabs(path) and ".." not in path.split("/"):
        full = os.path.join(ROOT, path)
        if os.path.isfile(full):
            with open(full, encoding="utf-8", errors="replace") as f:
                return f.read()
    return fixture_text.text_for(path)
if MAX_RESULT_CHARS is not None:
    TOOL = dict(TOOL, _meta={"anthropic/maxResultSizeChars": int(MAX_RESULT_CHARS)})


def load_cache():
    if not CACHE_PATH:
        return {}
    try:
        with open(CACHE_PATH) as f:
            saved = json.load(f)
    except (OSError, ValueError):
        return {}
    # Entries from an earlier process come from a persisted index: cold.
    return {k: dict(v, cold=True) for k, v in saved.items()}


CACHE = load_cache() if MODE == "scope" else {}


def save_cache():
    if not CACHE_PATH:
        return
    tmp = "%s.%d.tmp" % (CACHE_PATH, os.getpid())
    with open(tmp, "w") as f:
        json.dump(CACHE, f)
    os.replace(tmp, CACHE_PATH)


def ask_ledger(mid, params, path, result_obj, text):
    """The ledger's stub question for this call: (stub?, record for the log). The result the server
    returns otherwise goes with the question, so leanctx records its delivery."""
    version = "sha256:" + fixture_text.sha256(text)
    req = json.dumps({"jsonrpc": "2.0", "id": mid, "method": "tools/call", "params": params})
    rec = {"mode": "ledger", "key": path, "version": version, "sent_chars": len(text)}
    fd, tmp = tempfile.mkstemp(prefix="ctx-result-", suffix=".json")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(result_obj, f)
        argv = [LEANCTX, "stub", "--call", "-", "--key", path, "--version", version, "--result", tmp, "--json"]
        p = subprocess.run(argv, input=req.encode(), capture_output=True, timeout=10)
        rc = p.returncode
        try:
            answer = json.loads(p.stdout.decode() or "null")
        except ValueError:
            answer = {"unparsed": p.stdout.decode(errors="replace")[:500]}
        if p.stderr:
            rec["stderr"] = p.stderr.decode(errors="replace")[:500]
    except Exception as e:  # a broken leanctx must not break the server: serve content
        answer, rc = {"error": str(e)}, None
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass
    rec.update({"exit": rc, "answer": answer, "stub": rc == 0})
    return rc == 0, rec


def ask_leanctx(mid, params, path):
    """The stub question for this call: returns (allowed, record for the log)."""
    prev = CACHE.get(path)
    argv = [LEANCTX, "scope", "check", "--json", "--call", "-"]
    if prev and prev.get("scope"):
        argv += ["--delivered", prev["scope"], "--at", str(prev["at"])]
    if prev and prev.get("cold"):
        argv.append("--cold")
    req = json.dumps({"jsonrpc": "2.0", "id": mid, "method": "tools/call", "params": params})
    try:
        p = subprocess.run(argv, input=req.encode(), capture_output=True, timeout=10)
        answer = json.loads(p.stdout.decode() or "null")
        rc = p.returncode
    except Exception as e:  # a broken leanctx must not break the server: serve content
        answer, rc = {"error": str(e)}, 2
    allowed = bool(prev) and rc == 0
    # Label the delivery with the scope leanctx vouches for (None when it cannot
    # name the recipient for certain: an unscoped delivery, never stubbed).
    scope = answer.get("delivery_scope") if isinstance(answer, dict) else None
    if not allowed:
        CACHE[path] = {"scope": scope, "at": int(time.time() * 1000), "cold": False}
        save_cache()
    return allowed, {"prev": prev, "exit": rc, "answer": answer, "stub": allowed}


def pathkey_seen(path):
    """lean-ctx's rule (`--mode pathkey`, with --root): a path whose file has the same mtime as
    when this server last sent it is answered `[unchanged]`, whoever asks and whatever happened to
    the chat since. The memory is kept in --cache FILE when given (one server for a whole session,
    across the host's restarts of it), else in this process. Returns (stub?, record for the log)."""
    full = os.path.join(ROOT or "", path)
    try:
        mtime = os.stat(full).st_mtime_ns
    except OSError:
        return False, {"mode": "pathkey", "error": "no such file"}
    seen = {}
    if CACHE_PATH:
        try:
            with open(CACHE_PATH) as f:
                seen = json.load(f)
        except (OSError, ValueError):
            seen = {}
    else:
        seen = PATHKEY_MEMORY
    stub = seen.get(path) == mtime
    if not stub:
        seen[path] = mtime
        if CACHE_PATH:
            tmp = "%s.%d.tmp" % (CACHE_PATH, os.getpid())
            with open(tmp, "w") as f:
                json.dump(seen, f)
            os.replace(tmp, CACHE_PATH)
    return stub, {"mode": "pathkey", "mtime_ns": mtime, "stub": stub}


PATHKEY_MEMORY = {}


def log_call(params, extra=None):
    if not LOG_PATH:
        return
    rec = {
        "ts": time.time(),
        "method": "tools/call",
        "name": params.get("name"),
        "arguments": params.get("arguments"),
        "_meta": params.get("_meta"),
        "pid": os.getpid(),
        "ppid": os.getppid(),
        "CLAUDE_CODE_SESSION_ID": os.environ.get("CLAUDE_CODE_SESSION_ID"),
        "HOME": os.environ.get("HOME"),
    }
    if extra:
        rec.update(extra)
    line = json.dumps(rec, sort_keys=True) + "\n"
    # One write() with O_APPEND: lines from concurrent servers do not interleave.
    fd = os.open(LOG_PATH, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def result(mid, res):
    send({"jsonrpc": "2.0", "id": mid, "result": res})


def error(mid, code, message):
    send({"jsonrpc": "2.0", "id": mid, "error": {"code": code, "message": message}})


def line_on_disk(params):
    """Which of the session's transcripts held this call's own tool use when the call arrived (before
    leanctx was asked): {"session": bool, "subagent": bool}; None without a tool-use id or a session.
    Shows whether a Claude Code subagent's call line is on disk by then (docs/DELIVERY.md §8)."""
    tid = ((params.get("_meta") or {}).get("claudecode/toolUseId") or "").encode()
    sid, home = os.environ.get("CLAUDE_CODE_SESSION_ID"), os.environ.get("HOME")
    if not tid or not sid or not home:
        return None
    base = os.path.join(os.environ.get("CLAUDE_CONFIG_DIR") or os.path.join(home, ".claude"), "projects")
    found = {"session": False, "subagent": False}
    for kind, pat in (("session", os.path.join(base, "*", sid + ".jsonl")),
                      ("subagent", os.path.join(base, "*", sid, "subagents", "*.jsonl"))):
        for p in glob.glob(pat):
            try:
                with open(p, "rb") as f:
                    found[kind] |= tid in f.read()
            except OSError:
                pass
    return found


def handle(msg):
    method = msg.get("method")
    mid = msg.get("id")
    is_request = "id" in msg and method is not None
    params = msg.get("params") or {}
    if method is None:
        return  # a response to something we never sent
    if not is_request:
        return  # notifications (notifications/initialized, cancelled, ...)
    if method == "initialize":
        result(mid, {
            "protocolVersion": params.get("protocolVersion") or "2025-06-18",
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": SERVER_NAME, "version": "0.1.0"},
        })
    elif method == "ping":
        result(mid, {})
    elif method == "tools/list":
        result(mid, {"tools": [TOOL]})
    elif method == "tools/call":
        name = params.get("name")
        args = params.get("arguments") or {}
        path = str(args.get("path", ""))
        failing = "E2E-TOOL-ERROR" in path
        text = content_of(path)
        content = {"content": [{"type": "text", "text": text}], "isError": False}
        if path.startswith("structured"):  # docs/DELIVERY.md §7: the model gets only structuredContent
            sc = {"path": path, "bytes": len(text.encode())}
            if path.startswith("structured-echo"):  # the content is that same JSON (spaced), as MCP advises
                content["content"] = [{"type": "text", "text": json.dumps(sc)}]
            content["structuredContent"] = sc
        stub, extra = False, None
        on_disk = line_on_disk(params)
        if LEANCTX and name == "ctx_read" and MODE == "ledger" and not failing:
            stub, lc = ask_ledger(mid, params, path, content, text)
            extra = {"leanctx": lc}
        elif name == "ctx_read" and MODE == "pathkey" and not failing:
            stub, pk = pathkey_seen(path)
            extra = {"pathkey": pk}
        elif LEANCTX and name == "ctx_read" and MODE == "scope":
            stub, lc = ask_leanctx(mid, params, path)
            extra = {"leanctx": lc}
        log_call(params, dict(extra or {}, line_on_disk=on_disk))
        if name != "ctx_read":
            error(mid, -32602, "Unknown tool: %s" % name)
            return
        m = re.search(r"E2E-SLOW-(\d+)", path)
        if m:
            time.sleep(min(int(m.group(1)), 60))
        if failing:
            result(mid, {"content": [{"type": "text", "text": "ctx_read fixture error: no such file"}],
                         "isError": True})
            return
        if stub:
            result(mid, {"content": [{"type": "text", "text": "[unchanged] %s" % path}], "isError": False})
        else:
            result(mid, content)
    else:
        error(mid, -32601, "Method not found: %s" % method)


def main():
    for raw in sys.stdin:
        raw = raw.strip()
        if not raw:
            continue
        try:
            msg = json.loads(raw)
        except ValueError:
            send({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}})
            continue
        batch = msg if isinstance(msg, list) else [msg]
        for m in batch:
            if isinstance(m, dict):
                try:
                    handle(m)
                except Exception as e:  # never die on one bad message
                    if "id" in m:
                        error(m.get("id"), -32603, "Internal error: %s" % e)


if __name__ == "__main__":
    try:
        main()
    except (BrokenPipeError, KeyboardInterrupt):
        pass
