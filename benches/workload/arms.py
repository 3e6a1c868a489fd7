"""Run the workload's session on a real host (tests/e2e/harness.py: Claude Code or Codex, offline,
the mock model on 127.0.0.1) with one arm as the MCP server `ctx`:
  serve    `leanctx serve` (tool `read`), the hooks from `leanctx hooks install <host> --no-server`
           (the harness registers the server as `ctx`, as tests/e2e's `serve` scenario does: the
           mock model scripts tool calls on server `ctx`), plus the acknowledging hook when the
           installer did not put it there;
  plain    tests/e2e/mcp_server.py --root: the file whole at every read;
  pathkey  the same with --mode pathkey: lean-ctx's rule (path + mtime seen before by this server
           => `[unchanged] <path>`), one memory for the whole session, shared by both chats' server processes (--cache): the
           rule at its most saving, as in the benchmark's earlier runs.
Each chat is one long-lived host process, as an interactive session is (tests/e2e/live.py: Claude
Code over `--input-format stream-json`, Codex as `codex app-server`), so one server process serves
all of a chat's turns, its compactions (Claude `/compact`, Codex `thread/compact/start`) and its
subagents; the two chats' processes run side by side. Outside edits between turns are written by the
driver; those inside a turn by edit_hook.py (PreToolUse). The mock model dumps every request body: the oracle (oracle.py).
"""
import json
import os
import shlex
import shutil
import subprocess
import tempfile
import time
import uuid

import oracle  # puts tests/e2e on sys.path

import harness as H  # noqa: E402
import live as L  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
EDIT_HOOK = os.path.join(HERE, "edit_hook.py")
HOST_NAME = {"claude": "claude-code", "codex": "codex"}
ACK_EVENT = {"claude-code": "PostToolBatch", "codex": "PostToolUse"}


class ArmError(Exception):
    pass


def _hooks_file(sb, host):
    return os.path.join(sb.claude_dir, "settings.json") if host == "claude" else \
        os.path.join(sb.codex_home, "hooks.json")


def _edit_hooks(path, fn):
    with open(path) as f:
        doc = json.load(f)
    fn(doc.setdefault("hooks", {}))
    with open(path, "w") as f:
        json.dump(doc, f, indent=2)


def leanctx_env(sb):
    e = {k: v for k, v in sb.env("codex").items() if k != "MOCK_API_KEY"}
    e["CODEX_HOME"] = sb.codex_home
    return e


def leanctx(sb, bin_, args):
    return subprocess.run([bin_] + args, env=leanctx_env(sb), capture_output=True, text=True, timeout=60,
                          cwd=sb.project)


def install_serve_hooks(sb, host, bin_):
    """`leanctx hooks install <host> --no-server`; the acknowledging hook added by hand only when
    the installer left it out (said in the result)."""
    hc = HOST_NAME[host]
    out = leanctx(sb, bin_, ["hooks", "install", hc, "--no-server"])
    if out.returncode != 0:
        raise ArmError("leanctx hooks install %s: %s" % (hc, out.stdout + out.stderr))
    with open(_hooks_file(sb, host)) as f:
        hooks = json.load(f).get("hooks", {})
    ev = ACK_EVENT[hc]
    if any("hook %s" % hc in h.get("command", "") for g in hooks.get(ev, []) for h in g.get("hooks", [])):
        return True
    cmd = "%s hook %s" % (shlex.quote(bin_), hc)
    _edit_hooks(_hooks_file(sb, host), lambda hk: hk.setdefault(ev, []).append(
        {"hooks": [{"type": "command", "command": cmd, "timeout": 5}]}))
    return False


def _tail(path, n=600):
    try:
        with open(path, errors="replace") as f:
            return f.read()[-n:]
    except OSError:
        return ""


