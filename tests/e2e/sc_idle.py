"""Idle returns with the real Claude Code 2.1.328: the client cut and the API's clearing.

After more than 3,900 s without a response, Claude Code (when its remotely rolled-out flags say so)
takes old MCP results out of the model's context at the next prompt, with no hook: it replaces
them with `[Old tool result content cleared]` and writes a `tool_results_cut` record to its
transcript (the client cut), or asks the API to clear them (`clear_tool_uses_20250919` in the
request's `context_management`). docs/DELIVERY.md §8 has the study and its fixtures.

Here the real host does it, offline:
- the flags are seeded into `~/.claude.json` `cachedGrowthBookFeatures`, which Claude Code reads
  with `CLAUDE_CODE_GB_DISK_CACHE_WHEN_TELEMETRY_OFF=1` (the harness runs with telemetry off);
- the idle gap is made by `timeshift.c` (LD_PRELOAD, compiled at test time): the first runs see a
  clock two hours behind, the last one the real clock. Every process the host starts (hooks, the
  MCP server, `leanctx`) inherits the shim, so all of them see the same clock.
- leanctx is installed by its own installer (`leanctx hooks install`, World); the MCP server asks
  `leanctx stub` before each read (ledger mode).

Each scenario: 32 reads of 16 KB files (the cut needs at least 30 clearable tool uses and 20,000
tokens), then a re-read with no idle gap (nothing withdrawn: a stub), then, two hours later by the
clock, a re-read of the first file: leanctx must withhold, and the model's requests must show that
the old copy really was gone (so the test proves the withdrawal happened) while newer ones stayed.
"""
import glob
import json
import os
import subprocess
import time
import uuid

import live

E = None  # leanctx_e2e, set by scenarios()
HERE = os.path.dirname(os.path.abspath(__file__))
FILES = ["big-16384-a%02d" % k for k in range(1, 33)]
SHIFT_S = -7200  # two hours: past Claude Code's 3,900 s and leanctx's 3,840 s
RUN_TIMEOUT = 600  # 32 reads, each with a stub question and three hooks, on a loaded machine
# Flag values from the study's runs (tests/fixtures/payloads/withdrawal/claude/*/claude-json-flags.json).
FLAGS_CUT = {"tengu_jiggly_blossom": "on", "tengu_wise_pearl": {"write_records": True},
             "tengu_sorted_plum": True, "tengu_humble_tide": True}
FLAGS_SERVER_EDIT = {"tengu_jiggly_blossom": "on", "tengu_sorted_plum": True, "tengu_humble_tide": True}
CUT_TEXT = "[Old tool result content cleared]"


def build_shim(dest):
    """Compile timeshift.c into `dest` (a shared object); (path or None, compiler output)."""
    cc = os.environ.get("CC", "cc")
    out = os.path.join(dest, "timeshift.so")
    try:
        p = subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", out, os.path.join(HERE, "timeshift.c"), "-ldl"],
                           capture_output=True, text=True, timeout=120)
    except OSError as e:
        return None, "%s: %s" % (cc, e)
    return (out if p.returncode == 0 else None), p.stdout + p.stderr


def seed_flags(w, flags):
    """Claude Code's GrowthBook disk cache in the sandbox's ~/.claude.json."""
    path = os.path.join(w.sb.home, ".claude.json")
    with open(path) as f:
        doc = json.load(f)
    doc["cachedGrowthBookFeatures"] = flags
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)


def transcript_lines(w, sid):
    out = []
    for p in glob.glob(os.path.join(w.sb.claude_dir, "projects", "*", "%s.jsonl" % sid)):
        with open(p) as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    return out


def first_read_id(w, path):
    """The tool-use id of the model's first ctx_read of `path` (what leanctx keeps as the ref)."""
    for q in E.main_requests(w):
        for t in q.get("tool_results", []):
            if t.get("tool") in E.CTX_TOOLS and (t.get("input") or {}).get("path") == path:
                return t.get("tool_use_id")
    return None


