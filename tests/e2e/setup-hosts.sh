#!/usr/bin/env bash
# Install the pinned host CLIs (Claude Code, Codex) into a local npm prefix.
#
#   bash tests/e2e/setup-hosts.sh          # installs into $E2E_HOSTS_DIR (default <repo>/target/e2e-hosts)
#
# Prints two lines on stdout:
#   CLAUDE_BIN=/abs/path/to/claude
#   CODEX_BIN=/abs/path/to/codex
# Idempotent: if both pinned versions are already installed it does nothing but print the paths.
# Exits non-zero with a message on stderr if the install fails.
set -euo pipefail

CLAUDE_PKG="@anthropic-ai/claude-code"
CLAUDE_VERSION="2.1.328"
CODEX_PKG="@openai/codex"
CODEX_VERSION="0.169.0"

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
PREFIX="${E2E_HOSTS_DIR:-$REPO/target/e2e-hosts}"
NPM_TIMEOUT="${E2E_NPM_TIMEOUT:-540}"

die() { echo "setup-hosts.sh: ERROR: $*" >&2; exit 1; }

command -v node >/dev/null 2>&1 || die "node not found on PATH (need node >= 18)"
command -v npm >/dev/null 2>&1 || die "npm not found on PATH"

mkdir -p "$PREFIX" || die "cannot create $PREFIX"
PREFIX="$(cd "$PREFIX" && pwd)"
CLAUDE_BIN="$PREFIX/node_modules/.bin/claude"
CODEX_BIN="$PREFIX/node_modules/.bin/codex"

# Version of an installed package, read from its package.json (no process start of the CLI itself).
installed_version() {
  local pj="$PREFIX/node_modules/$1/package.json"
  [ -f "$pj" ] || { echo ""; return; }
  node -e 'try{process.stdout.write(require(process.argv[1]).version||"")}catch(e){}' "$pj"
}

is_ok() {
  [ "$(installed_version "$CLAUDE_PKG")" = "$CLAUDE_VERSION" ] &&
  [ "$(installed_version "$CODEX_PKG")" = "$CODEX_VERSION" ] &&
  [ -x "$CLAUDE_BIN" ] && [ -x "$CODEX_BIN" ]
}

if ! is_ok; then
  echo "setup-hosts.sh: installing $CLAUDE_PKG@$CLAUDE_VERSION and $CODEX_PKG@$CODEX_VERSION into $PREFIX" >&2
  # A private package.json keeps npm from walking up into the repo.
  [ -f "$PREFIX/package.json" ] || echo '{"name":"leanctx-e2e-hosts","private":true}' > "$PREFIX/package.json"
  if ! timeout "$NPM_TIMEOUT" npm install --prefix "$PREFIX" --no-audit --no-fund --no-save \
        --loglevel=error "$CLAUDE_PKG@$CLAUDE_VERSION" "$CODEX_PKG@$CODEX_VERSION" >&2; then
    die "npm install of $CLAUDE_PKG@$CLAUDE_VERSION / $CODEX_PKG@$CODEX_VERSION into $PREFIX failed (see npm output above)"
  fi
  is_ok || die "after npm install: expected $CLAUDE_PKG=$CLAUDE_VERSION (found '$(installed_version "$CLAUDE_PKG")') and $CODEX_PKG=$CODEX_VERSION (found '$(installed_version "$CODEX_PKG")'), bins $CLAUDE_BIN $CODEX_BIN"
fi

# Quick smoke check that the binaries start (bounded in time; no network needed for --version).
# Run with a throw-away HOME/CODEX_HOME so nothing is written into the real home directory.
SMOKE_HOME="$(mktemp -d "${TMPDIR:-/tmp}/e2e-hosts-smoke.XXXXXX")"
trap 'rm -rf "$SMOKE_HOME"' EXIT
export HOME="$SMOKE_HOME" CODEX_HOME="$SMOKE_HOME/.codex" CLAUDE_CODE_TMPDIR="$SMOKE_HOME/tmp"
mkdir -p "$CODEX_HOME" "$CLAUDE_CODE_TMPDIR"
cv="$(DISABLE_AUTOUPDATER=1 timeout 60 "$CLAUDE_BIN" --version 2>&1 </dev/null || true)"
case "$cv" in *"$CLAUDE_VERSION"*) ;; *) die "$CLAUDE_BIN --version did not report $CLAUDE_VERSION: $cv";; esac
xv="$(timeout 60 "$CODEX_BIN" --version 2>&1 </dev/null || true)"
case "$xv" in *"$CODEX_VERSION"*) ;; *) die "$CODEX_BIN --version did not report $CODEX_VERSION: $xv";; esac

echo "CLAUDE_BIN=$CLAUDE_BIN"
echo "CODEX_BIN=$CODEX_BIN"
