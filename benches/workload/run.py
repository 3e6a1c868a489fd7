#!/usr/bin/env python3
"""The workload benchmark (issue 23) and stats' 1 % check (issue 24): a scripted coding session on
both real hosts, offline, measuring the bytes of tool results the model receives with
`leanctx serve` against a plain read server, a path-keyed one (lean-ctx's rule) and the limit.
benches/README.md ("Workload") says what is measured and how.

    python3 benches/workload/run.py [--quick] [--leanctx BIN] [--host claude|codex|both]
                                    [--arms serve,plain,pathkey] [--out FILE] [--keep]

Writes benches/workload/RESULTS.json (--out) and prints a table. Exits 1 when serve gave a wrong
stub or diff, or `leanctx stats` disagrees with the ground truth by more than 1 %.
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import arms  # noqa: E402
import script as S  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
TOLERANCE = 0.01


def agree(a, b):
    return b > 0 and abs(a - b) <= TOLERANCE * b


def stats_check(serve, plain_bytes):
    """Issue 24: `leanctx stats` after the serve arm against the ground truth: the bytes the mock
    model received from serve (the oracle) and what a plain server sends for the same reads (the
    whole version each met; the plain arm measures exactly that when its session is the same)."""
    st = (serve.get("stats") or {}).get("totals") or {}
    got = serve["totals"]["bytes_received"]
    out = {"stats_bytes_sent": st.get("bytes_sent"), "oracle_bytes_received": got,
           "stats_bytes_whole": st.get("bytes_whole"), "plain_bytes": plain_bytes,
           "stats_reads": st.get("reads"), "oracle_reads": serve["totals"]["reads"],
           "stats_bytes_saved": st.get("bytes_saved"), "true_bytes_saved": plain_bytes - got}
    out["sent_agrees"] = st.get("bytes_sent") is not None and agree(st["bytes_sent"], got)
    out["whole_agrees"] = st.get("bytes_whole") is not None and agree(st["bytes_whole"], plain_bytes)
    out["ok"] = out["sent_agrees"] and out["whole_agrees"]
    if serve.get("stats", {}).get("error"):
        out["error"] = serve["stats"]["error"]
    return out


def summarize(host, results):
    """Per arm: bytes received, reads, stubs, diffs, wrong stubs, saving vs plain, fraction of the
    limit's saving. Each arm is judged against the reads it saw: `plain_bytes` is what a plain
    server sends for them (the whole version each read met: mcp_server.py --root sends the file,
    as the plain arm's own measurement shows), the limits are computed from its own oracle. The
    arms normally see the same reads and versions; when a host behaved differently in one arm
    (a retried or refused call shifts the edits scheduled inside turns), `same_session` is false
    and each arm still has a true reference."""
    by = {r["arm"]: r for r in results}
    ref = by.get("plain") or by.get("serve")
    arms_out = {}
    for name, r in by.items():
        t = r["totals"]
        arms_out[name] = dict(t, seconds=r["seconds"], runs=r["runs"], hook_reads=r["hook_reads"],
                              compaction_requests=r["compaction_requests"])
    for name, key in (("limit", "limit_bytes"), ("limit-same-server", "limit_same_server_bytes")):
        arms_out[name] = {"bytes_received": ref["totals"][key], "reads": ref["totals"]["reads"],
                          "plain_bytes": ref["totals"]["plain_bytes"], "limit_bytes": ref["totals"]["limit_bytes"],
                          "limit_same_server_bytes": ref["totals"]["limit_same_server_bytes"],
                          "computed_from": "the %s arm's oracle" % ref["arm"]}
    for name, a in arms_out.items():
        plain, limit, same = a["plain_bytes"], a["limit_bytes"], a["limit_same_server_bytes"]
        got = a["bytes_received"]
        a["saving_vs_plain"] = round(1 - got / plain, 4) if plain else None
        a["fraction_of_limit_saving"] = round((plain - got) / (plain - limit), 4) if plain > limit else None
        a["fraction_of_same_server_limit_saving"] = round((plain - got) / (plain - same), 4) if plain > same else None
    out = {"plain_bytes": ref["totals"]["plain_bytes"], "arms": arms_out,
           "same_session": len({r["totals"]["plain_bytes"] for r in results}) == 1}
    if "plain" in by:
        out["plain_arm_measured"] = by["plain"]["totals"]["bytes_received"]
    if "serve" in by:
        out["stats_check"] = stats_check(by["serve"], by["serve"]["totals"]["plain_bytes"])
        out["ack_hook_installed_by_leanctx"] = by["serve"].get("ack_hook_installed_by_leanctx")
    return out


def failures(host, summary, compactions):
    bad = []
    for name, a in summary["arms"].items():
        if a.get("compaction_requests", compactions) < compactions:
            bad.append("%s/%s: %d compactions scripted, %d compaction requests reached the model"
                       % (host, name, compactions, a["compaction_requests"]))
    serve = summary["arms"].get("serve")
    if serve:
        if serve["wrong_stubs"] or serve["wrong_diffs"]:
            bad.append("%s: serve gave %d wrong stubs, %d wrong diffs" % (host, serve["wrong_stubs"], serve["wrong_diffs"]))
        if serve["hook_reads"] + serve["unknown_version"] != serve["reads"]:
            bad.append("%s: %d reads in the oracle, %d seen by the hook, %d of unknown version"
                       % (host, serve["reads"], serve["hook_reads"], serve["unknown_version"]))
        sc = summary.get("stats_check") or {}
        if not sc.get("ok"):
            bad.append("%s: leanctx stats disagrees with the ground truth by more than 1 %%: %s" % (host, sc))
    return bad


def table(report):
    rows = ["| host | arm | bytes received | reads | stubs | diffs | wrong stubs | saving vs plain | of the limit's saving | of the same-server limit's |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for host, s in report["hosts"].items():
        for arm in ("plain", "pathkey", "serve", "limit", "limit-same-server"):
            a = s["arms"].get(arm)
            if not a:
                continue
            pct = lambda x: "-" if x is None else "%.1f %%" % (100 * x)
            rows.append("| %s | %s | %d | %d | %s | %s | %s | %s | %s | %s |" % (
                host, arm, a["bytes_received"], a["reads"], a.get("stubs", "-"), a.get("diffs", "-"),
                a.get("wrong_stubs", "-"), pct(a["saving_vs_plain"]), pct(a["fraction_of_limit_saving"]),
                pct(a["fraction_of_same_server_limit_saving"])))
    return "\n".join(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="the small session the e2e run uses")
    ap.add_argument("--leanctx", default=os.path.join(REPO, "target", "debug", "leanctx"))
    ap.add_argument("--host", default="both", choices=["claude", "codex", "both"])
    ap.add_argument("--arms", default="serve,plain,pathkey")
    ap.add_argument("--out", default=None, help="default: benches/workload/RESULTS.json (full run only)")
    ap.add_argument("--keep", action="store_true", help="keep the sandboxes")
    ap.add_argument("--details", help="write every read of every arm (JSON) to this file")
    a = ap.parse_args()
    bin_ = os.path.abspath(a.leanctx)
    arms.H.isolate_network()
    sc = S.make(quick=a.quick)
    hosts = ["claude", "codex"] if a.host == "both" else [a.host]
    report = {"seed": sc["seed"], "quick": a.quick, "reads_scripted": sc["reads"], "files": len(sc["files"]),
              "files_read": len({p for e in sc["events"] if e["op"] == "turn" for p in e["reads"]}),
              "outside_edits": sc["edits"], "turns": sum(e["op"] == "turn" for e in sc["events"]),
              "compactions": sum(e["op"] == "compact" for e in sc["events"]),
              "subagent_turns": sum(1 for e in sc["events"] if e.get("subagent")), "chats": 2,
              "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "load_average_at_start": os.getloadavg()[0], "hosts": {}}
    bad, details = [], {}
    for host in hosts:
        results = []
        for arm in a.arms.split(","):
            print("%s/%s ..." % (host, arm), flush=True)
            r = arms.run_arm(host, arm, sc, bin_=bin_, keep=a.keep)
            results.append(r)
            print("%s/%s: %s" % (host, arm, json.dumps(r["totals"])), flush=True)
        report["hosts"][host] = summarize(host, results)
        details[host] = {r["arm"]: r["per_read"] for r in results}
        bad += failures(host, report["hosts"][host], report["compactions"])
        sc_ = report["hosts"][host].get("stats_check")
        if sc_:
            print("%s: leanctx stats: sent %s vs the model received %s; whole %s vs plain %s (%s)" % (
                host, sc_["stats_bytes_sent"], sc_["oracle_bytes_received"], sc_["stats_bytes_whole"],
                sc_["plain_bytes"], "within 1 %" if sc_["ok"] else "NOT within 1 %"), flush=True)
    report["load_average_at_end"] = os.getloadavg()[0]
    print(table(report))
    out = a.out or (None if a.quick else os.path.join(HERE, "RESULTS.json"))
    if out:
        with open(out, "w") as f:
            json.dump(report, f, indent=1)
            f.write("\n")
    if a.details:
        with open(a.details, "w") as f:
            json.dump(details, f)
    for b in bad:
        print("FAIL " + b)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
