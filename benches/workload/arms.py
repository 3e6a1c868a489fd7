"""Run the workload's session on a real host (tests/e2e/harness.py: Claude Code or Codex, offline,
the mock model on 127.0.0.1) with one arm as the MCP server `ctx`:
  serve    `leanctx serve` (tool `read`), the hooks from `leanctx hooks install <host> --no-server`
           (the harness registers the server as `ctx`, as tests/e2e's `serve` scenario does: the
           mock model scripts tool calls on server `ctx`), plus the acknowledging hook when the
           installer did not put it there;
  plain    tests/e2e/mcp_server.py --root: the file whole at every read;
  pathkey  the same with --mode pathkey: lean-ctx's rule (path + mtime seen before by this server
           => `[unchanged] <path>`), its memory kept for the whole session (--cache).
Each turn is one host run (`claude -p` / `codex exec`, resumed per chat), so each turn starts its
own server process. Outside edits between turns are written by the driver; those inside a turn by
edit_hook.py (PreToolUse). The mock model dumps every request body: the oracle (oracle.py).
"""
import json
import os
import shlex
import shutil
import subprocess
import tempfile
import time

import oracle  # puts tests/e2e on sys.path

import harness as H  # noqa: E402

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
    try:
        if arm == "serve":
            res["ack_hook_installed_by_leanctx"] = install_serve_hooks(sb, host, bin_)
        sids = {}
        for ev in script["events"]:
            if ev["op"] == "edit":
                with open(os.path.join(project, ev["path"]), "w") as f:
                    f.write(ev["text"])
                continue
            chat = ev["chat"]
            if ev["op"] == "turn":
                prompt = "%s[reads=%s] work on the task" % ("[subagent] " if ev["subagent"] else "",
                                                             ",".join(ev["reads"]))
                kw = {}
            elif host == "claude":
                prompt, kw = "/compact", {}
            else:  # Codex compacts on its own once over the limit: a turn with no read
                prompt, kw = "say ok", {"config": ["model_auto_compact_token_limit=60"]}
            if chat in sids:
                kw["resume"] = sids[chat]
            run = H.run_claude if host == "claude" else H.run_codex
            r = run(sb, prompt, timeout=timeout, **kw)
            res["runs"] += 1
            if r.exit_code != 0 or r.timed_out:
                raise ArmError("%s/%s: %r exited %s%s: %s" % (host, arm, prompt[:80], r.exit_code,
                                                              " (timeout)" if r.timed_out else "",
                                                              r.stderr[-600:]))
            if chat not in sids:
                sids[chat] = r.session_id
                if not sids[chat]:
                    raise ArmError("%s/%s: no session id from the first run of chat %s" % (host, arm, chat))
            say("  %s/%s: %s (%.0f s)" % (host, arm, prompt[:60], r.duration))
        res["seconds"] = round(time.time() - t0, 1)
        reads_log = os.path.join(state, "reads.jsonl")
        if not os.path.exists(reads_log):
            raise ArmError("%s/%s: the edit hook logged no read (did PreToolUse fire?)" % (host, arm))
        turns = [e["first_read"] for e in script["events"] if e["op"] == "turn"]
        res["per_read"] = oracle.analyse(os.path.join(root, "logs", "mock-bodies"), reads_log, script["versions"],
                                         turns)
        res["totals"] = oracle.totals(res["per_read"])
        with open(reads_log) as f:
            res["hook_reads"] = sum(1 for _ in f)
        if arm == "serve":
            out = leanctx(sb, bin_, ["stats", "--json", "--since", "all"])
            res["stats"] = json.loads(out.stdout) if out.returncode == 0 else {"error": out.stdout + out.stderr}
        res["sandbox"] = root if keep else None
        return res
    finally:
        sb.close()
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
