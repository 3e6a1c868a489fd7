"""Scenario `serve` of leanctx_e2e.py: `leanctx serve` and the hooks exactly as
`leanctx hooks install <host>` put them into the sandbox's HOME (Claude's ~/.claude.json and
settings.json, Codex's config.toml and hooks.json); the harness registers no MCP server of its own.
The mock model is scripted through one session:

    read A (whole), re-read A (stub), A edited outside (diff), re-read (stub), a rewind to the first
    prompt (whole), a compaction (whole), a subagent reads A (whole), a large file (Claude: whole,
    no preview; Codex: the server's first page, since Codex's budget would cut it), A again (stub).

The oracle is the model's next request (the body the host sent to the mock): every read result is
judged against the tool results before it in that same request, i.e. what the model holds then.
A stub is true only when that context holds the current version of A whole (or rebuilt by the
diffs it received); a diff only when it applies to the copy the context holds and gives the current
version; a whole is the current file, byte for byte.

One host process runs the whole session, so one server process serves it (the bases for diffs
live in that process's memory only):
- Claude Code: one `--input-format stream-json` process, as the SDK runs it; `/compact` and the
  rewind (`rewind_conversation`, as /rewind and Esc-Esc do) go to that process.
- Codex: one `codex app-server` process (JSON-RPC over stdio, as the IDE extension runs it);
  `thread/compact/start` is Codex's own compaction (what /compact does), `thread/revert` its
  rewind (the history goes on in a new rollout file: docs/DELIVERY.md §3).
"""
import json
import os
import re
import uuid

import fixture_text
import live
import mock_model

A = "A.txt"
BIG = "big-60000"
DIFF_HEAD = "[%s changed since you read it" % A
STUB_HEAD = "[unchanged] %s" % A


def apply_udiff(old, diff):
    """Apply the unified diff in the text `diff` (after its first line) to `old`; None when it does
    not apply exactly (a context or removed line differs, or a hunk is out of place)."""
    lines = diff.splitlines(True)[1:]
    src = old.splitlines(True)
    out, pos, i = [], 0, 0
    while i < len(lines) and not lines[i].startswith("@@"):
        i += 1  # the ---/+++ header
    while i < len(lines):
        m = re.match(r"@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@", lines[i])
        if not m:
            return None
        start = int(m.group(1)) - (0 if m.group(2) == "0" else 1)
        if start < pos:
            return None
        out += src[pos:start]
        pos = start
        i += 1
        while i < len(lines) and not lines[i].startswith("@@"):
            tag, body = lines[i][:1], lines[i][1:]
            if tag == "\\":  # "\ No newline at end of file"
                i += 1
                continue
            if tag in (" ", "-"):
                if pos >= len(src) or src[pos] != body:
                    return None
                pos += 1
            if tag in (" ", "+"):
                out.append(body)
            i += 1
    return "".join(out + src[pos:])


def held_copy(texts, versions):
    """The copy of A that a context of tool-result texts (in order) holds: the last whole version,
    with the diffs after it applied; None when it holds none (or a diff did not apply)."""
    copy = None
    for t in texts:
        if t in versions:
            copy = t
        elif t.startswith(DIFF_HEAD):
            copy = apply_udiff(copy, t) if copy is not None else None
    return copy


# Codex hands an MCP tool's text to the model under a header of its own.
CODEX_WRAP = re.compile(r"^Wall time: [0-9.]+ seconds\nOutput:\n")


def unwrapped(text):
    """The tool's own text within what the model got, and where it starts (Codex's header
    removed): a result is judged by the server's text, which must be there whole."""
    m = CODEX_WRAP.match(text)
    return text[m.end():] if m else text


def read_results(w, host, tool):
    """Every read result the model received, once each (in the request that first carried it),
    with what the context of that request held before it: [{prompt, text, before}]."""
    d = os.path.join(w.sb.logs, "mock-bodies")
    out = []
    for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        with open(os.path.join(d, name)) as f:
            body = json.load(f)
        a = mock_model.claude_analyse(body) if host == "claude" else mock_model.codex_analyse(body)
        if a["is_compact"]:
            continue
        ctx, last = a["context_results"], a["last_results"]
        for k, r in enumerate(last):
            if r["tool"] != tool:
                continue
            idx = len(ctx) - len(last) + k
            out.append({"prompt": a["prompt"], "text": unwrapped(r["text"] or ""),
                        "before": [unwrapped(t or "") for t in ctx[:max(idx, 0)]], "is_error": r["is_error"]})
    return out


def judge(res, current, versions):
    """What a read result is, and whether the model's context backs it: (kind, backed)."""
    t, copy = res["text"], held_copy(res["before"], versions)
    if t == current:
        return "whole", True
    if t.startswith(STUB_HEAD):
        return "stub", copy == current
    if t.startswith(DIFF_HEAD):
        return "diff", copy is not None and apply_udiff(copy, t) == current
    return "other", False


