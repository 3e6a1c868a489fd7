"""The workload benchmark's oracle: what the model received, from the mock model's full request
bodies (tests/e2e/mock_model.py --dump-dir), and the limit computed from it.

Every request the host sent the model (compaction requests aside) is read in order. A read is one
tool result of the MCP server `ctx` (its tool_use_id / call id), counted once, where it first
appears: its size is the UTF-8 bytes of the result text as the host put it in the request, less
the host's own frame around it (Codex puts "Wall time: ... seconds\nOutput:\n" before every MCP
result; counted apart as host_frame_bytes, the same in every arm). What
the model holds at that point is what the request carries before it: the earlier results of the
same file, in order, each whole (the text is, or holds, one of the file's versions), a diff
(applied to a version held before it; it holds the version that comes out) or a stub (adds
nothing). A stub is wrong when the version the read met (the hook's log) is not held; a diff is
wrong when applying it to what is held does not give that version.

The limit (arm "limit"): each read costs what an ideal server would send, given the windows the
oracle saw. The reads of a file still in the model's context when read r arrives (the earlier
results the request carrying r holds) are what that window holds of it, whatever form they had:
in the ideal server each of those reads delivered its version. Then r costs
  - a stub, `[unchanged] <path>`, when its version is held;
  - else the smallest of the whole file and, for each held version, the minimal diff to r's
    version (unified, no context lines, hunks only: difflib.unified_diff(n=0) without its two
    header lines);
  - else the whole file.
The same-server limit (arm "limit-same-server") is that limit for a server whose diff bases live
in its own memory, as `leanctx serve`'s do (no file content on disk): a diff only against a
version delivered by the same server process. The driver runs each chat as one host process, so
one server process answers all of a chat's reads and this equals the limit; it differs only when
a chat's turns are split over host processes (each `claude -p --resume` / `codex exec resume`
turn starts its own server, as this benchmark's first runs did).
"""
import difflib
import hashlib
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "e2e"))
import mock_model as M  # noqa: E402