def idle_return(host, scen, flags, server_edit, live=False, cut=True):
    """The four turns, then the checks. `live`: one host process over stream-json whose clock jumps
    between the second and third turn (the return is seen by `UserPromptSubmit`, not by a
    resume's `SessionStart`); else one `-p` run per turn, resumed. `cut`: the flags make the host
    withdraw (else the control: no flag, nothing withdrawn)."""
    tag = "%s/%s" % (host, scen)
    w = E.World("%s-%s" % (host, scen), mode="ledger")
    try:
        so, why = build_shim(w.sb.root)
        if not E.check("%s: the clock shim (tests/e2e/timeshift.c) compiles" % tag, so, why):
            return
        seed_flags(w, flags)
        shift = os.path.join(w.sb.root, "timeshift")

        def set_shift(s):
            with open(shift, "w") as f:
                f.write(str(s))
            time.sleep(1)  # the shim re-reads the file at most every 200 ms

        set_shift(SHIFT_S)
        env = {"LD_PRELOAD": so, "TIMESHIFT_FILE": shift, "CLAUDE_CODE_GB_DISK_CACHE_WHEN_TELEMETRY_OFF": "1"}
        first = FILES[0]
        prompts = ["[reads=%s] read all of them" % ",".join(FILES),  # two hours ago
                   "read %s via ctx_read again" % first,  # still then: no gap
                   "read %s via ctx_read once more" % first,  # now: 7,200 s later
                   "[reads=%s,%s] after the return" % (first, FILES[-1])]  # right after
        if live:
            steps = [("user", str(uuid.uuid4()), p) for p in prompts]
            rc, lines, sid = E.run_claude_stream(w, steps[:2] + [("call", lambda: set_shift(0))] + steps[2:],
                                                 timeout=2 * RUN_TIMEOUT, env=env)
            done = [m for m in lines if m.get("type") == "result"]
            E.check("%s: one live host process ran the four turns" % tag,
                    rc == 0 and len(done) == 4 and not any(m.get("is_error") for m in done),
                    "rc %s, results %s" % (rc, json.dumps(done)[:400]))
        else:
            r = w.run(host, prompts[0], env=env, timeout=RUN_TIMEOUT)
            E.ok_run("%s: 32 reads, two hours ago" % tag, r)
            sid = r.session_id
            for k, p in enumerate(prompts[1:], 1):
                if k == 2:
                    set_shift(0)
                E.ok_run("%s: turn %d, resumed" % (tag, k + 1),
                         w.run(host, p, resume=sid, env=env, timeout=RUN_TIMEOUT))

        mcp = w.mcp()
        E.check("%s: leanctx recorded 32 deliveries (not-delivered each)" % tag,
                len(mcp) >= 32 and all(E.lc(c).get("exit") == 1 and E.reason(c) == "not-delivered"
                                       for c in mcp[:32]), E.summary(mcp[:32]))
        E.check("%s: with no withdrawal the re-read is still a stub (confirmed-delivery)" % tag,
                len(mcp) > 32 and E.lc(mcp[32]).get("exit") == 0 and E.reason(mcp[32]) == "confirmed-delivery",
                E.summary(mcp[32:33]))
        res = E.model_results(w, sid)
        E.check("%s: oracle: the model got `[unchanged] %s`, its first copy whole beside it" % (tag, first),
                len(res) > 32 and E.is_stub(res[32], first) and first in res[32]["_context"], E.desc(res[32:33]))

        qs = [q for q in E.main_requests(w, sid) if prompts[2] in (q.get("prompt") or "")]
        back = qs[0] if qs else {}
        lines = transcript_lines(w, sid)
        if not server_edit:
            # The order the provisional idle rule relies on (docs/DELIVERY.md §8): after the returning
            # prompt, a cut record comes before the first answer, and that answer's
            # context_management says what the host did to the request (null: nothing).
            E.check("%s: the host's transcript orders the return: prompt, cut record (if any), first "
                    "answer, which states the cut (or none)" % tag, *return_order(lines, prompts[2], cut))
        if not cut:
            E.check("%s: the host withdrew nothing: no tool_results_cut, no context_management, and the model's "
                    "first request after the return holds %s and %s whole" % (tag, first, FILES[-1]),
                    not any((l.get("attachment") or {}).get("type") == "tool_results_cut" for l in lines)
                    and back and first in back.get("context_whole", []) and FILES[-1] in back.get("context_whole", []),
                    json.dumps({"context_whole": back.get("context_whole"), "n": len(qs)}))
            third = mcp[33] if len(mcp) > 33 else {}
            # Its first answer may not be on disk yet when the re-read in that very answer is asked:
            # withheld then (the return is not settled), else a stub. Both are true answers.
            E.check("%s: leanctx: the re-read after the return is a stub, or withheld until the host's "
                    "first answer is on disk (transcript-unavailable)" % tag,
                    (E.lc(third).get("exit"), E.reason(third)) in ((0, "confirmed-delivery"),
                                                                     (1, "transcript-unavailable")),
                    E.summary(mcp[33:34]))
            E.check("%s: leanctx: right after, %s and %s are stubs (the return settled: nothing withdrawn)"
                    % (tag, first, FILES[-1]),
                    [(E.lc(c).get("exit"), E.reason(c)) for c in mcp[34:]] == [(0, "confirmed-delivery")] * 2,
                    E.summary(mcp[34:]))
            E.check_stubs_truthful(tag, w)
            return
        old_id = first_read_id(w, first)
        if server_edit:
            edits = [e for e in ((back.get("context_management") or {}).get("edits") or [])
                     if e.get("type") == "clear_tool_uses_20250919"]
            E.check("%s: the host asked the API to clear old results (clear_tool_uses_20250919), "
                    "the MCP tool not excluded" % tag,
                    edits and all("mcp__ctx__ctx_read" not in (e.get("exclude_tools") or []) for e in edits),
                    json.dumps(back.get("context_management")))
            E.check("%s: oracle: the (emulated) API cleared the first read's result" % tag,
                    old_id and old_id in (back.get("cleared") or []), "%s %s" % (old_id, back.get("cleared")))
            applied = [l for l in transcript_lines(w, sid) if l.get("type") == "assistant" and "clear_tool_uses_20250919"
                       in json.dumps((l.get("message") or {}).get("context_management"))]
            E.check("%s: the host's transcript records the applied clearing" % tag, applied,
                    "no assistant line with context_management.applied_edits")
        else:
            cuts = [l.get("attachment") for l in transcript_lines(w, sid)
                    if (l.get("attachment") or {}).get("type") == "tool_results_cut"]
            E.check("%s: the host's transcript records a tool_results_cut naming the first read" % tag,
                    cuts and old_id in (cuts[-1].get("callIds") or []),
                    "%s %s" % (old_id, json.dumps(cuts)[:400]))
            E.check("%s: oracle: the model's request holds `%s` where the first read's result was" % (tag, CUT_TEXT),
                    old_id and (back.get("context_short") or {}).get(old_id) == CUT_TEXT,
                    "%s %s" % (old_id, json.dumps(back.get("context_short"))[:400]))
        E.check("%s: oracle: the model's first request after the return lacks %s whole, but keeps %s "
                "(the old result was withdrawn, not compacted)" % (tag, first, FILES[-1]),
                back and first not in back.get("context_whole", []) and FILES[-1] in back.get("context_whole", []),
                json.dumps({"context_whole": back.get("context_whole"), "n": len(qs)}))
        third = mcp[33] if len(mcp) > 33 else {}
        # The return is provisional (live, or resumed once the first process said SessionEnd):
        # withheld until the first answer is on disk (transcript-unavailable), then by the cut
        # record's exact ids or the clearing (withdrawn); `compacted` if the resume ended everything.
        E.check("%s: leanctx withholds the re-read after the idle return" % tag,
                E.lc(third).get("exit") == 1 and E.reason(third) in (
                    ("withdrawn", "transcript-unavailable") if live
                    else ("compacted", "withdrawn", "transcript-unavailable")),
                E.summary(mcp[33:34]))
        E.check("%s: oracle: the model got %s whole again, not a stub" % (tag, first),
                len(res) > 33 and first in res[33].get("whole", []) and not res[33].get("unchanged"),
                E.desc(res[33:34]))

        # 4. Right after the return: the copy just sent backs a stub again (the witness reads past
        # the withdrawal record and ends only what it names), unless the host keeps asking the API
        # to clear: each answer then reports a clearing (a count, not which), and leanctx, which
        # cannot tell whether the new copy was among them, withholds. A file read only before the
        # return: a stub (the return settled by the cut record, which did not name it), resumed too:
        # the first process said SessionEnd, so the resume is the session's only process and its
        # return is provisional as a live one's; sent whole after the clearing (everything ended).
        kept = not server_edit
        last = (0, "confirmed-delivery") if kept else (1, "compacted")
        want = [(1, "withdrawn") if server_edit else (0, "confirmed-delivery"), last]
        # Resumed per turn, a `-p` process's SessionEnd hook can still be running when the next
        # process starts (seen once in .ci/run under load: both re-reads `compacted`): the witness
        # then knows two processes and ends everything, which withholds more, never less. The
        # model's side is checked below either way.
        wants = [want] + ([[(1, "compacted"), last]] if server_edit and not live else [])
        E.check("%s: leanctx: %s; %s %s" % (
                    tag, "%s withheld again (withdrawn: the API's clearing names no ids)" % first if server_edit
                    else "%s a stub on the copy sent after the return" % first, FILES[-1],
                    "a stub (not cut)" if kept else "withheld (compacted)"),
                [(E.lc(c).get("exit"), E.reason(c)) for c in mcp[34:]] in wants, E.summary(mcp[34:]))
        got = res[34:]
        E.check("%s: oracle: the model got %s, then %s" % (
                    tag, "%s whole" % first if server_edit else "`[unchanged] %s`" % first,
                    "`[unchanged] %s`" % FILES[-1] if kept else "%s whole" % FILES[-1]),
                len(got) == 2 and (first in got[0].get("whole", []) if server_edit else E.is_stub(got[0], first))
                and (E.is_stub(got[1], FILES[-1]) if kept else FILES[-1] in got[1].get("whole", [])), E.desc(got))
        E.check_stubs_truthful(tag, w)
    finally:
        w.close()


