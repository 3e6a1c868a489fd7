"""Long-lived host sessions: one host process runs many turns, as an interactive user's session
does, so one MCP server process serves them all (leanctx serve's diff bases live in that
process's memory). Used by the e2e scenarios (`serve`, `ledger-rewind`, `idle`) and the workload
benchmark (benches/workload).

- ClaudeStream: Claude Code over `--input-format stream-json --output-format stream-json`, as the
  Agent SDK runs it: user messages (a slash command such as `/compact` too) and the control
  request `rewind_conversation` (what /rewind and Esc-Esc do).
- CodexApp: `codex app-server` (JSON-RPC over stdio, one message a line), as the IDE extension
  and the desktop app run it: turns on one thread, `thread/compact/start` (what /compact does),
  `thread/revert` (its rewind).

Every wait is bounded by `timeout` seconds per step (a turn, a request): a host that hangs fails
that step, not the run. Every line the host prints is kept in `lines`; its stderr goes to a file
under the sandbox's runs dir. `close()` ends the process group (the host's MCP servers and hooks
with it).
"""
import json
import os
import signal
import subprocess
import time

import harness as H


class _Live:
    def __init__(self, sb, host, argv, env, timeout):
        self.timeout = timeout
        self.lines = []
        self.stderr_path = sb._next_run(host) + ".stderr"
        with open(self.stderr_path, "wb") as err:
            self.p = subprocess.Popen(argv, cwd=sb.project, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=err, text=True, start_new_session=True)

    def send(self, msg):
        self.p.stdin.write(json.dumps(msg) + "\n")
        self.p.stdin.flush()

    def until(self, pred):
        """Reads the host's lines until one satisfies pred (returned), the host closes its output
        or this step's time is up (None)."""
        deadline = time.time() + self.timeout
        while time.time() < deadline:
            line = self.p.stdout.readline()
            if not line:
                return None
            try:
                m = json.loads(line)
            except ValueError:
                continue
            self.lines.append(m)
            if self.seen(m) and pred(m):
                return m
        return None

    def seen(self, m):
        return True

    def close(self, wait=10):
        """Closes the host's input and waits for it to exit; returns its exit code (None when it
        had to be killed)."""
        rc = None
        try:
            self.p.stdin.close()
            rc = self.p.wait(wait)
        except (OSError, subprocess.TimeoutExpired, ValueError):
            rc = None
        finally:
            try:
                os.killpg(self.p.pid, signal.SIGKILL)
            except OSError:
                pass
        return rc

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()


class ClaudeStream(_Live):
    """Claude Code as one stream-json process (see the module doc). `session_id` is the host's
    session id once it said it. `extra_args`, e.g. `["--resume", sid]`: a second live process of
    a session another one still runs."""

    def __init__(self, sb, timeout=120, env=None, allowed_tools=None, extra_args=()):
        argv = [H.claude_bin(), "-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
                "--replay-user-messages"] + H.claude_mcp_args(sb, allowed_tools) + list(extra_args)
        self.session_id, self.last_user, self.n = None, None, 0
        super().__init__(sb, "claude", argv, sb.env("claude", env), timeout)

    def seen(self, m):
        self.session_id = self.session_id or m.get("session_id")
        return True

    def user(self, uuid, prompt):
        """One user message; waits for the turn's `result` line and returns it (None: none came)."""
        self.last_user = uuid
        self.send({"type": "user", "uuid": uuid, "session_id": "", "message": {"role": "user", "content": prompt},
                   "parent_tool_use_id": None})
        return self.until(lambda m: m.get("type") == "result")

    def rewind(self, target_uuid):
        """Rewinds to that user message, naming the last one sent as seen, as an SDK client does
        (without it Claude Code refuses a rewind past a subagent's turn as `stale_target`); returns
        the control response."""
        self.n += 1
        self.send({"type": "control_request", "request_id": "rw-%d" % self.n, "request": {
            "subtype": "rewind_conversation", "target_message_uuid": target_uuid,
            "last_seen_user_message_uuid": self.last_user}})
        return self.until(lambda m: m.get("type") == "control_response")


class CodexApp(_Live):
    """Codex as one `codex app-server` process: one thread, many turns. Hooks run as with
    `codex exec --dangerously-bypass-hook-trust` (the thread's `bypass_hook_trust` setting)."""

    def __init__(self, sb, timeout=600, env=None):
        sb._write_codex_config()  # the mock's port; an installer's server block is kept
        self.n = 0
        super().__init__(sb, "codex", [H.codex_bin(), "app-server"], sb.env("codex", env), timeout)
        self.request("initialize", {"clientInfo": {"name": "leanctx-e2e", "version": "0"}})
        self.send({"method": "initialized"})
        r = self.request("thread/start", {"cwd": sb.project, "config": {"bypass_hook_trust": True}})
        self.thread = ((r or {}).get("result") or {}).get("thread", {}).get("id")

    def request(self, method, params):
        self.n += 1
        n = self.n
        self.send({"id": n, "method": method, "params": params})
        return self.until(lambda m: m.get("id") == n and "method" not in m)

    def turn(self, prompt):
        """One user turn; returns (its id, whether it completed)."""
        r = self.request("turn/start", {"threadId": self.thread, "input": [{"type": "text", "text": prompt}]})
        tid = (((r or {}).get("result") or {}).get("turn") or {}).get("id")
        done = self.until(lambda m: m.get("method") == "turn/completed"
                          and (m.get("params") or {}).get("turn", {}).get("id") == tid)
        return tid, done is not None and done["params"]["turn"].get("status") == "completed"

    def compact(self):
        """Codex's own compaction of the thread (what /compact does); waits for its turn to end."""
        r = self.request("thread/compact/start", {"threadId": self.thread})
        done = self.until(lambda m: m.get("method") == "turn/completed")
        return r is not None and "error" not in r and done is not None

    def revert(self, turn_id):
        """The thread's history without that turn and every later one (Codex's rewind)."""
        return self.request("thread/revert", {"threadId": self.thread, "beforeTurnId": turn_id})