# Codex frames every MCP result for the model ("Wall time: 0.0082 seconds\nOutput:\n" before the
# server's text): the same for every arm and not the server's to save, so it is counted apart.
CODEX_FRAME_RE = re.compile(r"^Wall time: [0-9.]+ seconds\nOutput:\n")
DIFF_RE = re.compile(r"^\[[^\n]* changed since you read it")
HUNK_RE = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def sha(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _ctx_path(args):
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            return None
    return str(args.get("path")) if isinstance(args, dict) and "path" in args else None


def claude_results(body):
    uses = {}
    for m in body.get("messages") or []:
        if m.get("role") == "assistant":
            for b in M.blocks_of(m.get("content")):
                if b.get("type") == "tool_use":
                    uses[b.get("id")] = (b.get("name") or "", b.get("input"))
    out = []
    for m in body.get("messages") or []:
        if m.get("role") == "user":
            for b in M.blocks_of(m.get("content")):
                if b.get("type") == "tool_result":
                    name, inp = uses.get(b.get("tool_use_id"), ("", None))
                    if name.startswith("mcp__ctx__"):
                        out.append({"id": b.get("tool_use_id"), "path": _ctx_path(inp),
                                    "text": M.text_of_tool_result(b)})
    return out


def codex_results(body):
    items = [i for i in body.get("input") or [] if isinstance(i, dict)]
    calls = {i.get("call_id"): i for i in items if i.get("type") == "function_call"}
    out = []
    for it in items:
        if it.get("type") == "function_call_output":
            c = calls.get(it.get("call_id"), {})
            if c.get("namespace") == "mcp__ctx" or str(c.get("name", "")).startswith("mcp__ctx__"):
                text = M.codex_output_text(it.get("output"))
                m = CODEX_FRAME_RE.match(text)
                frame = m.group(0) if m else ""
                out.append({"id": it.get("call_id"), "path": _ctx_path(c.get("arguments")),
                            "text": text[len(frame):], "frame": len(frame.encode())})
    return out


def load_requests(dump_dir):
    """[(compaction?, [ctx results in context order])] for every request body, in arrival order."""
    reqs = []
    for name in sorted(os.listdir(dump_dir)):
        with open(os.path.join(dump_dir, name)) as f:
            body = json.load(f)
        if name.endswith("-anthropic.json"):
            reqs.append((M.claude_analyse(body)["is_compact"], claude_results(body)))
        else:
            reqs.append((M.codex_analyse(body)["is_compact"], codex_results(body)))
    return reqs


def apply_udiff(old, diff):
    """The text a unified diff makes of `old`, or None when it does not apply."""
    src, out, i = old.splitlines(True), [], 0
    lines = diff.splitlines(True)
    k = next((j for j, l in enumerate(lines) if l.startswith("@@")), len(lines))
    try:
        while k < len(lines):
            m = HUNK_RE.match(lines[k])
            k += 1
            if not m:
                continue
            start, count = int(m.group(1)), int(m.group(2) or 1)
            at = start - 1 if count > 0 else start
            if at < i:
                return None
            out += src[i:at]
            i = at
            while k < len(lines) and not lines[k].startswith("@@"):
                l = lines[k]
                if l[:1] in (" ", "-"):
                    if src[i] != l[1:]:
                        return None
                    if l[0] == " ":
                        out.append(src[i])
                    i += 1
                elif l[:1] == "+":
                    out.append(l[1:])
                elif l.startswith("\\") and out:
                    out[-1] = out[-1].rstrip("\n")
                k += 1
        return "".join(out + src[i:])
    except IndexError:
        return None


def min_diff(a, b):
    return "".join(list(difflib.unified_diff(a.splitlines(True), b.splitlines(True), n=0))[2:])


def stub_min(path):
    return len(("[unchanged] %s" % path).encode())


def classify(r, held, catalog):
    """(kind, version the model holds after it or None)."""
    text, versions = r["text"], catalog.get(r["path"], {})
    h = sha(text)
    if h in versions:
        return "whole", h
    if text.startswith("[unchanged]"):
        return "stub", None
    if DIFF_RE.match(text):
        for base in held:
            new = apply_udiff(versions.get(base, ""), text)
            if new is not None and sha(new) in versions:
                return "diff", sha(new)
        return "diff", None
    for v, t in versions.items():  # whole, inside a wrapper the host added
        if t in text:
            return "whole", v
    return "other", None


def analyse(dump_dir, reads_log, versions, turns=()):
    """Per read (in order of arrival): path, bytes, kind, version met, wrong?, limit cost, and
    the limit for a server whose diff bases live in its process (`limit_same_server`): the same,
    but a diff only against a version that server process delivered. `turns`: (first read index,
    server process) of each turn, in order (the driver runs each chat as one host process, so one
    server process serves all of a chat's turns)."""
    catalog = {p: {sha(t): t for t in ts} for p, ts in versions.items()}
    met, server = {}, {}
    with open(reads_log) as f:
        for line in f:
            rec = json.loads(line)
            met[rec["id"]] = rec["sha"]
            server[rec["id"]] = ([proc for first, proc in turns if first <= rec["n"]] or [None])[-1]
    seen, reads = {}, []
    for compact, results in load_requests(dump_dir):
        if compact:
            continue
        held = {}
        for pos, r in enumerate(results):
            kind, made = classify(r, held.get(r["path"], set()), catalog)
            if r["id"] not in seen:
                v = met.get(r["id"])
                rec = {"id": r["id"], "path": r["path"], "bytes": len(r["text"].encode()),
                       "frame_bytes": r.get("frame", 0), "kind": kind,
                       "version": v, "held": sorted(held.get(r["path"], set())),
                       "before": [x["id"] for x in results[:pos]]}
                rec["wrong"] = (kind == "stub" and v not in held.get(r["path"], set())) or \
                    (kind == "diff" and made != v)
                seen[r["id"]] = rec
                reads.append(rec)
            if made:
                held.setdefault(r["path"], set()).add(made)
    for rec in reads:
        v, path = rec["version"], rec["path"]
        text = catalog.get(path, {}).get(v)
        if text is None:
            # No hook saw this call and no version is known: the host answered it itself (in one
            # full Claude Code run a 383-byte result no hook or server saw). Neutral: whatever it
            # cost, any server would have cost the same there.
            rec["plain"] = rec["limit"] = rec["limit_same_server"] = rec["bytes"]
            continue
        rec["plain"] = len(text.encode())
        earlier = [seen[i] for i in rec["before"] if seen[i]["path"] == path and seen[i]["version"]]
        held = {e["version"] for e in earlier}
        same = {e["version"] for e in earlier if server.get(e["id"]) == server.get(rec["id"])}
        diff = lambda bases: min([rec["plain"]] + [len(min_diff(catalog[path][u], text).encode()) for u in bases])
        rec["limit"] = stub_min(path) if v in held else diff(held)
        rec["limit_same_server"] = stub_min(path) if v in held else diff(same)
    return reads


def totals(reads):
    t = {"reads": len(reads), "bytes_received": sum(r["bytes"] for r in reads),
         "host_frame_bytes": sum(r["frame_bytes"] for r in reads)}
    for k in ("whole", "stub", "diff", "other"):
        t[k if k == "whole" else k + "s"] = sum(1 for r in reads if r["kind"] == k)
    t["wrong_stubs"] = sum(1 for r in reads if r["wrong"] and r["kind"] == "stub")
    t["wrong_diffs"] = sum(1 for r in reads if r["wrong"] and r["kind"] == "diff")
    t["unknown_version"] = sum(1 for r in reads if r["version"] is None)
    t["plain_bytes"] = sum(r["plain"] for r in reads)
    t["limit_bytes"] = sum(r["limit"] or 0 for r in reads)
    t["limit_same_server_bytes"] = sum(r.get("limit_same_server") or 0 for r in reads)
    return t
