#!/usr/bin/env bash
# Cargo's runner for x86_64-pc-windows-gnu under Wine
# (CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER=ci/wine/runner.sh).
#
# Wine 8.0 has no ProcessPrng, which every Rust .exe imports from
# bcryptprimitives.dll: the shim built from bcryptprimitives.c goes next to
# the .exe being run and next to the leanctx.exe the tests spawn (a test
# binary lives in target/<triple>/debug/deps/, leanctx.exe one dir up).
# Windows looks for a DLL in the .exe's own dir first.
set -euo pipefail
exe=$1
shift
dll=${LEANCTX_WINE_SHIM:?LEANCTX_WINE_SHIM must name the built bcryptprimitives.dll}
dir=$(dirname "$exe")
for d in "$dir" "$dir/.."; do
  if [ -d "$d" ] && ! cmp -s "$dll" "$d/bcryptprimitives.dll"; then
    cp "$dll" "$d/bcryptprimitives.dll"
  fi
done
export WINEDEBUG=${WINEDEBUG:--all}
exec wine "$exe" "$@"