def scenario(E, host):
    """E: the leanctx_e2e module (check, World, ok_run, ...)."""
    tag = "%s/serve" % host
    w = E.World("%s-serve" % host, mode="installed")
    try:
        check_registration(E, w, host, tag)
        a = os.path.join(w.sb.project, A)
        # Under the 2,000 characters a logged result keeps, and large enough for a one-line change
        # to be a diff (the server sends one only when it is at most half the file).
        v1 = "".join("A line %03d\n" % i for i in range(150))
        v2 = v1.replace("A line 010\n", "A line 010 edited outside\n")
        with open(a, "w") as f:
            f.write(v1)
        with open(os.path.join(w.sb.project, BIG), "w") as f:
            f.write(fixture_text.big_text(BIG, 60000))

        def edit():
            with open(a, "w") as f:
                f.write(v2)

        # (prompt, the version of A it reads, what the model must get, leanctx's answer in its
        # stats: kind and reason)
        compacted = "compacted" if host == "claude" else "window-changed"
        plan = [("read A.txt via ctx_read", v1, "whole", "whole -"),
                ("read A.txt via ctx_read again", v1, "stub", "stub -"),
                ("read A.txt via ctx_read after the edit", v2, "diff", "diff -"),
                ("read A.txt via ctx_read once more", v2, "stub", "stub -"),
                # Claude: the transcript's rewind record; Codex: its new rollout file ends every
                # earlier delivery (a compaction record)
                ("read A.txt via ctx_read after the rewind", v2, "whole",
                 "withheld " + ("withdrawn" if host == "claude" else "compacted")),
                ("read A.txt via ctx_read after the compaction", v2, "whole", "withheld " + compacted),
                ("read A.txt via ctx_read as a subagent", v2, "whole", "whole -"),
                # The copy read after the compaction is still the model's (the witness must not
                # read the compaction the hooks recorded again and end it).
                ("read A.txt via ctx_read after the large file", v2, "stub", "stub -")]
        (run_claude_session if host == "claude" else run_codex_session)(E, w, tag, plan, edit)
        tool = "mcp__leanctx__read" if host == "claude" else "read"
        got = read_results(w, host, tool)
        versions = (v1, v2)
        for prompt, cur, want, _ in plan:
            mine = [g for g in got if g["prompt"] == prompt]
            kinds = [judge(g, cur, versions) for g in mine]
            E.check("%s: %r: the model got A %s, backed by its context" % (tag, prompt, want),
                    len(mine) == 1 and kinds[0] == (want, True),
                    "%s %s" % (kinds, [g["text"][:160] for g in mine]))
        current = {p: cur for p, cur, _, _ in plan}
        every = [(g["prompt"], judge(g, current.get(g["prompt"], v2), versions)) for g in got if A in g["prompt"]]
        E.check("%s: oracle: each of the %d reads of A the model got is whole, or a stub or diff its "
                "context backs" % (tag, len(every)),
                every and all(backed for _, (kind, backed) in every), every)
        answers = served_answers(w, A)
        E.check("%s: leanctx's answers, in its stats: %s" % (tag, ", ".join(a for *_, a in plan)),
                answers == [a for *_, a in plan], answers)
        st = json.loads(w.leanctx(["hooks", "status", E.HOST_NAME[host], "--json"]).stdout)
        srv = st["hosts"][0]["server"]
        E.check("%s: `leanctx hooks status` says the server is registered and was called" % tag,
                srv.get("state") == "installed" and srv.get("last_call_ms"), srv)
        big = [g for g in got if BIG in g["prompt"]]
        if host == "claude":
            E.check("%s: a 60 KB file reaches the model whole (no preview: the server declares "
                    "maxResultSizeChars)" % tag,
                    len(big) == 1 and big[0]["text"] == fixture_text.big_text(BIG, 60000),
                    [(len(g["text"]), g["text"][:200]) for g in big])
        else:
            # Codex's output budget (10 KB by default) would cut a whole 60 KB result in the middle:
            # the server sends the first lines that fit, with where to go on, and the model gets them
            # as sent.
            text = big[0]["text"] if big else ""
            body = text.split("\n", 1)[1] if "\n" in text else ""
            body = body[:body.rfind("\n[")+1] if "\n[" in body else body
            E.check("%s: a 60 KB file reaches the model as the server's first page, uncut" % tag,
                    len(big) == 1 and text.startswith("[%s: lines 1-" % BIG) and "more lines: read with offset=" in text
                    and fixture_text.big_text(BIG, 60000).startswith(body) and len(body) > 1000,
                    [(len(g["text"]), g["text"][:200], g["text"][-200:]) for g in big])
    finally:
        w.close()


