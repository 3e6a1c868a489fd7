#!/usr/bin/env bash
# The cross-platform part of CI (called by .ci/run after the Linux suite):
#   macOS   clippy for aarch64-apple-darwin and x86_64-apple-darwin (type
#           check and lints only: no Apple linker here, nothing runs);
#   Windows clippy for x86_64-pc-windows-gnu, a mingw-w64 build, the test
#           suite's platform-independent part under Wine, an end-to-end
#           smoke (ci/windows-smoke.sh), and a parse of installers/install.ps1.
# Installs what it needs (apt-get, rustup target add). Wine is not Windows:
# what differs is in README.md ("Platforms") and in the tests that say so.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
root=$(pwd)

echo "== cross: toolchains"
rustup target add x86_64-pc-windows-gnu aarch64-apple-darwin x86_64-apple-darwin
need=()
command -v x86_64-w64-mingw32-gcc >/dev/null || need+=(gcc-mingw-w64-x86-64)
command -v wine >/dev/null || need+=(wine64 wine)
python3 -c 'import ensurepip' 2>/dev/null || need+=(python3-venv)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"
fi

echo "== cross: clippy (macOS, Windows)"
for t in aarch64-apple-darwin x86_64-apple-darwin x86_64-pc-windows-gnu; do
  echo "-- $t"
  cargo clippy --locked --target "$t" --all-targets -- -D warnings
done

echo "== cross: Windows build (mingw-w64)"
cargo build --locked --target x86_64-pc-windows-gnu

echo "== cross: the ProcessPrng shim Wine 8 lacks (ci/wine/bcryptprimitives.c)"
mkdir -p target/wine
x86_64-w64-mingw32-gcc -shared -O2 -o target/wine/bcryptprimitives.dll ci/wine/bcryptprimitives.c -lbcrypt
export LEANCTX_WINE_SHIM="$root/target/wine/bcryptprimitives.dll"
export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER="$root/ci/wine/runner.sh"
export WINEPREFIX="$root/target/wine/prefix"
export WINEDEBUG=-all
# One wineserver for the whole run (each .exe would otherwise start one).
wineboot -i >/dev/null 2>&1 || true
wineserver -p 600 || true
trap 'wineserver -k 2>/dev/null || true' EXIT

echo "== cross: Windows tests under Wine (library, then the portable integration tests)"
cargo test --locked --target x86_64-pc-windows-gnu --lib
# tests/it: the portable modules (each Unix-only test is #[cfg(unix)] in the
# source, as are the two simulations; fuzz is portable but too slow under
# Wine; see README "Platforms"). `ledger::` would also match `sim_ledger::`,
# which is skipped; `install::` also matches `serverinstall::`, the MCP server
# registration, whose tests expect each platform's own paths and quoting.
cargo test --locked --target x86_64-pc-windows-gnu --test it -- --test-threads 4 \
  hooks:: readpath:: ledger:: gate:: install:: newuser:: clock:: rng:: --skip sim_ledger::

echo "== cross: installers/install.ps1 parses (tree-sitter-powershell, from PyPI; no PowerShell here)"
python3 -m venv target/ps1-venv
target/ps1-venv/bin/pip install -q tree-sitter==0.26.1 tree-sitter-powershell==0.26.4
target/ps1-venv/bin/python ci/ps1_syntax.py installers/install.ps1

echo "== cross: Windows end-to-end smoke under Wine"
bash ci/windows-smoke.sh "$root/target/x86_64-pc-windows-gnu/debug/leanctx.exe"
