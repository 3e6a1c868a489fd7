#!/usr/bin/env python3
"""PreToolUse hook of the workload benchmark (Claude Code and Codex), installed next to whatever
else the arm installs. For each read on the MCP server `ctx` it, under a lock:
  - counts the read (session-wide index n, in STATE/count);
  - makes the outside edits the script schedules before read n (STATE/schedule.json:
    {"n": [[path, text], ...]}, paths relative to PROJECT), so they land between two reads of
    one turn, as an editor's save would;
  - appends {n, id (the host's tool_use_id / call id), path, sha256 of the file now} to
    STATE/reads.jsonl: the version each read met, which the oracle needs for stubs and diffs.
It prints nothing (no opinion) and never fails the call: errors go to stderr.

    edit_hook.py STATE PROJECT
"""
import fcntl
import hashlib
import json
import os
import sys


def main():
    state, project = sys.argv[1], sys.argv[2]
    try:
        p = json.load(sys.stdin)
    except ValueError:
        return
    inp = p.get("tool_input") or {}
    if not str(p.get("tool_name") or "").startswith("mcp__ctx__") or not isinstance(inp, dict) \
            or "path" not in inp:
        return
    with open(os.path.join(state, "lock"), "a") as lk:
        fcntl.flock(lk, fcntl.LOCK_EX)
        cpath = os.path.join(state, "count")
        try:
            with open(cpath) as f:
                n = int(f.read().strip() or 0)
        except (OSError, ValueError):
            n = 0
        with open(os.path.join(state, "schedule.json")) as f:
            edits = json.load(f).get(str(n), [])
        for rel, text in edits:
            with open(os.path.join(project, rel), "w") as f:
                f.write(text)
        with open(cpath, "w") as f:
            f.write(str(n + 1))
        path = str(inp["path"])
        try:
            with open(os.path.join(project, path), "rb") as f:
                sha = hashlib.sha256(f.read()).hexdigest()
        except OSError:
            sha = None
        rec = {"n": n, "id": p.get("tool_use_id"), "path": path, "sha": sha, "edited": [e[0] for e in edits],
               "tool": p.get("tool_name")}
        with open(os.path.join(state, "reads.jsonl"), "a") as f:
            f.write(json.dumps(rec) + "\n")


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # never block the host's call
        print("workload edit_hook: %s" % e, file=sys.stderr)
