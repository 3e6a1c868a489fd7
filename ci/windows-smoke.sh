#!/usr/bin/env bash
# End-to-end smoke of the Windows binary under Wine: hook events write the
# slot and the journal, then the read path answers from them (`stub`,
# `scope check`), as an MCP server would ask. Usage: windows-smoke.sh LEANCTX_EXE
# (needs LEANCTX_WINE_SHIM, as ci/wine/runner.sh does).
set -euo pipefail
exe=$1
here=$(cd "$(dirname "$0")" && pwd)
run() { "$here/wine/runner.sh" "$exe" "$@"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The Wine prefix stays where it was before HOME moves.
export WINEPREFIX=${WINEPREFIX:-$HOME/.wine}
export LEAN_CTX_DATA_DIR=$(winepath -w "$tmp/data" 2>/dev/null)
export HOME="$tmp/home" CODEX_HOME="$tmp/home/.codex"
mkdir -p "$HOME"
w() { winepath -w "$1" 2>/dev/null; }
# Windows hosts (and leanctx there) find the home dir in USERPROFILE.
USERPROFILE=$(w "$HOME")
export USERPROFILE
fail() { echo "windows-smoke: FAIL: $*" >&2; exit 1; }

# 1. A Codex session starts; its hook records it.
echo '{"session_id":"S1","hook_event_name":"SessionStart","source":"startup","cwd":"C:\\proj"}' | run hook codex
[ -s "$tmp/data/journal" ] || fail "no journal after SessionStart"
[ -s "$tmp/data/active_transcript.json" ] || fail "no slot after SessionStart"
grep -q '"session_id":"S1"' "$tmp/data/active_transcript.json" || fail "slot does not name S1: $(cat "$tmp/data/active_transcript.json")"

# 2. The server's first read: a delivery is recorded, the content is sent.
printf '%s' '{"content":[{"type":"text","text":"'"$(printf 'x%.0s' $(seq 1 500))"'"}]}' >"$tmp/r.json"
call() {
  printf '{"name":"ctx_read","arguments":{"path":"m.rs"},"_meta":{"sessionId":"S1","threadId":"S1","callId":"%s","windowId":"S1:0"}}' "$1" >"$tmp/$1.json"
  w "$tmp/$1.json"
}
c1=$(call call_1)
set +e
out=$(run stub --call "$c1" --key m.rs --version v1 --result "$(w "$tmp/r.json")" --json | tr -d '\r')
code=$?
set -e
[ "$code" = 1 ] || fail "first stub: exit $code, want 1: $out"
echo "$out" | grep -q '"recorded": *true' || fail "first stub did not record the delivery: $out"

# 3. Codex's PostToolUse hook acknowledges the whole result.
printf '{"session_id":"S1","hook_event_name":"PostToolUse","tool_name":"mcp__ctx__ctx_read","tool_use_id":"call_1","tool_input":{"path":"m.rs"},"tool_response":{"content":[{"type":"text","text":"%s"}],"isError":false}}' \
  "$(printf 'x%.0s' $(seq 1 500))" | run hook codex

# 4. A re-read of the same version in the same window: stub allowed.
c2=$(call call_2)
set +e
out=$(run stub --call "$c2" --key m.rs --version v1 | tr -d '\r')
code=$?
set -e
[ "$code" = 0 ] || fail "re-read stub: exit $code, want 0: $out"

# 5. scope check: the caller of call_2 is S1, a stub delivered to S1 may be served.
set +e
out=$(run scope check --delivered S1 --call "$c2" --json | tr -d '\r')
code=$?
set -e
[ "$code" = 0 ] || fail "scope check: exit $code, want 0: $out"
echo "$out" | grep -q '"allow": *true' || fail "scope check did not allow: $out"

# 6. Another chat is not S1: withheld.
printf '{"name":"ctx_read","arguments":{},"_meta":{"sessionId":"S2","threadId":"S2","callId":"c9"}}' >"$tmp/other.json"
set +e
run scope check --delivered S1 --call "$(w "$tmp/other.json")" >/dev/null
code=$?
set -e
[ "$code" = 1 ] || fail "scope check for another chat: exit $code, want 1"

# 7. status reads it all back (exit 1 is expected: no hooks are installed here).
set +e
out=$(run status --json | tr -d '\r')
set -e
echo "$out" | grep -q '"state_available": *true' || fail "status: state not available: $out"
echo "windows-smoke: OK (hook → slot and journal → stub, scope check, status)"
