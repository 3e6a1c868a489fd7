#!/usr/bin/env bash
# Mutation testing of the safety-critical pure cores with cargo-mutants
# (crates.io: `cargo install cargo-mutants --locked`). Each mutant is built
# and judged by the library's unit tests, which hold the decision tables:
# fast enough for a 2-core machine (about 10 s a mutant). The I/O edges
# (journal trim, digest, read path, hooks) are judged by the integration
# suite, which takes minutes a mutant: run those with `--it` on a bigger
# machine or overnight.
#
#   bash scripts/mutants.sh            # pure cores, unit tests
#   bash scripts/mutants.sh --it       # + journal, digest, read path, stub, identity: whole suite
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo-mutants >/dev/null || cargo install cargo-mutants --locked
files=(--file src/state/ledger.rs --file src/identity/delivery.rs --file src/hosts/codex.rs --file src/identity/decision.rs --file src/identity/caller.rs --file src/identity/mcp_call.rs)
if [ "${1:-}" = "--it" ]; then
  files+=(--file "src/state/journal/*.rs" --file "src/state/digest/*.rs" --file "src/identity/readpath/*.rs" --file src/identity/stub.rs)
  exec cargo mutants "${files[@]}" --timeout 600 -j 1
fi
exec cargo mutants "${files[@]}" --timeout 120 -j 1 -- --lib
