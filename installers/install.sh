#!/bin/sh
# leanctx set-up: build and install the binary, then its hooks for every
# host found on this machine (or the hosts named). Safe to run again: the
# binary is replaced, hooks already in place are left as they are.
set -eu

usage() {
    cat <<'USAGE'
usage: installers/install.sh [options] [host...]

  host          cursor, claude-code, codex or codebuddy; default: every host
                whose config dir exists (~/.cursor, ~/.claude or $CLAUDE_CONFIG_DIR,
                ~/.codex or $CODEX_HOME, ~/.codebuddy or $CODEBUDDY_CONFIG_DIR)
  --prefix DIR  install the binary as DIR/bin/leanctx (default: ${CARGO_HOME:-~/.cargo})
  --binary PATH install this already built binary instead of building one
                (same as LEANCTX_BIN=PATH)
  --uninstall   remove leanctx's hook entries (the binary stays; the script
                says how to remove it)
  -h, --help    this text
USAGE
}

die() {
    echo "install.sh: $*" >&2
    exit 1
}

repo=$(cd "$(dirname "$0")/.." && pwd)
prefix=${CARGO_HOME:-${HOME:?HOME is not set}/.cargo}
binary=${LEANCTX_BIN:-}
uninstall=0
hosts=

while [ $# -gt 0 ]; do
    case $1 in
        --prefix) [ $# -ge 2 ] || { usage >&2; exit 2; }; prefix=$2; shift ;;
        --prefix=*) prefix=${1#--prefix=} ;;
        --binary) [ $# -ge 2 ] || { usage >&2; exit 2; }; binary=$2; shift ;;
        --binary=*) binary=${1#--binary=} ;;
        --uninstall) uninstall=1 ;;
        -h | --help) usage; exit 0 ;;
        cursor | claude-code | claude | codex | codebuddy) hosts="$hosts $1" ;;
        *) echo "install.sh: unknown argument: $1" >&2; usage >&2; exit 2 ;;
    esac
    shift
done

case $prefix in
    /*) ;;
    *) prefix=$(pwd)/$prefix ;;
esac
bin=$prefix/bin/leanctx
all_hosts="cursor claude-code codex codebuddy"
failed=0

if [ "$uninstall" = 1 ]; then
    # Any leanctx can remove the entries: they are recognised by program.
    if [ -x "$bin" ]; then
        run=$bin
    elif [ -n "$binary" ]; then
        run=$binary
    elif command -v leanctx >/dev/null 2>&1; then
        run=leanctx
    else
        die "no leanctx binary found to remove the hooks with (build one, or pass --binary PATH)"
    fi
    for h in ${hosts:-$all_hosts}; do
        "$run" hooks uninstall "$h" || failed=1
    done
    echo
    echo "Hooks removed. The binary stays: remove it with"
    echo "  cargo uninstall --root '$prefix' leanctx    (if cargo installed it), or"
    echo "  rm '$bin'"
    exit "$failed"
fi

if [ -n "$binary" ]; then
    [ -f "$binary" ] && [ -x "$binary" ] || die "--binary $binary is not an executable file"
    mkdir -p "$prefix/bin"
    # Copy then rename: a hook running the old binary right now keeps it.
    tmp=$prefix/bin/.leanctx.tmp.$$
    cp "$binary" "$tmp"
    chmod 755 "$tmp"
    mv -f "$tmp" "$bin"
    echo "installed $bin (from $binary)"
else
    command -v cargo >/dev/null 2>&1 || die "cargo not found: install Rust (https://rustup.rs) or pass --binary PATH"
    # --force: a path install is rebuilt and replaced every time, so a
    # second run after a pull really updates the binary.
    cargo install --path "$repo" --locked --force --root "$prefix"
fi

# The hooks run the binary by absolute path, so PATH only matters to you.
case :${PATH}: in
    *:"$prefix/bin":*) ;;
    *) echo "note: $prefix/bin is not on your PATH; the hooks work anyway (they use the full path)" ;;
esac

echo
if [ -n "$hosts" ]; then
    for h in $hosts; do
        "$bin" hooks install "$h" || failed=1
    done
else
    for h in $all_hosts; do
        "$bin" hooks install --if-present "$h" || failed=1
    done
fi
echo
echo "Check with: $bin hooks status"
exit "$failed"
