#!/usr/bin/env python3
"""Logging hook that also notes when it ran and how long the transcript it names was then: appends
{"t", "event", "transcript_size", "claude_pid", "payload"} as one line to $E2E_HOOK_LOG with
`.indexed` appended (under flock), prints nothing. The size says which transcript lines were on
disk when the hook ran (docs/DELIVERY.md §8); `claude_pid` is the hook's CLAUDE_PID."""
import fcntl
import json
import os
import sys
import time

raw = sys.stdin.read()
t = time.time()
try:
    payload = json.loads(raw)
except ValueError:
    payload = {"unparsed": raw[:200]}
try:
    size = os.stat(payload.get("transcript_path") or "").st_size
except (OSError, TypeError, ValueError):
    size = None
log = os.environ.get("E2E_HOOK_LOG")
if log:
    with open(log + ".indexed", "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.write(json.dumps({"t": t, "event": payload.get("hook_event_name"), "transcript_size": size,
                            "claude_pid": os.environ.get("CLAUDE_PID"), "payload": payload}) + "\n")