def served_answers(w, name):
    """What the server answered for each read of `name`, oldest first ("kind reason"), from the
    stats log it appends one line to per answer (R, t, via, host, conversation, kind, reason,
    file, sent, whole)."""
    try:
        with open(os.path.join(w.data, "stats.log")) as f:
            rows = [l.rstrip("\n").split("\t") for l in f]
    except OSError:
        return []
    return ["%s %s" % (r[5], r[6]) for r in rows
            if len(r) > 7 and r[0] == "R" and r[2] == "serve" and os.path.basename(r[7]) == name]


def check_registration(E, w, host, tag):
    """The server the hosts will start is the one the installer registered, and only that one."""
    if host == "claude":
        with open(os.path.join(w.sb.home, ".claude.json")) as f:
            servers = json.load(f).get("mcpServers") or {}
        E.check("%s: ~/.claude.json has the installer's leanctx server and no other" % tag,
                list(servers) == ["leanctx"] and servers["leanctx"].get("command") == E.LEANCTX
                and servers["leanctx"].get("args") == ["serve"], servers)
    else:
        with open(os.path.join(w.sb.codex_home, "config.toml")) as f:
            installed = f.read()
        w.sb._write_codex_config()  # what every run_codex writes (mock provider, features)
        with open(os.path.join(w.sb.codex_home, "config.toml")) as f:
            now = f.read()
        E.check("%s: config.toml keeps the installer's [mcp_servers.leanctx] byte for byte, and has "
                "no other server" % tag,
                installed.strip() and installed.strip() in now and re.findall(r"^\[mcp_servers\.([^\].]+)", now, re.M)
                == ["leanctx"], now)


def run_claude_session(E, w, tag, plan, edit):
    plan = [p[0] for p in plan]
    u = [str(uuid.uuid4()) for _ in range(10)]
    # The rewind goes back to the first prompt: every copy of A the model had goes with it (a
    # rewind to a later prompt would leave the first copy, and the next read could be a diff).
    steps = [("user", u[0], plan[0]), ("user", u[1], plan[1]), ("call", edit),
             ("user", u[2], plan[2]), ("user", u[3], plan[3]),
             ("rewind", u[0]),
             ("user", u[4], plan[4]),
             ("user", u[5], "/compact"),
             ("user", u[6], plan[5]),
             ("user", u[7], "[subagent] " + plan[6]),
             ("user", u[8], "read %s via ctx_read" % BIG),
             ("user", u[9], plan[7])]
    rc, lines, sid = E.run_claude_stream(w, steps, timeout=600)
    results = [m for m in lines if m.get("type") == "result"]
    E.check("%s: one Claude Code process ran the session: %d turns answered, exit 0" % (tag, len(steps) - 2),
            rc == 0 and len(results) == len(steps) - 2 and not any(m.get("is_error") for m in results),
            "rc=%s results=%s" % (rc, json.dumps([(m.get("subtype"), m.get("is_error")) for m in results])[:600]))
    rewound = [m for m in lines if m.get("type") == "control_response"]
    E.check("%s: the host rewound" % tag, len(rewound) == 1 and '"rewound": true' in json.dumps(rewound[0]),
            json.dumps(rewound)[:600])
    compacted = [m for m in lines if m.get("type") == "system" and m.get("subtype") == "compact_boundary"]
    E.check("%s: the host compacted" % tag, len(compacted) >= 1,
            json.dumps([(m.get("type"), m.get("subtype")) for m in lines])[:600])


def run_codex_session(E, w, tag, plan, edit):
    """The same session in one `codex app-server` process (live.CodexApp): Codex's own compaction
    (`thread/compact/start`, what /compact does) and its rewind (`thread/revert`)."""
    plan = [p[0] for p in plan]
    c = live.CodexApp(w.sb)
    try:
        E.check("%s: codex app-server started a thread" % tag, c.thread, json.dumps(c.lines)[-600:])
        turns = []

        def turn(prompt):
            tid, ok = c.turn(prompt)
            E.check("%s: turn %r completed" % (tag, prompt), ok, json.dumps(c.lines[-3:])[-600:])
            turns.append(tid)

        turn(plan[0])
        turn(plan[1])
        edit()
        turn(plan[2])
        turn(plan[3])
        r = c.revert(turns[0])
        E.check("%s: the host rewound (thread/revert to before the first turn)" % tag,
                r is not None and "error" not in r, json.dumps(r)[:600])
        turn(plan[4])
        E.check("%s: the host compacted (thread/compact/start)" % tag, c.compact(), json.dumps(c.lines[-3:])[-600:])
        turn(plan[5])
        turn("[subagent] " + plan[6])
        turn("read %s via ctx_read" % BIG)
        turn(plan[7])
    finally:
        c.close()
