#!/usr/bin/env python3
"""E2E harness: run real Claude Code / Codex CLI offline against the mock model and the ctx MCP server.

Library use (python3 stdlib only)::

    import sys; sys.path.insert(0, "tests/e2e"); import harness as H
    H.isolate_network()                       # optional: re-exec in a loopback-only netns (root)
    with H.Sandbox(hooks=H.logging_hooks()) as sb:
        r = H.run_claude(sb, "read README via ctx_read")
        r2 = H.run_codex(sb, "read README via ctx_read")
        print(r.exit_code, r.duration, sb.hook_events(), sb.mcp_calls(), sb.mock_requests())

CLI use (prints one JSON object on stdout)::

    python3 tests/e2e/harness.py new  --dir DIR [--hooks-json FILE]
    python3 tests/e2e/harness.py run  --dir DIR --host claude|codex --prompt TEXT
                                      [--resume SESSION_ID | --resume-last] [--timeout 90]
                                      [--env K=V ...] [-- EXTRA HOST ARGS]
    python3 tests/e2e/harness.py show --dir DIR      # hook events / MCP calls / mock requests

See tests/e2e/README.md for the sandbox layout and the scenario markers of the mock model.
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

E2E_DIR = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(E2E_DIR))
MOCK_MODEL = os.path.join(E2E_DIR, "mock_model.py")
MCP_SERVER = os.path.join(E2E_DIR, "mcp_server.py")
LOG_HOOK = os.path.join(E2E_DIR, "log_hook.sh")
PYTHON = sys.executable or "python3"

CLAUDE_VERSION = "2.1.328"
CODEX_VERSION = "0.169.0"
DEFAULT_TIMEOUT = 90.0

CLAUDE_EVENTS = [
    "PreToolUse", "PostToolUse", "PostToolUseFailure", "PostToolBatch", "Notification",
    "UserPromptSubmit", "UserPromptExpansion", "SessionStart", "SessionEnd", "Stop", "StopFailure",
    "SubagentStart", "SubagentStop", "PreCompact", "PostCompact", "PermissionRequest",
    "PermissionDenied", "InstructionsLoaded", "MessageDisplay", "ConfigChange",
]
CODEX_EVENTS = [
    "SessionStart", "UserPromptSubmit", "PreToolUse", "PermissionRequest", "PostToolUse",
    "PreCompact", "PostCompact", "Stop", "SubagentStart", "SubagentStop", "SessionEnd", "Interrupt",
    "PreModelRequest", "PostModelRequest",
]

# [features] of $CODEX_HOME/config.toml. plugins/remote_plugin/apps off: otherwise Codex runs
# `git ls-remote https://github.com/openai/plugins` and contacts api.github.com / chatgpt.com on
# every start (curated plugin sync). shell_snapshot off: no login shell is spawned at start.
CODEX_FEATURES = {"hooks": True, "plugins": False, "remote_plugin": False, "apps": False,
                  "shell_snapshot": False}

README_TEXT = "# fixture project\n\nThis README belongs to the leanctx e2e sandbox project.\n"
CLAUDE_MD_TEXT = "# Project notes\n\nThis is the leanctx e2e fixture project. Keep answers short.\n"


# ---------------------------------------------------------------------------------------------
# network isolation


def _bring_lo_up():
    if shutil.which("ip"):
        subprocess.run(["ip", "link", "set", "lo", "up"], check=False, timeout=10,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return
    import fcntl
    import socket
    import struct
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        ifr = struct.pack("16sH14s", b"lo", 0, b"\0" * 14)
        flags = struct.unpack("16sH14s", fcntl.ioctl(s, 0x8913, ifr))[1]  # SIOCGIFFLAGS
        fcntl.ioctl(s, 0x8914, struct.pack("16sH14s", b"lo", flags | 0x1, b"\0" * 14))  # IFF_UP
    finally:
        s.close()


def isolate_network(argv=None):
    """Re-exec the running script inside a fresh network namespace that has only loopback, so the
    hosts cannot reach any address but 127.0.0.1 (Codex tries github.com / chatgpt.com on every
    run). Needs root and util-linux `unshare`; otherwise returns False and nothing changes.
    Set E2E_NETNS=0 to skip. Returns True when running isolated (it never returns in the parent:
    the process image is replaced, same pid)."""
    if os.environ.get("E2E_NETNS", "1") == "0":
        return False
    if os.environ.get("_E2E_IN_NETNS") == "1":
        _bring_lo_up()
        return True
    unshare = shutil.which("unshare")
    if not unshare or os.geteuid() != 0:
        sys.stderr.write("harness: WARNING: no network isolation (need root + unshare)\n")
        return False
    probe = subprocess.run([unshare, "-n", "true"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           timeout=10)
    if probe.returncode != 0:
        sys.stderr.write("harness: WARNING: `unshare -n` failed; no network isolation\n")
        return False
    env = dict(os.environ, _E2E_IN_NETNS="1")
    argv = list(argv if argv is not None else sys.argv)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(unshare, [unshare, "-n", "--", PYTHON] + argv, env)


def network_isolated():
    return os.environ.get("_E2E_IN_NETNS") == "1"


# ---------------------------------------------------------------------------------------------
# host binaries


def hosts_dir():
    return os.environ.get("E2E_HOSTS_DIR") or os.path.join(REPO, "target", "e2e-hosts")


def claude_bin():
    return os.environ.get("CLAUDE_BIN") or os.path.join(hosts_dir(), "node_modules", ".bin", "claude")


def codex_bin():
    return os.environ.get("CODEX_BIN") or os.path.join(hosts_dir(), "node_modules", ".bin", "codex")


def ensure_hosts():
    """Run setup-hosts.sh (fast when already installed) and return (claude_bin, codex_bin)."""
    out = subprocess.run(["bash", os.path.join(E2E_DIR, "setup-hosts.sh")], capture_output=True,
                         text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError("setup-hosts.sh failed:\n" + out.stderr[-3000:])
    bins = dict(l.split("=", 1) for l in out.stdout.splitlines() if "=" in l)
    return bins["CLAUDE_BIN"], bins["CODEX_BIN"]


# ---------------------------------------------------------------------------------------------
# mock model


class MockModel:
    """The mock model server as a subprocess on 127.0.0.1:<random port>. Stops with the harness
    (stop()/context manager, and the server itself exits when this process is gone)."""

    def __init__(self, log_path, dump_dir=None, max_lifetime=1800, mcp_tool=None, mcp_server=None):
        self.log_path = log_path
        self.mcp_tool = mcp_tool
        self.mcp_server = mcp_server
        self.proc = None
        self.port = None
        self.dump_dir = dump_dir
        self.max_lifetime = max_lifetime

    def start(self, timeout=20):
        d = os.path.dirname(self.log_path)
        os.makedirs(d, exist_ok=True)
        port_file = tempfile.mktemp(prefix="mock-port-", dir=d)
        argv = [PYTHON, MOCK_MODEL, "--port", "0", "--port-file", port_file, "--log", self.log_path,
                "--parent-pid", str(os.getpid()), "--max-lifetime", str(self.max_lifetime)]
        if self.dump_dir:
            argv += ["--dump-dir", self.dump_dir]
        if self.mcp_tool:
            argv += ["--mcp-tool", self.mcp_tool]
        if self.mcp_server:
            argv += ["--mcp-server", self.mcp_server]
        self._err = open(self.log_path + ".stderr", "ab")
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=self._err, env=_base_env_for_helpers())
        deadline = time.time() + timeout
        while time.time() < deadline:
            if os.path.exists(port_file):
                with open(port_file) as f:
                    txt = f.read().strip()
                if txt:
                    self.port = int(txt)
                    os.unlink(port_file)
                    return self
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("mock model did not start (see %s.stderr)" % self.log_path)

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        if getattr(self, "_err", None):
            self._err.close()
            self._err = None

    def __enter__(self):
        return self.start() if self.proc is None else self

    def __exit__(self, *a):
        self.stop()


def _base_env_for_helpers():
    return {"PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"), "LANG": "C.UTF-8"}


# ---------------------------------------------------------------------------------------------
# hooks config


def logging_hooks(host=None, events=None, log_path=None, timeout=10):
    """Hooks config (Claude-style nested dict, also what Codex's hooks.json takes) that runs
    log_hook.sh for every event of `host` (both hosts' events when host is None). The log path
    defaults to $E2E_HOOK_LOG, which the harness sets to <sandbox>/logs/hooks.jsonl."""
    if events is None:
        events = {"claude": CLAUDE_EVENTS, "codex": CODEX_EVENTS}.get(host) or sorted(set(CLAUDE_EVENTS + CODEX_EVENTS))
    cmd = LOG_HOOK if log_path is None else "%s %s" % (LOG_HOOK, _shq(log_path))
    # Codex clamps SessionEnd/Interrupt hook timeouts to 3 s (and warns about larger values)
    return {ev: [{"hooks": [{"type": "command", "command": cmd,
                             "timeout": min(timeout, 3) if ev in ("SessionEnd", "Interrupt") else timeout}]}]
            for ev in events}


def merge_hooks(*configs):
    """Concatenate several hooks dicts event by event (groups keep their order)."""
    out = {}
    for c in configs:
        for ev, groups in (c or {}).items():
            out.setdefault(ev, []).extend(groups)
    return out


def _shq(s):
    return "'" + s.replace("'", "'\\''") + "'"


# ---------------------------------------------------------------------------------------------
# sandbox


class Sandbox:
    """A throw-away world for one or more host runs.

    Layout under `root`:
      home/                     HOME for every process (hosts, hooks, MCP server)
      home/.claude/settings.json   {"hooks": ...}
      home/.claude.json            onboarding done + project trust
      home/.codex/              CODEX_HOME: config.toml (mock provider, [mcp_servers.ctx]), hooks.json
      home/project/             cwd of the hosts: README.md, CLAUDE.md
      tmp/                      TMPDIR and CLAUDE_CODE_TMPDIR
      claude-mcp.json           --mcp-config for Claude
      logs/hooks.jsonl          log_hook.sh output (E2E_HOOK_LOG)
      logs/mcp.jsonl            MCP server tools/call log (E2E_MCP_LOG)
      logs/mock.jsonl           mock model request log
      logs/runs/NN-<host>.{stdout,stderr,json}   every run's output and summary

    `hooks`: a dict {Event: [groups]} used for both hosts, or a callable(host, sandbox) -> dict
    (host is "claude" or "codex"), or None (no hooks). Written to ~/.claude/settings.json and
    $CODEX_HOME/hooks.json when the sandbox is created.
    `mcp_argv`: command line of the `ctx` MCP server (default: mcp_server.py --log logs/mcp.jsonl).
    Note that Codex starts it with a filtered environment (HOME, LANG, PATH, SHELL, TERM, TMPDIR,
    USER), so pass what it needs as arguments.
    `codex_features`: overrides of CODEX_FEATURES; `codex_config_extra`: TOML appended to
    config.toml (start it with a [table] header); `codex_config_top`: top-level keys (e.g.
    `tool_output_token_limit = 50000`) written before the first table; `project_files`: {relpath: text} added to the
    project; `claude_settings_extra`: keys merged into ~/.claude/settings.json.
    `installed_mcp`: the name of an MCP server that an installer (e.g. `leanctx hooks install`)
    registered in the hosts' own user config (~/.claude.json, $CODEX_HOME/config.toml). The harness
    then writes no MCP server for the hosts: Claude runs without --mcp-config/--strict-mcp-config,
    Codex's config.toml has no [mcp_servers.ctx], and the mock calls that server's `mcp_tool`.
    Reopen an existing sandbox directory with Sandbox(root=DIR) (no hooks argument).
    """

    def __init__(self, hooks=None, root=None, name="e2e", keep=None, mock=None, project_files=None,
                 codex_config_extra="", codex_features=None, claude_settings_extra=None,
                 mock_dump=False, mcp_argv=None, codex_config_top="", mcp_tool=None, installed_mcp=None):
        self.keep = (os.environ.get("E2E_KEEP") == "1") if keep is None else keep
        self.mcp_tool = mcp_tool
        self.installed_mcp = installed_mcp
        if root is None:
            base = os.environ.get("E2E_SANDBOX_BASE") or None
            root = tempfile.mkdtemp(prefix="leanctx-%s-" % name, dir=base)
            self._created = True
        else:
            os.makedirs(root, exist_ok=True)
            self._created = False
        self.root = os.path.abspath(root)
        self.home = os.path.join(self.root, "home")
        self.project = os.path.join(self.home, "project")
        self.codex_home = os.path.join(self.home, ".codex")
        self.claude_dir = os.path.join(self.home, ".claude")
        self.tmp = os.path.join(self.root, "tmp")
        self.logs = os.path.join(self.root, "logs")
        self.runs_dir = os.path.join(self.logs, "runs")
        self.hook_log = os.path.join(self.logs, "hooks.jsonl")
        self.mcp_log = os.path.join(self.logs, "mcp.jsonl")
        self.mock_log = os.path.join(self.logs, "mock.jsonl")
        self.claude_mcp_config = os.path.join(self.root, "claude-mcp.json")
        self.codex_config_extra = codex_config_extra
        self.codex_config_top = codex_config_top
        self.codex_features = dict(CODEX_FEATURES, **(codex_features or {}))
        self.mcp_argv = list(mcp_argv or [PYTHON, MCP_SERVER, "--log", self.mcp_log])
        self._own_mock = mock is None
        self._mock = mock
        self._mock_dump = mock_dump
        self._run_lock = threading.Lock()
        self._mock_lock = threading.Lock()
        self._run_no = 0
        meta_path = os.path.join(self.root, "sandbox.json")
        if os.path.exists(meta_path) and hooks is None and project_files is None:
            with open(meta_path) as f:
                meta = json.load(f)
            self.codex_config_extra = codex_config_extra or meta.get("codex_config_extra", "")
            self.codex_config_top = codex_config_top or meta.get("codex_config_top", "")
            self.codex_features = dict(meta.get("codex_features") or CODEX_FEATURES, **(codex_features or {}))
            self.mcp_argv = list(mcp_argv or meta.get("mcp_argv") or self.mcp_argv)
            self.installed_mcp = installed_mcp or meta.get("installed_mcp")
            self.mcp_tool = mcp_tool or meta.get("mcp_tool")
        else:
            self._layout(hooks, project_files, claude_settings_extra)
            with open(meta_path, "w") as f:
                json.dump({"codex_config_extra": self.codex_config_extra, "mcp_argv": self.mcp_argv,
                           "codex_config_top": self.codex_config_top,
                           "codex_features": self.codex_features, "installed_mcp": self.installed_mcp,
                           "mcp_tool": self.mcp_tool, "created": time.time()}, f)
        if os.path.isdir(self.runs_dir):
            self._run_no = len([n for n in os.listdir(self.runs_dir) if n.endswith(".json")])

    # -- setup ---------------------------------------------------------------------------------

    def _layout(self, hooks, project_files, claude_settings_extra):
        for d in (self.home, self.project, self.codex_home, self.claude_dir, self.tmp, self.runs_dir):
            os.makedirs(d, exist_ok=True)
        files = {"README.md": README_TEXT, "CLAUDE.md": CLAUDE_MD_TEXT}
        files.update(project_files or {})
        for rel, text in files.items():
            p = os.path.join(self.project, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w") as f:
                f.write(text)
        claude_hooks = hooks("claude", self) if callable(hooks) else hooks
        codex_hooks = hooks("codex", self) if callable(hooks) else hooks
        settings = {}
        if claude_hooks:
            settings["hooks"] = claude_hooks
        settings.update(claude_settings_extra or {})
        _write_json(os.path.join(self.claude_dir, "settings.json"), settings)
        _write_json(os.path.join(self.home, ".claude.json"), {
            "hasCompletedOnboarding": True,
            "lastOnboardingVersion": CLAUDE_VERSION,
            "numStartups": 1,
            "projects": {self.project: {"hasTrustDialogAccepted": True,
                                        "hasCompletedProjectOnboarding": True,
                                        "allowedTools": []}},
        })
        _write_json(os.path.join(self.codex_home, "hooks.json"), {"hooks": codex_hooks or {}})
        _write_json(self.claude_mcp_config, {"mcpServers": {"ctx": {
            "type": "stdio", "command": self.mcp_argv[0], "args": self.mcp_argv[1:], "env": {}}}})
        for p in (self.hook_log, self.mcp_log, self.mock_log):
            open(p, "a").close()

    def write_hooks(self, hooks):
        """Replace the hooks of both hosts (dict or callable(host, sandbox))."""
        claude_hooks = hooks("claude", self) if callable(hooks) else hooks
        codex_hooks = hooks("codex", self) if callable(hooks) else hooks
        sp = os.path.join(self.claude_dir, "settings.json")
        settings = _read_json(sp) or {}
        settings["hooks"] = claude_hooks or {}
        _write_json(sp, settings)
        _write_json(os.path.join(self.codex_home, "hooks.json"), {"hooks": codex_hooks or {}})

    def _write_codex_config(self):
        toml = """# written by tests/e2e/harness.py
model = "mock-model"
model_provider = "mock"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false
%(top)s
[model_providers.mock]
name = "mock"
base_url = "%(url)s/v1"
env_key = "MOCK_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
stream_idle_timeout_ms = 60000

%(mcp)s
[features]
%(features)s

[analytics]
enabled = false

[projects.%(proj)s]
trust_level = "trusted"
""" % {"url": self.mock.url, "top": self.codex_config_top, "mcp": "" if self.installed_mcp else """\
[mcp_servers.ctx]
command = %s
args = [%s]
startup_timeout_sec = 30
tool_timeout_sec = 60
""" % (_toml_str(self.mcp_argv[0]), ", ".join(_toml_str(x) for x in self.mcp_argv[1:])),
       "proj": _toml_str(self.project),
       "features": "\n".join("%s = %s" % (k, "true" if v else "false")
                              for k, v in sorted(self.codex_features.items()))}
        path = os.path.join(self.codex_home, "config.toml")
        # What `leanctx hooks install` registered here (its [mcp_servers.leanctx]) outlives the
        # rewrite, as it would in a user's own config.toml.
        try:
            with open(path) as f:
                kept = re.findall(r"^\[mcp_servers\.leanctx\]\n(?:[^\[\n].*\n|\n)*", f.read(), re.M)
        except FileNotFoundError:
            kept = []
        with open(path, "w") as f:
            f.write(toml + ("\n" + self.codex_config_extra + "\n" if self.codex_config_extra else "")
                    + "".join("\n" + k for k in kept))

    @property
    def mock(self):
        """The mock model (started on first use; thread-safe)."""
        with self._mock_lock:
            if self._mock is None:
                self._mock = MockModel(self.mock_log, dump_dir=os.path.join(self.logs, "mock-bodies")
                                       if self._mock_dump else None, mcp_tool=self.mcp_tool,
                                       mcp_server=self.installed_mcp)
            if self._mock.proc is None:
                self._mock.start()
            return self._mock

    # -- environment ---------------------------------------------------------------------------

    def env(self, host, extra=None):
        """The complete environment of a host process (nothing inherited from the caller except
        PATH): every child (hooks, MCP server) sees the sandbox HOME."""
        path = os.pathsep.join(_uniq([os.path.dirname(PYTHON), os.path.dirname(shutil.which("node") or "/usr/bin/node"),
                                      "/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]))
        env = {
            "PATH": path,
            "HOME": self.home,
            "USER": "root" if os.geteuid() == 0 else os.environ.get("USER", "user"),
            "LOGNAME": "root" if os.geteuid() == 0 else os.environ.get("USER", "user"),
            "SHELL": "/bin/bash",
            "LANG": "C.UTF-8",
            "TERM": "dumb",
            "TMPDIR": self.tmp,
            "XDG_CONFIG_HOME": os.path.join(self.home, ".config"),
            "XDG_CACHE_HOME": os.path.join(self.home, ".cache"),
            "XDG_DATA_HOME": os.path.join(self.home, ".local", "share"),
            "XDG_STATE_HOME": os.path.join(self.home, ".local", "state"),
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
            "E2E_DIR": E2E_DIR,
            "E2E_SANDBOX": self.root,
            "E2E_HOOK_LOG": self.hook_log,
            "E2E_MCP_LOG": self.mcp_log,
            "NO_COLOR": "1",
        }
        if host == "claude":
            env.update({
                "ANTHROPIC_BASE_URL": self.mock.url,
                "ANTHROPIC_API_KEY": "sk-ant-e2e-dummy",
                "CLAUDE_CODE_TMPDIR": self.tmp,
                "DISABLE_AUTOUPDATER": "1",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "DISABLE_TELEMETRY": "1",
                "DISABLE_ERROR_REPORTING": "1",
            })
        elif host == "codex":
            env.update({"CODEX_HOME": self.codex_home, "MOCK_API_KEY": "e2e-dummy"})
        if extra:
            for k, v in extra.items():
                if v is None:
                    env.pop(k, None)
                else:
                    env[k] = str(v)
        return env

    # -- logs ----------------------------------------------------------------------------------

    def hook_events(self):
        """All hook payloads logged by log_hook.sh (list of dicts, in order)."""
        return _read_jsonl(self.hook_log)

    def mcp_calls(self):
        return _read_jsonl(self.mcp_log)

    def mock_requests(self):
        return _read_jsonl(self.mock_log)

    def log_marks(self):
        """Current line counts of the three logs, to slice later with since=."""
        return {"hooks": len(self.hook_events()), "mcp": len(self.mcp_calls()), "mock": len(self.mock_requests())}

    # -- lifecycle -----------------------------------------------------------------------------

    def close(self):
        if self._own_mock and self._mock is not None:
            self._mock.stop()
        if self._created and not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()

    def _next_run(self, host):
        with self._run_lock:
            self._run_no += 1
            return os.path.join(self.runs_dir, "%02d-%s" % (self._run_no, host))


def _uniq(xs):
    out = []
    for x in xs:
        if x and x not in out:
            out.append(x)
    return out


def _toml_str(s):
    return json.dumps(s)  # a JSON string is a valid TOML basic string for these paths


def _write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=2)
    os.replace(tmp, path)


def _read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _read_jsonl(path):
    out = []
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    try:
                        out.append(json.loads(line))
                    except ValueError:
                        out.append({"_unparsed": line})
    except OSError:
        pass
    return out


# ---------------------------------------------------------------------------------------------
# running hosts


class Result:
    def __init__(self, host, argv, exit_code, stdout, stderr, t_start, t_end, timed_out, out_base):
        self.host = host
        self.argv = argv
        self.exit_code = exit_code
        self.stdout = stdout
        self.stderr = stderr
        self.t_start = t_start
        self.t_end = t_end
        self.duration = t_end - t_start
        self.timed_out = timed_out
        self.out_base = out_base
        self.interrupted_at = None

    @property
    def session_id(self):
        """Claude: session_id of the stream-json init message. Codex: thread id from --json
        output if present, else the `session id:` banner line on stderr."""
        for line in self.stdout.splitlines():
            try:
                o = json.loads(line)
            except ValueError:
                continue
            if isinstance(o, dict):
                if o.get("session_id"):
                    return o["session_id"]
                if o.get("type") == "thread.started" and o.get("thread_id"):
                    return o["thread_id"]
        for line in (self.stderr + "\n" + self.stdout).splitlines():
            if line.strip().lower().startswith("session id:"):
                return line.split(":", 1)[1].strip()
        return None

    def as_dict(self):
        return {"host": self.host, "argv": self.argv, "exit_code": self.exit_code,
                "duration": round(self.duration, 3), "t_start": self.t_start, "t_end": self.t_end,
                "timed_out": self.timed_out, "session_id": self.session_id,
                "stdout_path": self.out_base + ".stdout", "stderr_path": self.out_base + ".stderr"}

    def __repr__(self):
        return "<Result %s rc=%s %.1fs%s>" % (self.host, self.exit_code, self.duration,
                                              " TIMEOUT" if self.timed_out else "")


def _kill_group(pgid, sig):
    try:
        os.killpg(pgid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _interrupter(p, when, fired):
    """SIGINT to the host process itself (not its group) once when() is true, like a user's
    Ctrl-C reaching the CLI; records the time in fired[0]."""
    while p.poll() is None:
        try:
            ready = when()
        except Exception:
            ready = False
        if ready:
            fired.append(time.time())
            try:
                os.kill(p.pid, signal.SIGINT)
            except ProcessLookupError:
                pass
            return
        time.sleep(0.05)


def run_process(sb, host, argv, env, timeout=DEFAULT_TIMEOUT, cwd=None, base=None, interrupt_when=None):
    """Run argv in its own process group with a hard timeout; afterwards kill whatever is left in
    that group (MCP servers, hooks). Output goes to files under sb.runs_dir.
    interrupt_when: a zero-argument callable polled every 50 ms while the host runs; once it is
    true the host gets SIGINT (Result.interrupted_at says when)."""
    base = base or sb._next_run(host)
    t0 = time.time()
    timed_out = False
    fired = []
    with open(base + ".stdout", "wb") as out, open(base + ".stderr", "wb") as err:
        p = subprocess.Popen(argv, cwd=cwd or sb.project, env=env, stdin=subprocess.DEVNULL,
                             stdout=out, stderr=err, start_new_session=True)
        if interrupt_when is not None:
            threading.Thread(target=_interrupter, args=(p, interrupt_when, fired), daemon=True).start()
        try:
            rc = p.wait(timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(p.pid, signal.SIGTERM)
            try:
                rc = p.wait(5)
            except subprocess.TimeoutExpired:
                _kill_group(p.pid, signal.SIGKILL)
                rc = p.wait(5)
    t1 = time.time()
    # leftovers in the group (e.g. an MCP server that did not exit on EOF)
    if _kill_group(p.pid, 0):
        time.sleep(0.3)
        _kill_group(p.pid, signal.SIGTERM)
        time.sleep(0.2)
        _kill_group(p.pid, signal.SIGKILL)
    with open(base + ".stdout", "rb") as f:
        so = f.read().decode("utf-8", "replace")
    with open(base + ".stderr", "rb") as f:
        se = f.read().decode("utf-8", "replace")
    if timed_out:
        se += "\n[harness] TIMEOUT after %.0fs: process group killed\n" % timeout
    r = Result(host, argv, rc, so, se, t0, t1, timed_out, base)
    r.interrupted_at = fired[0] if fired else None
    _write_json(base + ".json", r.as_dict())
    return r


def claude_mcp_args(sb, allowed_tools=None):
    """Claude's MCP arguments for the sandbox: the harness's own `ctx` server only
    (--mcp-config ... --strict-mcp-config), or none for a server an installer registered in the
    user config (`installed_mcp`), which Claude then loads itself; and --allowedTools for the MCP
    tool the mock calls (default), so print mode does not refuse it."""
    argv = [] if sb.installed_mcp else ["--mcp-config", sb.claude_mcp_config, "--strict-mcp-config"]
    if allowed_tools is None:  # the sandbox's MCP tool (ctx_read, or `leanctx serve`'s read)
        allowed_tools = ("mcp__%s__%s" % (sb.installed_mcp or "ctx", sb.mcp_tool or "ctx_read"),)
    if allowed_tools:
        argv += ["--allowedTools", ",".join(allowed_tools)]
    return argv


def run_claude(sb, prompt, extra_args=(), env=None, timeout=DEFAULT_TIMEOUT, resume=None,
               allowed_tools=None, debug_file=True, interrupt_when=None):
    """claude -p PROMPT [--mcp-config ... --strict-mcp-config] --allowedTools mcp__ctx__ctx_read
    --output-format stream-json --verbose [--resume ID] EXTRA_ARGS (see claude_mcp_args)"""
    argv = [claude_bin(), "-p", prompt, "--output-format", "stream-json", "--verbose"]
    argv += claude_mcp_args(sb, allowed_tools)
    if resume:
        argv += ["--resume", resume]
    base = sb._next_run("claude")
    if debug_file:
        argv += ["--debug-file", base + ".debug.log"]
    argv += list(extra_args)
    return run_process(sb, "claude", argv, sb.env("claude", env), timeout, base=base,
                       interrupt_when=interrupt_when)


def run_codex(sb, prompt, extra_args=(), env=None, timeout=DEFAULT_TIMEOUT, resume_last=False,
              resume=None, config=(), interrupt_when=None, cwd=None):
    """codex exec --skip-git-repo-check --dangerously-bypass-hook-trust [-c K=V ...]
    [resume --last | resume ID] EXTRA_ARGS PROMPT"""
    sb._write_codex_config()
    argv = [codex_bin(), "exec", "--skip-git-repo-check", "--dangerously-bypass-hook-trust"]
    for c in config:
        argv += ["-c", c]
    if resume_last or resume:
        argv += ["resume"] + (["--last"] if resume_last else [resume])
    argv += list(extra_args) + [prompt]
    return run_process(sb, "codex", argv, sb.env("codex", env), timeout, cwd=cwd, interrupt_when=interrupt_when)


def run_concurrently(calls, timeout=DEFAULT_TIMEOUT + 30):
    """Run several zero-argument callables (e.g. lambda: run_claude(sb, "...")) in parallel threads;
    returns their results in order (an exception is returned in place of its result)."""
    results = [None] * len(calls)

    def runner(i, fn):
        try:
            results[i] = fn()
        except BaseException as e:  # noqa
            results[i] = e

    threads = [threading.Thread(target=runner, args=(i, fn), daemon=True) for i, fn in enumerate(calls)]
    for t in threads:
        t.start()
    deadline = time.time() + timeout
    for t in threads:
        t.join(max(0.0, deadline - time.time()))
    return results


def overlap(r1, r2):
    """Seconds during which two runs were both alive (<= 0: no overlap)."""
    return min(r1.t_end, r2.t_end) - max(r1.t_start, r2.t_start)


# ---------------------------------------------------------------------------------------------
# CLI


def _cli(argv=None):
    ap = argparse.ArgumentParser(description="leanctx e2e harness")
    sub = ap.add_subparsers(dest="cmd", required=True)
    n = sub.add_parser("new", help="create a sandbox directory")
    n.add_argument("--dir", required=True)
    n.add_argument("--hooks-json", help="file with {Event: [groups]} or {\"hooks\": {...}}; "
                   "default: log_hook.sh on every event")
    n.add_argument("--no-hooks", action="store_true")
    n.add_argument("--mcp-argv-json", help='JSON list: command line of the ctx MCP server '
                   '(default: python3 mcp_server.py --log <sandbox>/logs/mcp.jsonl)')
    n.add_argument("--project-file", action="append", default=[], metavar="REL=TEXT",
                   help="extra file in the project dir")
    r = sub.add_parser("run", help="run one host session in a sandbox")
    r.add_argument("--dir", required=True)
    r.add_argument("--host", choices=["claude", "codex"], required=True)
    r.add_argument("--prompt", required=True)
    r.add_argument("--resume")
    r.add_argument("--resume-last", action="store_true")
    r.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT)
    r.add_argument("--env", action="append", default=[], help="K=V added to the host env")
    r.add_argument("--config", action="append", default=[], help="codex -c K=V")
    r.add_argument("extra", nargs="*")
    s = sub.add_parser("show", help="print hook events, MCP calls and mock requests of a sandbox")
    s.add_argument("--dir", required=True)
    a = ap.parse_args(argv)

    if a.cmd == "new":
        if a.no_hooks:
            hooks = {}
        elif a.hooks_json:
            hooks = _read_json(a.hooks_json)
            if hooks is None:
                sys.exit("cannot read %s" % a.hooks_json)
            hooks = hooks.get("hooks", hooks)
        else:
            hooks = lambda host, sb: logging_hooks(host)  # noqa: E731
        mcp_argv = json.loads(a.mcp_argv_json) if a.mcp_argv_json else None
        files = dict(kv.split("=", 1) for kv in a.project_file) or None
        sb = Sandbox(hooks=hooks, root=a.dir, keep=True, mcp_argv=mcp_argv, project_files=files)
        print(json.dumps({"sandbox": sb.root, "home": sb.home, "project": sb.project,
                          "codex_home": sb.codex_home, "hook_log": sb.hook_log, "mcp_log": sb.mcp_log,
                          "mock_log": sb.mock_log}))
        return 0
    if a.cmd == "show":
        sb = Sandbox(root=a.dir, keep=True)
        print(json.dumps({"hook_events": sb.hook_events(), "mcp_calls": sb.mcp_calls(),
                          "mock_requests": sb.mock_requests()}, indent=1))
        return 0
    # run
    isolate_network()
    if not os.path.exists(os.path.join(a.dir, "sandbox.json")):
        sys.exit("no sandbox at %s (run `harness.py new --dir ...` first)" % a.dir)
    sb = Sandbox(root=a.dir, keep=True)
    env = dict(kv.split("=", 1) for kv in a.env)
    try:
        if a.host == "claude":
            res = run_claude(sb, a.prompt, a.extra, env, a.timeout, resume=a.resume)
        else:
            res = run_codex(sb, a.prompt, a.extra, env, a.timeout, resume_last=a.resume_last,
                            resume=a.resume, config=a.config)
    finally:
        sb.close()
    d = res.as_dict()
    d.update({"sandbox": sb.root, "hook_log": sb.hook_log, "mcp_log": sb.mcp_log, "mock_log": sb.mock_log,
              "network_isolated": network_isolated()})
    print(json.dumps(d))
    return 0


if __name__ == "__main__":
    sys.exit(_cli())