def run_arm(host, arm, script, bin_=None, keep=False, timeout=900, say=print):
    """Runs the whole script; returns the arm's result (totals, per-read records, stats)."""
    root = tempfile.mkdtemp(prefix="leanctx-workload-%s-%s-" % (host, arm), dir=os.environ.get("E2E_SANDBOX_BASE"))
    project = os.path.join(root, "home", "project")
    state = os.path.join(root, "workload")
    os.makedirs(state)
    with open(os.path.join(state, "schedule.json"), "w") as f:
        json.dump({str(k): v for k, v in script["schedule"].items()}, f)
    mcp_log = os.path.join(root, "logs", "mcp.jsonl")
    tool = None
    if arm == "serve":
        argv, tool = [bin_, "serve"], "read"
    else:
        argv = [H.PYTHON, H.MCP_SERVER, "--log", mcp_log, "--root", project]
        if arm == "pathkey":
            argv += ["--mode", "pathkey", "--cache", os.path.join(state, "pathkey.json")]
    cmd = "%s %s %s %s" % (shlex.quote(H.PYTHON), shlex.quote(EDIT_HOOK), shlex.quote(state), shlex.quote(project))
    edit_hook = {"PreToolUse": [{"hooks": [{"type": "command", "command": cmd, "timeout": 30}]}]}
    sb = H.Sandbox(hooks=edit_hook, root=root, name="workload", mcp_argv=argv, mcp_tool=tool,
                   project_files=script["files"], mock_dump=True, keep=keep)
    res = {"host": host, "arm": arm, "runs": 0, "seconds": 0.0}
    t0 = time.time()
    live_ = {}  # chat -> its one host process
    try:
        if arm == "serve":
            res["ack_hook_installed_by_leanctx"] = install_serve_hooks(sb, host, bin_)
        for ev in script["events"]:
            if ev["op"] == "edit":
                with open(os.path.join(project, ev["path"]), "w") as f:
                    f.write(ev["text"])
                continue
            chat = ev["chat"]
            if chat not in live_:
                live_[chat] = L.ClaudeStream(sb, timeout=timeout) if host == "claude" else L.CodexApp(sb, timeout=timeout)
                if host == "codex" and not live_[chat].thread:
                    raise ArmError("%s/%s: codex app-server started no thread: %s" % (
                        host, arm, json.dumps(live_[chat].lines)[-600:]))
            c, t1 = live_[chat], time.time()
            n0 = len(c.lines)
            if ev["op"] == "turn":
                what = "%s[reads=%s] work on the task" % ("[subagent] " if ev["subagent"] else "", ",".join(ev["reads"]))
                if host == "claude":
                    r = c.user(str(uuid.uuid4()), what)
                    ok = r is not None and not r.get("is_error")
                else:
                    ok = c.turn(what)[1]
            elif host == "claude":  # the user's /compact in the same process
                what = "/compact"
                r = c.user(str(uuid.uuid4()), what)
                ok = r is not None and not r.get("is_error") and any(
                    m.get("type") == "system" and m.get("subtype") == "compact_boundary" for m in c.lines[n0:])
            else:  # Codex's own compaction of the thread (what /compact does)
                what = "thread/compact/start"
                ok = c.compact()
            res["runs"] += 1
            if not ok:
                raise ArmError("%s/%s: chat %s: %r failed: %s (stderr: %s)" % (
                    host, arm, chat, what[:80], json.dumps(c.lines[-3:])[-600:], _tail(c.stderr_path)))
            say("  %s/%s: %s: %s (%.0f s)" % (host, arm, chat, what[:60], time.time() - t1))
        for chat, c in sorted(live_.items()):
            rc = c.close(wait=60)
            if rc != 0:
                raise ArmError("%s/%s: chat %s's host process exited %s (stderr: %s)" % (
                    host, arm, chat, rc, _tail(c.stderr_path)))
        res["seconds"] = round(time.time() - t0, 1)
        reads_log = os.path.join(state, "reads.jsonl")
        if not os.path.exists(reads_log):
            raise ArmError("%s/%s: the edit hook logged no read (did PreToolUse fire?)" % (host, arm))
        # Which server process answered each read: the one of its chat's host process.
        turns = [(e["first_read"], e["chat"]) for e in script["events"] if e["op"] == "turn"]
        res["per_read"] = oracle.analyse(os.path.join(root, "logs", "mock-bodies"), reads_log, script["versions"],
                                         turns)
        res["totals"] = oracle.totals(res["per_read"])
        # The compactions the script asks for reached the model as compaction requests.
        res["compaction_requests"] = sum(1 for c, _ in oracle.load_requests(os.path.join(root, "logs", "mock-bodies"))
                                         if c)
        with open(reads_log) as f:
            res["hook_reads"] = sum(1 for _ in f)
        if arm == "serve":
            out = leanctx(sb, bin_, ["stats", "--json", "--since", "all"])
            res["stats"] = json.loads(out.stdout) if out.returncode == 0 else {"error": out.stdout + out.stderr}
        res["sandbox"] = root if keep else None
        return res
    finally:
        for c in live_.values():
            c.close(wait=5)
        sb.close()
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
