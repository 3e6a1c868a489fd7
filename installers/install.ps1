# leanctx set-up for Windows (the counterpart of installers/install.sh):
# build and install the binary, then its hooks and its MCP server
# (`leanctx serve`) for every host found on this machine (or the hosts
# named). Safe to run again: the binary is replaced, entries already in
# place are left as they are.
#
#   powershell -ExecutionPolicy Bypass -File installers\install.ps1 [options] [host...]
#
# Not run on Windows by CI (no PowerShell there): what was verified where is
# in README.md ("Platforms").
# Named options only: every bare word is a host.
[CmdletBinding(PositionalBinding = $false)]
param(
    # cursor, claude-code (claude), codex or codebuddy; default: every host
    # found here (its program on PATH, or its config dir with something in it).
    [Parameter(ValueFromRemainingArguments = $true)]
    [string[]] $Hosts = @(),
    # Install the binary as <Prefix>\bin\leanctx.exe (default: where
    # `cargo install` puts it: $env:CARGO_INSTALL_ROOT, else $env:CARGO_HOME,
    # else ~\.cargo).
    [string] $Prefix = "",
    # Install this already built leanctx.exe instead of building one
    # (same as $env:LEANCTX_BIN).
    [string] $Binary = $env:LEANCTX_BIN,
    # Use the leanctx.exe already on PATH as it is.
    [switch] $NoBuild,
    # Create a named host's config dir if it does not exist yet.
    [switch] $Create,
    # Show what would change, change nothing (with no leanctx anywhere yet,
    # this checkout is built in its target dir first, to compute the change).
    [switch] $DryRun,
    # Remove leanctx's hook entries, then say what stays and how to remove it.
    [switch] $Uninstall,
    # Hooks only: do not register (or remove) `leanctx serve` as each host's MCP server.
    [switch] $NoServer,
    [switch] $Help
)

$ErrorActionPreference = "Stop"

function Show-Usage {
    @"
usage: installers\install.ps1 [-Prefix DIR] [-Binary PATH] [-NoBuild] [-Create]
                              [-DryRun] [-Uninstall] [-NoServer] [host...]

  host       cursor, claude-code, codex or codebuddy; default: every host found
             here: its program on PATH (cursor or cursor-agent, claude, codex,
             codebuddy), or its config dir with something in it (~\.cursor,
             ~\.claude or `$env:CLAUDE_CONFIG_DIR, ~\.codex or `$env:CODEX_HOME,
             ~\.codebuddy or `$env:CODEBUDDY_CONFIG_DIR)
  -Prefix    install the binary as DIR\bin\leanctx.exe (default: where
             cargo install puts it: `$env:CARGO_INSTALL_ROOT, else
             `$env:CARGO_HOME, else ~\.cargo)
  -Binary    install this already built leanctx.exe instead of building one
             (same as `$env:LEANCTX_BIN)
  -NoBuild   use the leanctx.exe on your PATH as it is (the hooks run it where
             it is); also what happens when cargo is missing and one is on PATH
  -Create    create a named host's config dir if it does not exist yet
  -DryRun    show what would change, change nothing (no install, no copy; with
             no leanctx anywhere yet, this checkout is built in its target dir
             first, to compute the change)
  -NoServer  hooks only: do not register (or, with -Uninstall, remove)
             leanctx serve as each host's MCP server
  -Uninstall remove leanctx's hook entries; then says what stays (the binary,
             the backups of your configs, leanctx's data dir) and how to
             remove each
"@
}

function Stop-Install([string] $msg) {
    [Console]::Error.WriteLine("install.ps1: $msg")
    exit 1
}

if ($Help) { Show-Usage; exit 0 }

$known = @("cursor", "claude-code", "claude", "codex", "codebuddy")
foreach ($h in $Hosts) {
    if ($known -notcontains $h) {
        [Console]::Error.WriteLine("install.ps1: unknown argument: $h")
        Show-Usage
        exit 2
    }
}

$repo = (Resolve-Path (Join-Path $PSScriptRoot "..")).Path
# Where `cargo install` itself would put it (its --root, else
# CARGO_INSTALL_ROOT, else CARGO_HOME, else ~\.cargo).
if (-not $Prefix) {
    if ($env:CARGO_INSTALL_ROOT) { $Prefix = $env:CARGO_INSTALL_ROOT }
    elseif ($env:CARGO_HOME) { $Prefix = $env:CARGO_HOME }
    else { $Prefix = Join-Path $HOME ".cargo" }
}
$Prefix = [System.IO.Path]::GetFullPath($Prefix)
$bin = Join-Path (Join-Path $Prefix "bin") "leanctx.exe"
$allHosts = @("cursor", "claude-code", "codex", "codebuddy")
$failed = 0

$onPath = $null
$found = Get-Command leanctx.exe -CommandType Application -ErrorAction SilentlyContinue | Select-Object -First 1
if ($found) { $onPath = $found.Source }
$haveCargo = [bool](Get-Command cargo -ErrorAction SilentlyContinue)

$common = @()
if ($DryRun) { $common += "--dry-run" }
if ($NoServer) { $common += "--no-server" }