def two_process_return(host):
    """One session in two live host processes; only A comes back after the idle gap.

    A (stream-json) reads the 32 files two hours ago by its clock; B (`--resume`, another live
    process, started while A runs, as in tests/fixtures/payloads/withdrawal/claude/two-process/)
    reads its own file X then and keeps working, its clock moved forward 2,400 s a turn (never idle
    past 3,900 s); then A's clock jumps to now and A re-reads its first file (its idle return, the
    client cut's flags seeded); B re-reads X (and A's first file, which B loaded with the history);
    A re-reads its first and last files. Each process has its own clock file, inherited by its
    hooks, its MCP server and the `leanctx` they run. The oracle is each process's requests to
    the model (docs/DELIVERY.md §8, "The idle return of one process")."""
    tag = "%s/ledger-idle-two-process" % host
    w = E.World("%s-ledger-idle-two-process" % host, mode="ledger")
    procs = []
    try:
        so, why = build_shim(w.sb.root)
        if not E.check("%s: the clock shim (tests/e2e/timeshift.c) compiles" % tag, so, why):
            return
        seed_flags(w, FLAGS_CUT)
        clocks = {name: os.path.join(w.sb.root, "timeshift-%s" % name) for name in "AB"}

        def set_shift(name, s):
            with open(clocks[name], "w") as f:
                f.write(str(s))
            time.sleep(1)  # the shim re-reads the file at most every 200 ms

        def start(name, extra=()):
            env = {"LD_PRELOAD": so, "TIMESHIFT_FILE": clocks[name], "CLAUDE_CODE_GB_DISK_CACHE_WHEN_TELEMETRY_OFF": "1"}
            p = live.ClaudeStream(w.sb, timeout=RUN_TIMEOUT, env=env, extra_args=extra)
            procs.append(p)
            return p

        done = []

        def turn(p, prompt):
            r = p.user(str(uuid.uuid4()), prompt)
            done.append((prompt, r))
            return r

        first, last, own = FILES[0], FILES[-1], "big-16384-b01"
        a_back = "read %s via ctx_read once more" % first
        b_after = "[reads=%s,%s] process B after A's return" % (own, first)
        set_shift("A", SHIFT_S)
        set_shift("B", SHIFT_S)
        a = start("A")
        turn(a, "[reads=%s] read all of them" % ",".join(FILES))  # two hours ago
        sid = a.session_id
        b = start("B", ["--resume", sid])
        turn(b, "read %s via ctx_read in process B" % own)  # B: its own delivery, then
        for k, s in enumerate((SHIFT_S + 2400, SHIFT_S + 4800)):  # B works on, 2,400 s a turn
            set_shift("B", s)
            turn(b, ("read %s via ctx_read again in process B" % own) if k == 0 else "process B works on")
        set_shift("A", 0)  # A: now, 7,200 s after its last answer
        turn(a, a_back)
        set_shift("B", 0)  # B: 2,400 s after its last turn
        turn(b, b_after)
        turn(a, "[reads=%s,%s] process A right after its return" % (first, last))
        E.check("%s: two live host processes of one session (B resumed A's while A ran) ran every turn" % tag,
                b.session_id == sid and len(done) == 7 and all(r and r.get("subtype") == "success"
                                                              and not r.get("is_error") for _, r in done),
                json.dumps([(pr[:40], (r or {}).get("subtype"), (r or {}).get("session_id")) for pr, r in done])[:600])

        mcp = w.mcp()
        names = [(c.get("arguments") or {}).get("path") for c in mcp]
        want = FILES + [own, own, first, own, first, first, last]
        E.check("%s: the MCP servers got the reads in the turns' order" % tag, names == want, json.dumps(names))
        if names != want:
            return
        by = {"A": mcp[:32] + [mcp[34]] + mcp[37:], "B": mcp[32:34] + mcp[35:37]}
        ppids = {k: {c.get("ppid") for c in v} for k, v in by.items()}
        E.check("%s: A's reads came from one server process, B's from another (each host process its own)" % tag,
                all(len(v) == 1 for v in ppids.values()) and ppids["A"] != ppids["B"], json.dumps(
                    {k: sorted(v, key=str) for k, v in ppids.items()}))
        E.check("%s: leanctx recorded A's 32 deliveries (not-delivered each)" % tag,
                all(E.lc(c).get("exit") == 1 and E.reason(c) == "not-delivered" for c in mcp[:32]),
                E.summary(mcp[:32]))
        E.check("%s: B: %s content, then a stub on its own copy before A's return" % (tag, own),
                [(E.lc(c).get("exit"), E.reason(c)) for c in mcp[32:34]]
                == [(1, "not-delivered"), (0, "confirmed-delivery")], E.summary(mcp[32:34]))

        # A's return: the host cut A's old results in A's request, and leanctx withheld.
        qs = E.main_requests(w, sid)
        a_qs = [q for q in qs if a_back in (q.get("prompt") or "")]
        back = a_qs[0] if a_qs else {}
        old_id = first_read_id(w, first)
        lines = transcript_lines(w, sid)
        cuts = [l.get("attachment") for l in lines if (l.get("attachment") or {}).get("type") == "tool_results_cut"]
        E.check("%s: the transcript holds one tool_results_cut, naming A's first read" % tag,
                len(cuts) == 1 and old_id in (cuts[0].get("callIds") or []), "%s %s" % (old_id, json.dumps(cuts)[:400]))
        E.check("%s: oracle: A's first request after its return holds `%s` where %s was, and %s whole" % (
                    tag, CUT_TEXT, first, last),
                old_id and (back.get("context_short") or {}).get(old_id) == CUT_TEXT
                and first not in back.get("context_whole", []) and last in back.get("context_whole", []),
                json.dumps({"short": (back.get("context_short") or {}).get(old_id),
                            "context_whole": back.get("context_whole"), "n": len(a_qs)})[:600])
        E.check("%s: leanctx withholds A's re-read of %s after its return (withdrawn, or transcript-unavailable "
                "before the cut record is read)" % (tag, first),
                E.lc(mcp[34]).get("exit") == 1 and E.reason(mcp[34]) in ("withdrawn", "transcript-unavailable"),
                E.summary(mcp[34:35]))
        res = E.model_results(w, sid)
        got = {k: [r for r in res if r.get("tool_use_id") in {(c.get("_meta") or {}).get("claudecode/toolUseId")
                                                               for c in v}] for k, v in by.items()}
        E.check("%s: oracle: every read reached the model once, in its process's requests" % tag,
                len(got["A"]) == len(by["A"]) and len(got["B"]) == len(by["B"]),
                json.dumps({k: len(v) for k, v in got.items()}))
        if len(got["A"]) != len(by["A"]) or len(got["B"]) != len(by["B"]):
            return
        E.check("%s: oracle: A's model got %s whole again" % (tag, first),
                first in got["A"][32].get("whole", []) and not got["A"][32].get("unchanged"), E.desc(got["A"][32:33]))

        # B after A's return: the host did not touch B's context; leanctx still stubs B's own copy.
        b_qs = [q for q in qs if b_after in (q.get("prompt") or "")]
        bq = b_qs[0] if b_qs else {}
        E.check("%s: oracle: B's first request after A's return still holds %s (which A's cut took from A) and "
                "%s whole, and no result cleared" % (tag, first, own),
                bq and first in bq.get("context_whole", []) and own in bq.get("context_whole", [])
                and CUT_TEXT not in (bq.get("context_short") or {}).values(),
                json.dumps({"context_whole": bq.get("context_whole"), "n": len(b_qs)})[:600])
        b_cm = turn_answers(lines, b_after)
        a_cm = turn_answers(lines, a_back)
        E.check("%s: the host's transcript: A's answers after its return count the cut (client_cut_tool_uses), "
                "B's answers after it count none" % tag,
                a_cm and all(((cm or {}).get("client_cut_tool_uses") or 0) > 0 for cm in a_cm)
                and b_cm and not any(((cm or {}).get("client_cut_tool_uses") or 0) for cm in b_cm),
                json.dumps({"A": a_cm, "B": b_cm})[:600])
        E.check("%s: leanctx: B's re-read of its own %s after A's return is a stub (confirmed-delivery)" % (tag, own),
                (E.lc(mcp[35]).get("exit"), E.reason(mcp[35])) == (0, "confirmed-delivery"), E.summary(mcp[35:36]))
        E.check("%s: oracle: B's model got `[unchanged] %s`, its copy whole beside it" % (tag, own),
                E.is_stub(got["B"][2], own) and own in got["B"][2]["_context"], E.desc(got["B"][2:3]))
        # B's re-read of the copy it loaded with A's history: the cut record names that call, and
        # leanctx does not know which process holds it, so any answer is judged by the oracle alone.
        E.check("%s: B's re-read of %s (loaded with the history, named by A's cut record): leanctx answered "
                "and the model got a stub only beside a whole copy" % (tag, first),
                E.lc(mcp[36]).get("exit") in (0, 1) and (E.lc(mcp[36]).get("exit") == 1
                                                         or first in got["B"][3]["_context"]),
                E.summary(mcp[36:37]) + " " + E.desc(got["B"][3:4]))

        # A right after: settled by the cut record (its ids only): the copy sent at the return and
        # the uncut last file back stubs again.
        E.check("%s: leanctx: right after, A's %s (the copy sent at the return) and %s (not cut) are stubs"
                % (tag, first, last),
                [(E.lc(c).get("exit"), E.reason(c)) for c in mcp[37:]] == [(0, "confirmed-delivery")] * 2,
                E.summary(mcp[37:]))
        E.check("%s: oracle: A's model got `[unchanged]` for both, each beside a whole copy" % tag,
                E.is_stub(got["A"][33], first) and first in got["A"][33]["_context"]
                and E.is_stub(got["A"][34], last) and last in got["A"][34]["_context"], E.desc(got["A"][33:]))
        E.check_stubs_truthful(tag, w)
    finally:
        for p in procs:
            p.close()
        w.close()


