#!/usr/bin/env bash
# Peer for the benchmark: what people run today for the same job, a bash +
# jq hook that records the active conversation in lean-ctx's slot
# (`active_transcript.json`), written to a temp file and renamed over the
# slot like lean-ctx does. No journal, no gate: strictly less work than
# `leanctx hook`.
set -euo pipefail
dir="${LEAN_CTX_DATA_DIR:-$HOME/.lean-ctx}"
[ -d "$dir" ] || mkdir -p "$dir"
tmp="$(mktemp "$dir/.tmp-XXXXXX")"
jq -c '{transcript_path: (.transcript_path // ""),
        conversation_id: (.conversation_id // null),
        session_id: (.session_id // null),
        updated_at: (now | floor)}' > "$tmp"
mv -f "$tmp" "$dir/active_transcript.json"
echo '{}'
