#!/usr/bin/env bash
# Mutation testing of the safety-critical code with cargo-mutants
# (crates.io: `cargo install cargo-mutants --locked`), sized for a 2-core
# machine: each run picks the functions and the tests that judge them.
#
#   bash scripts/mutants.sh            # pure cores, judged by the unit tests (~10 s a mutant)
#   bash scripts/mutants.sh --edges    # the I/O edges' safety-critical functions, judged by
#                                      # the unit tests and the integration suites that
#                                      # exercise them (~1 min a mutant; three groups)
#   bash scripts/mutants.sh --it       # every function of the I/O edge files, whole suite
#                                      # (minutes a mutant: a bigger machine or overnight)
#
# Results go to mutants.out/ (or mutants-<group>.out/ for --edges); each
# survivor is either killed by a new test or named in RELIABILITY.md as
# equivalent, with the reason.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo-mutants >/dev/null || cargo install cargo-mutants --locked

cores=(--file src/state/ledger.rs --file src/identity/delivery.rs --file src/hosts/codex.rs
  --file src/identity/decision.rs --file src/identity/caller.rs --file src/identity/mcp_call.rs)

# One --edges group: name, test-name filters (lib and `it` alike), the
# functions (a regex over cargo-mutants' mutant names), the files.
edge_group() {
  local name=$1 tests=$2 fns=$3
  shift 3
  cargo mutants "$@" --re "(in|replace) ($fns)( |\$)" --timeout 300 -j 1 -o "mutants-$name.out" \
    -- --lib --test it -- $tests
}

case "${1:-}" in
  --edges)
    # The ledger's confirmations and its questions of the journal.
    edge_group ledger "ledger digest" \
      "Digest::(acks_after|latest_delivery|compacted_after|exact_at)|Reader::for_claims_from|ReadPath::(ledger_caller|record_delivery|stub|ledger_decide|deliver)|post_tool_batch_acks|post_tool_use_ack" \
      --file "src/state/digest/*.rs" --file src/identity/stub.rs --file src/hosts/claude.rs
    # The journal's trim and floor, and the view's ledger questions.
    edge_group trim "journal ledger digest trim" \
      "trim|trim::latest|ledger_kept|View<'a>::(acks_after|latest_delivery|compacted_after|last_compaction)" \
      --file "src/state/journal/*.rs"
    # The read path's decisions (the journal read after the slot, facts, delivery labels).
    edge_group readpath "readpath decision sim::" \
      "ReadPath::(with_journal|decide_for|decide_given|delivery_scope|decide_resolved|facts_of)|slot_dependent" \
      --file "src/identity/readpath/*.rs"
    ;;
  --it)
    exec cargo mutants "${cores[@]}" --file "src/state/journal/*.rs" --file "src/state/digest/*.rs" \
      --file "src/identity/readpath/*.rs" --file src/identity/stub.rs --timeout 600 -j 1
    ;;
  "")
    exec cargo mutants "${cores[@]}" --timeout 120 -j 1 -- --lib
    ;;
  *)
    echo "usage: bash scripts/mutants.sh [--edges | --it]" >&2
    exit 2
    ;;
esac