def typed_prompt(line):
    """Whether a transcript line is a user's typed prompt (not a tool result, not an attachment)."""
    c = (line.get("message") or {}).get("content") if line.get("type") == "user" else None
    return isinstance(c, str) or (isinstance(c, list) and any(isinstance(b, dict) and b.get("type") == "text"
                                                              for b in c))


def turn_answers(lines, prompt):
    """The `context_management` of each answer in the transcript between the line of `prompt` and
    the next typed prompt (whichever process wrote it; the scenario runs one turn at a time)."""
    at = next((i for i, l in enumerate(lines) if typed_prompt(l) and prompt in json.dumps(l.get("message"))), None)
    out = []
    for l in lines[at + 1:] if at is not None else []:
        if typed_prompt(l):
            break
        if l.get("type") == "assistant":
            out.append((l.get("message") or {}).get("context_management"))
    return out


def return_order(lines, prompt, cut):
    """(ok, detail): in the transcript, the returning prompt's line, then (when `cut`) a
    tool_results_cut, then the first assistant line, whose context_management counts the cut
    (client_cut_tool_uses) or is null when nothing was cut."""
    at = next((i for i, l in enumerate(lines) if l.get("type") == "user" and prompt in json.dumps(l.get("message"))),
              None)
    if at is None:
        return False, "the returning prompt is not in the transcript"
    after = lines[at + 1:]
    ans = next((i for i, l in enumerate(after) if l.get("type") == "assistant"), None)
    if ans is None:
        return False, "no answer after the returning prompt"
    cuts = [i for i, l in enumerate(after) if (l.get("attachment") or {}).get("type") == "tool_results_cut"]
    cm = (after[ans].get("message") or {}).get("context_management")
    counted = (cm or {}).get("client_cut_tool_uses") or 0
    ok = (bool(cuts) and cuts[0] < ans and counted > 0) if cut else (not cuts and not counted)
    return ok, json.dumps({"cut_at": cuts[:1], "answer_at": ans, "context_management": cm})[:400]


