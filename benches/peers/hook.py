#!/usr/bin/env python3
"""Peer for the benchmark: what people run today for the same job, a
python3 hook that records the active conversation in lean-ctx's slot
(`active_transcript.json`), written to a temp file and renamed over the
slot like lean-ctx does. No journal, no gate: strictly less work than
`leanctx hook`."""
import json
import os
import sys
import tempfile
import time


def main():
    payload = json.load(sys.stdin)
    d = os.environ.get("LEAN_CTX_DATA_DIR") or os.path.join(os.path.expanduser("~"), ".lean-ctx")
    os.makedirs(d, mode=0o700, exist_ok=True)
    slot = {
        "transcript_path": payload.get("transcript_path") or "",
        "conversation_id": payload.get("conversation_id"),
        "session_id": payload.get("session_id"),
        "updated_at": int(time.time()),
    }
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=d)
    with os.fdopen(fd, "w") as f:
        json.dump(slot, f)
    os.replace(tmp, os.path.join(d, "active_transcript.json"))
    print("{}")


main()
