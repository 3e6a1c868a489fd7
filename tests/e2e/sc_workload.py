"""e2e scenario `workload`: the quick variant of the workload benchmark (benches/workload, issues 23
and 24) on a real host. Two chats, 20 reads of 6 real files, outside edits inside and between
turns, a subagent, a compaction:
  - `leanctx serve`: every stub and diff the model got is backed by what its request held (the
    oracle: the mock model's request bodies), 0 wrong; it stubs and saves;
  - `leanctx stats --json` agrees within 1 % with the ground truth: the bytes the model received
    from serve, and what a plain server sends for the same reads (the script's file versions);
  - the path-keyed server (lean-ctx's rule) on the same session: the oracle finds its wrong stubs
    (so the check above can fail).
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "benches", "workload"))
import arms  # noqa: E402
import run as workload  # noqa: E402
import script  # noqa: E402


def sc_workload(host, check, leanctx, keep=False):
    tag = "%s/workload" % host
    sc = script.make(quick=True)
    results = []
    for arm in ("serve", "pathkey"):
        try:
            results.append(arms.run_arm(host, arm, sc, bin_=leanctx, keep=keep, timeout=120, say=lambda *_: None))
        except arms.ArmError as e:
            check("%s: the quick session ran with the %s server" % (tag, arm), False, str(e))
            return
    s = workload.summarize(host, results)
    serve, pk = s["arms"]["serve"], s["arms"]["pathkey"]
    # A call the host answers itself (no hook, no server: seen once in a full Claude Code run) is
    # reported, not failed: it is the host's, and costs every server the same.
    check("%s: serve: all %d scripted reads reached the model, every one the hook saw has a known version"
          % (tag, sc["reads"]), serve["reads"] == sc["reads"] == serve["hook_reads"] + serve["unknown_version"],
          serve)
    compactions = sum(e["op"] == "compact" for e in sc["events"])
    check("%s: the scripted compaction reached the model as a compaction request, in both arms (%d, %d)"
          % (tag, serve["compaction_requests"], pk["compaction_requests"]),
          min(serve["compaction_requests"], pk["compaction_requests"]) >= compactions > 0, s["arms"])
    check("%s: serve: 0 wrong stubs, 0 wrong diffs (oracle: %d stubs, %d diffs, %d whole)"
          % (tag, serve["stubs"], serve["diffs"], serve["whole"]),
          serve["wrong_stubs"] == 0 and serve["wrong_diffs"] == 0, serve)
    check("%s: serve stubs re-reads and saves bytes (%d of %d plain)" % (tag, serve["bytes_received"], s["plain_bytes"]),
          serve["stubs"] > 0 and serve["bytes_received"] < s["plain_bytes"], serve)
    st = s["stats_check"]
    check("%s: leanctx stats agrees within 1 %%: sent %s vs the model received %s; whole %s vs plain %s"
          % (tag, st["stats_bytes_sent"], st["oracle_bytes_received"], st["stats_bytes_whole"], st["plain_bytes"]),
          st["ok"], st)
    check("%s: the oracle finds the path-keyed server's wrong stubs (%d)" % (tag, pk["wrong_stubs"]),
          pk["wrong_stubs"] > 0 and pk["reads"] == sc["reads"], pk)
