#!/bin/sh
# Logging hook for the leanctx e2e harness: appends the hook's stdin payload (JSON) as exactly one
# line to the log file and prints nothing (so the host takes no decision from it).
#   log file: $1 if given, else $E2E_HOOK_LOG; without either the payload is discarded.
# JSON text never contains a raw newline inside a string, so deleting newlines keeps it valid.
# The append happens under flock so concurrent hooks (two sessions, Codex runs matching hooks in
# parallel) never interleave their lines.
log="${1:-${E2E_HOOK_LOG:-}}"
payload="$(cat | tr -d '\n\r')"
[ -n "$log" ] || exit 0
if command -v flock >/dev/null 2>&1; then
  (
    flock -w 10 9 || true
    printf '%s\n' "$payload" >> "$log"
  ) 9>>"$log.lock"
else
  printf '%s\n' "$payload" >> "$log"
fi
exit 0