if ($Uninstall) {
    # Any leanctx can remove the entries: they are recognised by program.
    if (Test-Path -LiteralPath $bin -PathType Leaf) { $run = $bin }
    elseif ($Binary) { $run = $Binary }
    elseif ($onPath) { $run = $onPath }
    else { Stop-Install "no leanctx binary found to remove the hooks with (build one, or pass -Binary PATH)" }
    $targets = if ($Hosts.Count -gt 0) { $Hosts } else { $allHosts }
    # One run for every host. leanctx's own "the binary stays" line is left
    # out: the summary below says what stays, with the right paths.
    $out = @(& $run hooks uninstall @common @targets)
    if ($LASTEXITCODE -ne 0) { $failed = 1 }
    $out | Where-Object { $_ -notlike "*the leanctx binary stays*" } | ForEach-Object { Write-Output $_ }
    if (-not $DryRun) {
        Write-Output ""
        Write-Output "What stays (remove it yourself if you want):"
        if (Test-Path -LiteralPath $bin -PathType Leaf) {
            $crates = Join-Path $Prefix ".crates.toml"
            $cargoMade = (Test-Path -LiteralPath $crates -PathType Leaf) -and
                ((Get-Content -LiteralPath $crates -Raw) -match "leanctx")
            if ($cargoMade) {
                Write-Output "  the binary ${bin}: cargo uninstall --root `"$Prefix`" leanctx"
            }
            else {
                Write-Output "  the binary ${bin}: Remove-Item `"$bin`""
            }
        }
        elseif ($onPath) {
            Write-Output "  the binary ${onPath}: Remove-Item `"$onPath`" (or cargo uninstall leanctx, if cargo installed it)"
        }
        # The config as it was before leanctx first changed it (kept once,
        # never overwritten: after an uninstall your config is already back).
        $dirs = @(
            (Join-Path $HOME ".cursor"),
            $(if ($env:CLAUDE_CONFIG_DIR) { $env:CLAUDE_CONFIG_DIR } else { Join-Path $HOME ".claude" }),
            $(if ($env:CODEX_HOME) { $env:CODEX_HOME } else { Join-Path $HOME ".codex" }),
            $(if ($env:CODEBUDDY_CONFIG_DIR) { $env:CODEBUDDY_CONFIG_DIR } else { Join-Path $HOME ".codebuddy" }),
            # Claude Code's and CodeBuddy's MCP servers live in the home dir.
            $HOME
        )
        foreach ($d in ($dirs | Select-Object -Unique)) {
            if (Test-Path -LiteralPath $d -PathType Container) {
                Get-ChildItem -LiteralPath $d -Force -Filter "*.leanctx.bak" -ErrorAction SilentlyContinue | ForEach-Object {
                    Write-Output "  a backup of your config from before leanctx's first change: $($_.FullName)"
                }
            }
        }
        # The data dir, as leanctx finds it (README "State").
        $data = $env:LEAN_CTX_DATA_DIR
        if (-not $data) {
            $legacy = Join-Path $HOME ".lean-ctx"
            if (Test-Path -LiteralPath $legacy -PathType Container) { $data = $legacy }
            else { $data = Join-Path ([Environment]::GetFolderPath("LocalApplicationData")) "lean-ctx" }
        }
        if (Test-Path -LiteralPath $data -PathType Container) {
            Write-Output "  leanctx's state (ids, hashes, times; shared with lean-ctx if you use it): $data"
        }
    }
    exit $failed
}

# Which binary the hooks will run.
if ($Binary) {
    if (-not (Test-Path -LiteralPath $Binary -PathType Leaf)) { Stop-Install "-Binary $Binary is not a file" }
    $mode = "copy"
    $source = "copy $Binary to $bin"
}
elseif ($NoBuild -or (-not $haveCargo -and $onPath)) {
    if (-not $onPath) { Stop-Install "-NoBuild: no leanctx.exe on your PATH" }
    $bin = $onPath
    $mode = "path"
    $source = "use the leanctx.exe on your PATH, $bin (not rebuilt)"
}
else {
    if (-not $haveCargo) { Stop-Install "cargo not found: install Rust (https://rustup.rs) or pass -Binary PATH" }
    $mode = "build"
    $source = "build this checkout and install it as $bin"
}

if ($DryRun) {
    Write-Output "dry run: would $source"
    if (Test-Path -LiteralPath $bin -PathType Leaf) { $run = $bin }
    elseif ($Binary) { $run = $Binary }
    elseif ($onPath) { $run = $onPath }
    elseif ($haveCargo) {
        # A first install: build this checkout where cargo builds (nothing
        # is installed) and compute the change with that.
        Write-Output "dry run: building this checkout to compute the change (cargo build; nothing is installed)"
        & cargo build --locked --quiet --manifest-path (Join-Path $repo "Cargo.toml")
        if ($LASTEXITCODE -ne 0) { Stop-Install "cargo build failed" }
        $target = if ($env:CARGO_TARGET_DIR) { $env:CARGO_TARGET_DIR } else { Join-Path $repo "target" }
        if (-not [System.IO.Path]::IsPathRooted($target)) { $target = Join-Path $repo $target }
        $run = Join-Path (Join-Path $target "debug") "leanctx.exe"
    }
    else { Stop-Install "-DryRun needs a leanctx to compute the change with, or cargo to build one (or pass -Binary PATH)" }
    # The diff shows the path the hooks would run; any leanctx can compute it.
    $env:LEANCTX_HOOK_BINARY = $bin
}
elseif ($mode -eq "copy") {
    New-Item -ItemType Directory -Force -Path (Split-Path $bin) | Out-Null
    # Copy beside, then swap: a running leanctx.exe cannot be overwritten on
    # Windows, but it can be renamed, so a hook running now keeps its copy.
    $tmp = "$bin.new.$PID"
    Copy-Item -LiteralPath $Binary -Destination $tmp -Force
    if (Test-Path -LiteralPath $bin) {
        $old = "$bin.old.$PID"
        Move-Item -LiteralPath $bin -Destination $old -Force
        Remove-Item -LiteralPath $old -Force -ErrorAction SilentlyContinue
    }
    Move-Item -LiteralPath $tmp -Destination $bin -Force
    Write-Output "installed $bin (from $Binary)"
    $run = $bin
}
elseif ($mode -eq "path") {
    Write-Output "using $bin (the leanctx.exe on your PATH; not rebuilt)"
    $run = $bin
}
else {
    # --force: a path install is rebuilt and replaced every time.
    & cargo install --path $repo --locked --force --root $Prefix
    if ($LASTEXITCODE -ne 0) { Stop-Install "cargo install failed" }
    $run = $bin
}

if (-not $DryRun) {
    # The hooks run the binary by its full path, so PATH only matters to you.
    $binDir = Split-Path $bin
    $pathDirs = ($env:PATH -split ";") | ForEach-Object { $_.TrimEnd("\") }
    if ($pathDirs -notcontains $binDir.TrimEnd("\")) {
        Write-Output "note: $binDir is not on your PATH; the hooks work anyway (they use the full path)"
    }
    if ($onPath -and ($onPath -ne $bin)) {
        Write-Output "note: leanctx.exe on your PATH is $onPath, not $bin (the one the hooks run)"
    }
}

Write-Output ""
$doneHosts = @()
$skipped = @()
$skippedWhy = @()
$failedHosts = @()
if ($Hosts.Count -gt 0) {
    foreach ($h in $Hosts) {
        $extra = @()
        if ($Create) { $extra += "--create" }
        & $run hooks install @common @extra $h
        if ($LASTEXITCODE -eq 0) { $doneHosts += $h } else { $failed = 1; $failedHosts += $h }
    }
}
else {
    foreach ($h in $allHosts) {
        $lines = @(& $run hooks install @common --if-present $h)
        $code = $LASTEXITCODE
        $lines | ForEach-Object { Write-Output $_ }
        # leanctx says "<host>: skipped: <why>" for a host it did not find.
        $skip = $lines | Where-Object { $_ -like "*: skipped: *" } | Select-Object -First 1
        if ($code -ne 0) { $failed = 1; $failedHosts += $h }
        elseif ($skip) {
            $skipped += $h
            $skippedWhy += "    ${h}: " + $skip.Substring($skip.IndexOf(": skipped: ") + 11)
        }
        else { $doneHosts += $h }
    }
}

Write-Output ""
Write-Output "Summary"
if ($DryRun) { Write-Output "  dry run: nothing was changed" }
Write-Output "  binary:    $bin"
$list = if ($doneHosts.Count -gt 0) { $doneHosts -join " " } else { "none" }
Write-Output "  hooks for: $list"
if ($doneHosts.Count -gt 0 -and -not $NoServer) {
    # Only a binary that has `serve` registers it. Its stderr is dropped
    # with errors not stopping the script (Windows PowerShell 5.1 turns a
    # redirected native stderr line into an error record).
    $prev = $ErrorActionPreference
    $ErrorActionPreference = "Continue"
    & $run serve --help 2>&1 | Out-Null
    $hasServe = ($LASTEXITCODE -eq 0)
    $ErrorActionPreference = $prev
    if ($hasServe) {
        Write-Output "  MCP server: $bin serve, registered for the same hosts (tools mcp__leanctx__*)"
    }
}
if ($skipped.Count -gt 0) {
    Write-Output "  not found: $($skipped -join ' ') (name a host with -Create to install it anyway)"
    $skippedWhy | ForEach-Object { Write-Output $_ }
}
if ($failedHosts.Count -gt 0) { Write-Output "  failed:    $($failedHosts -join ' ') (see the messages above)" }
if ($doneHosts.Count -eq 0 -and $failedHosts.Count -eq 0) {
    Write-Output "  No host was found on this machine. Install Cursor, Claude Code, Codex CLI or CodeBuddy Code"
    Write-Output "  first, or name one: installers\install.ps1 -Create claude-code"
}
if ($doneHosts.Count -gt 0 -and -not $DryRun) {
    Write-Output "Next: start a new chat in your assistant and work as usual, then check with: & `"$bin`" status"
}
exit $failed