def sc_idle_cut(host):
    """The client cut: `tool_results_cut` in the transcript, `[Old tool result content cleared]`
    in every later request."""
    idle_return(host, "ledger-idle-cut", FLAGS_CUT, server_edit=False)


def sc_idle_server_edit(host):
    """The API's clearing: no client cut (no `tengu_wise_pearl`), `clear_tool_uses_20250919` in the
    request, which the mock applies as documented and reports in `applied_edits`."""
    idle_return(host, "ledger-idle-server-edit", FLAGS_SERVER_EDIT, server_edit=True)


def sc_idle_cut_live(host):
    """The client cut in one live session (stream-json, as an SDK host drives it): no resume, no
    `SessionStart`; the clock jumps two hours between turns."""
    idle_return(host, "ledger-idle-cut-live", FLAGS_CUT, server_edit=False, live=True)


def sc_idle_nocut_live(host):
    """The control, live: no flag, so nothing is withdrawn at the return. The return is provisional
    until the host's first answer is on disk, then the earlier deliveries back stubs again."""
    idle_return(host, "ledger-idle-nocut-live", {}, server_edit=False, live=True, cut=False)


def scenarios(e2e):
    """This module's scenarios for leanctx_e2e.SCENARIOS (`e2e`: that module, for its helpers)."""
    global E
    E = e2e
    return [("ledger-idle-cut", sc_idle_cut, ("claude",)),
            ("ledger-idle-server-edit", sc_idle_server_edit, ("claude",)),
            ("ledger-idle-cut-live", sc_idle_cut_live, ("claude",)),
            ("ledger-idle-nocut-live", sc_idle_nocut_live, ("claude",)),
            ("ledger-idle-two-process", two_process_return, ("claude",))]
