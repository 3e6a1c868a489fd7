#!/bin/sh
# leanctx set-up: build and install the binary, then its hooks and its MCP
# server (`leanctx serve`) for every host found on this machine (or the
# hosts named). Safe to run again: the binary is replaced, entries already
# in place are left as they are.
set -eu

usage() {
    cat <<'USAGE'
usage: installers/install.sh [options] [host...]

  host          cursor, claude-code, codex or codebuddy; default: every host
                found here: its program on PATH (cursor or cursor-agent, claude,
                codex, codebuddy), or its config dir with something in it
                (~/.cursor, ~/.claude or $CLAUDE_CONFIG_DIR, ~/.codex or
                $CODEX_HOME, ~/.codebuddy or $CODEBUDDY_CONFIG_DIR)
  --prefix DIR  install the binary as DIR/bin/leanctx (default: where
                `cargo install` puts it: $CARGO_INSTALL_ROOT, else
                $CARGO_HOME, else ~/.cargo)
  --binary PATH install this already built binary instead of building one
                (same as LEANCTX_BIN=PATH)
  --no-build    use the leanctx already on your PATH as it is (the hooks run it
                where it is); also what happens when cargo is missing and a
                leanctx is on PATH
  --create      create a named host's config dir if it does not exist yet
                (the host is not installed yet, or keeps its config elsewhere)
  --dry-run     show what would change, change nothing (no install, no copy;
                with no leanctx anywhere yet, this checkout is built in its
                target dir first, to compute the change)
  --no-server   hooks only: do not register (or, with --uninstall, remove)
                \`leanctx serve\` as each host's MCP server
  --uninstall   remove leanctx's hook entries; then says what stays (the
                binary, the backups of your configs, leanctx's data dir) and
                how to remove each
  -h, --help    this text
USAGE
}

die() {
    echo "install.sh: $*" >&2
    exit 1
}

repo=$(cd "$(dirname "$0")/.." && pwd)
# Where `cargo install` itself would put it (its --root, else
# CARGO_INSTALL_ROOT, else CARGO_HOME, else ~/.cargo).
prefix=${CARGO_INSTALL_ROOT:-${CARGO_HOME:-${HOME:?HOME is not set}/.cargo}}
binary=${LEANCTX_BIN:-}
uninstall=0
dry_run=
create=
no_server=
no_build=0
hosts=

while [ $# -gt 0 ]; do
    case $1 in
        --prefix) [ $# -ge 2 ] || { usage >&2; exit 2; }; prefix=$2; shift ;;
        --prefix=*) prefix=${1#--prefix=} ;;
        --binary) [ $# -ge 2 ] || { usage >&2; exit 2; }; binary=$2; shift ;;
        --binary=*) binary=${1#--binary=} ;;
        --uninstall) uninstall=1 ;;
        --dry-run) dry_run=--dry-run ;;
        --create) create=--create ;;
        --no-server) no_server=--no-server ;;
        --no-build) no_build=1 ;;
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

on_path=$(command -v leanctx 2>/dev/null || true)
case $on_path in
    /*) ;;
    *) on_path= ;;
esac

if [ "$uninstall" = 1 ]; then
    # Any leanctx can remove the entries: they are recognised by program.
    if [ -x "$bin" ]; then
        run=$bin
    elif [ -n "$binary" ]; then
        run=$binary
    elif [ -n "$on_path" ]; then
        run=$on_path
    else
        die "no leanctx binary found to remove the hooks with (build one, or pass --binary PATH)"
    fi
    # One run for every host. leanctx's own "the binary stays" line is left
    # out: the summary below says what stays, with the right paths.
    # shellcheck disable=SC2086
    out=$("$run" hooks uninstall $dry_run ${hosts:-$all_hosts}) || failed=1
    while IFS= read -r line; do
        case $line in
            *"the leanctx binary stays"*) ;;
            *) printf '%s\n' "$line" ;;
        esac
    done <<EOF
$out
EOF
    if [ -z "$dry_run" ]; then
        echo
        echo "What stays (remove it yourself if you want):"
        if [ -x "$bin" ]; then
            cargo_made=
            if [ -f "$prefix/.crates.toml" ]; then
                while IFS= read -r l; do
                    case $l in *leanctx*) cargo_made=1 ;; esac
                done <"$prefix/.crates.toml"
            fi
            if [ -n "$cargo_made" ]; then
                echo "  the binary $bin: cargo uninstall --root '$prefix' leanctx"
            else
                echo "  the binary $bin: rm '$bin'"
            fi
        elif [ -n "$on_path" ]; then
            echo "  the binary $on_path: rm '$on_path' (or cargo uninstall leanctx, if cargo installed it)"
        fi
        # The config as it was before leanctx first changed it (kept once,
        # never overwritten: after an uninstall your config is already back).
        # HOME holds Claude Code's and CodeBuddy's MCP server files
        # (~/.claude.json, ~/.codebuddy.json), dotfiles like Claude's in
        # $CLAUDE_CONFIG_DIR: `*` alone does not match a leading dot.
        for d in "$HOME/.cursor" "${CLAUDE_CONFIG_DIR:-$HOME/.claude}" "${CODEX_HOME:-$HOME/.codex}" \
            "${CODEBUDDY_CONFIG_DIR:-$HOME/.codebuddy}" "$HOME"; do
            for f in "$d"/*.leanctx.bak "$d"/.*.leanctx.bak; do
                if [ -e "$f" ]; then echo "  a backup of your config from before leanctx's first change: $f"; fi
            done
        done
        # The data dir, as leanctx finds it (README "State").
        data=${LEAN_CTX_DATA_DIR:-}
        if [ -z "$data" ]; then
            if [ -d "$HOME/.lean-ctx" ]; then data=$HOME/.lean-ctx
            elif [ -d "$HOME/Library/Application Support/lean-ctx" ]; then data="$HOME/Library/Application Support/lean-ctx"
            else data=${XDG_DATA_HOME:-$HOME/.local/share}/lean-ctx
            fi
        fi
        if [ -d "$data/" ]; then
            echo "  leanctx's state (ids, hashes, times; shared with lean-ctx if you use it): $data"
        fi
    fi
    exit "$failed"
fi

# Which binary the hooks will run.
if [ -n "$binary" ]; then
    [ -f "$binary" ] && [ -x "$binary" ] || die "--binary $binary is not an executable file"
    mode=copy
    source="copy $binary to $bin"
elif [ "$no_build" = 1 ] || { ! command -v cargo >/dev/null 2>&1 && [ -n "$on_path" ]; }; then
    [ -n "$on_path" ] || die "--no-build: no leanctx on your PATH"
    bin=$on_path
    mode=path
    source="use the leanctx on your PATH, $bin (not rebuilt)"
else
    command -v cargo >/dev/null 2>&1 || die "cargo not found: install Rust (https://rustup.rs) or pass --binary PATH"
    mode=build
    source="build this checkout and install it as $bin"
fi

if [ -n "$dry_run" ]; then
    echo "dry run: would $source"
    # The diff shows the path the hooks would run; any leanctx can compute it.
    if [ -x "$bin" ]; then run=$bin
    elif [ -n "$binary" ]; then run=$binary
    elif [ -n "$on_path" ]; then run=$on_path
    elif command -v cargo >/dev/null 2>&1; then
        # A first install: build this checkout where cargo builds (nothing
        # is installed) and compute the change with that.
        echo "dry run: building this checkout to compute the change (cargo build; nothing is installed)"
        cargo build --locked --quiet --manifest-path "$repo/Cargo.toml" || die "cargo build failed"
        run=${CARGO_TARGET_DIR:-$repo/target}/debug/leanctx
        case $run in /*) ;; *) run=$repo/$run ;; esac
    else die "--dry-run needs a leanctx to compute the change with, or cargo to build one (or pass --binary PATH)"
    fi
    LEANCTX_HOOK_BINARY=$bin
    export LEANCTX_HOOK_BINARY
elif [ "$mode" = copy ]; then
    mkdir -p "$prefix/bin"
    # Copy then rename: a hook running the old binary right now keeps it.
    tmp=$prefix/bin/.leanctx.tmp.$$
    cp "$binary" "$tmp"
    chmod 755 "$tmp"
    mv -f "$tmp" "$bin"
    echo "installed $bin (from $binary)"
    run=$bin
elif [ "$mode" = path ]; then
    echo "using $bin (the leanctx on your PATH; not rebuilt)"
    run=$bin
else
    # Linux with glibc: linked statically (static-pie), which starts each
    # hook and CLI read ~0.4 ms (22-28 %) faster than the dynamic build: no
    # dynamic loader (benches/README.md, ninth pass, the process start).
    # Passed here for the host triple named with --target, not in
    # .cargo/config.toml: without --target cargo applies a target's
    # rustflags to the proc macros too, which cannot be linked statically
    # ("cannot produce proc-macro").
    # RUSTFLAGS or CARGO_ENCODED_RUSTFLAGS, when set (even set empty), take
    # the place of this flag (cargo's rule): the binary is then dynamic unless
    # they ask for crt-static themselves, and works the same.
    triple=$(rustc -vV 2>/dev/null | sed -n 's/^host: //p')
    case $triple in
        x86_64-unknown-linux-gnu | aarch64-unknown-linux-gnu)
            set -- --target "$triple" --config "target.$triple.rustflags=[\"-C\", \"target-feature=+crt-static\"]"
            if [ -n "${RUSTFLAGS+set}${CARGO_ENCODED_RUSTFLAGS+set}" ]; then
                case "${RUSTFLAGS:-}${CARGO_ENCODED_RUSTFLAGS:-}" in
                    *+crt-static*) ;;
                    *) echo "note: RUSTFLAGS (or CARGO_ENCODED_RUSTFLAGS) is set: cargo uses it instead of the static link flag, so leanctx is linked dynamically (it works the same, each hook starts slower)" ;;
                esac
            fi ;;
        *) set -- ;;
    esac
    # --force: a path install is rebuilt and replaced every time, so a
    # second run after a pull really updates the binary.
    cargo install --path "$repo" --locked --force --root "$prefix" "$@"
    run=$bin
fi

if [ -z "$dry_run" ]; then
    # The hooks run the binary by absolute path, so PATH only matters to you.
    case :${PATH}: in
        *:"$(dirname "$bin")":*) ;;
        *) echo "note: $(dirname "$bin") is not on your PATH; the hooks work anyway (they use the full path)" ;;
    esac
    if [ -n "$on_path" ] && [ "$on_path" != "$bin" ]; then
        echo "note: \`leanctx\` on your PATH is $on_path, not $bin (the one the hooks run)"
    fi
fi

echo
done_hosts=
skipped=
skipped_why=
nl='
'
failed_hosts=
if [ -n "$hosts" ]; then
    for h in $hosts; do
        # shellcheck disable=SC2086
        if "$run" hooks install $dry_run $create $no_server "$h"; then
            done_hosts="$done_hosts $h"
        else
            failed=1
            failed_hosts="$failed_hosts $h"
        fi
    done
else
    for h in $all_hosts; do
        # shellcheck disable=SC2086
        if out=$("$run" hooks install $dry_run $no_server --if-present "$h"); then
            printf '%s\n' "$out"
            case $out in
                *": skipped: "*)
                    skipped="$skipped $h"
                    why=${out#*": skipped: "}
                    why=${why%%"$nl"*}
                    skipped_why="$skipped_why
    $h: $why" ;;
                *) done_hosts="$done_hosts $h" ;;
            esac
        else
            printf '%s\n' "$out"
            failed=1
            failed_hosts="$failed_hosts $h"
        fi
    done
fi

echo
echo "Summary"
[ -n "$dry_run" ] && echo "  dry run: nothing was changed"
echo "  binary:    $bin"
echo "  hooks for:${done_hosts:- none}"
if [ -n "$done_hosts" ] && [ -z "$no_server" ] && "$run" serve --help >/dev/null 2>&1; then
    echo "  MCP server: $bin serve, registered for the same hosts (tools mcp__leanctx__*)"
fi
if [ -n "$skipped" ]; then
    echo "  not found:$skipped (name a host with --create to install it anyway)$skipped_why"
fi
[ -n "$failed_hosts" ] && echo "  failed:   $failed_hosts (see the messages above)"
if [ -z "$done_hosts" ] && [ -z "$failed_hosts" ]; then
    echo "  No host was found on this machine. Install Cursor, Claude Code, Codex CLI or CodeBuddy Code"
    echo "  first, or name one: bash installers/install.sh --create claude-code"
fi
if [ -n "$done_hosts" ] && [ -z "$dry_run" ]; then
    echo "Next: start a new chat in your assistant and work as usual, then check with: $bin status"
fi
exit "$failed"
