"""The workload benchmark's coding session, as data: a seeded generator (fixed seed) of a project's
files and the events of a session over them. The same seed gives the same files, reads, edits and
versions in every arm, on both hosts.

Events, in order:
  {"op": "edit", "path", "text"}        an outside edit between turns (the driver writes it)
  {"op": "turn", "chat", "reads", "subagent", "first_read"}
                                        one turn (a user message to the chat's host process): the
                                        mock model reads `reads` one at a time
                                        (`subagent`: a subagent does, in its own context);
                                        `first_read` is the session-wide index of its first read
  {"op": "compact", "chat"}             the chat is compacted (Claude `/compact`; Codex
                                        `thread/compact/start`, what its /compact does)
`schedule`: {read index: [[path, text], ...]}, outside edits made inside a turn, just before that
read (benches/workload/edit_hook.py, the hosts' PreToolUse hook, writes them): always a file read
earlier in the same turn, read again right then, so the model holds the base of a diff.
`versions`: {path: [text, ...]} every text each file ever has (for the oracle).
"""
import random

SEED = 23
WORDS = ("ledger", "window", "stub", "delivery", "witness", "journal", "scope", "digest", "host",
         "caller", "session", "compact", "range", "base", "diff", "version", "policy", "gate")
DIRS = ("src/core", "src/io", "src/net", "docs", "tests", "scripts")
EXTS = {"src/core": "rs", "src/io": "rs", "src/net": "rs", "docs": "md", "tests": "py", "scripts": "sh"}

# (chat, kind, reads): the full session. kind: "read" | "sub" (a subagent reads) | "compact".
FULL_PLAN = [("A", "read", 14), ("A", "read", 14), ("B", "read", 12), ("A", "sub", 8), ("A", "read", 14),
             ("A", "compact", 0), ("A", "read", 14), ("B", "read", 14), ("B", "sub", 8), ("A", "read", 14),
             ("B", "compact", 0), ("B", "read", 14), ("A", "read", 14), ("A", "compact", 0),
             ("A", "read", 14), ("B", "read", 14), ("A", "sub", 8), ("B", "read", 14), ("A", "read", 14)]
# The e2e quick variant: two chats, an edit inside a turn and one between turns, a compaction, a
# subagent; small enough for about a minute a host.
QUICK_PLAN = [("A", "read", 6), ("B", "read", 3), ("A", "read", 6), ("A", "sub", 2), ("A", "compact", 0),
              ("A", "read", 3)]


def _file_text(rng, path, size):
    lines, n = [], 0
    while n < size:
        w = rng.choice(WORDS)
        k = rng.randrange(1000)
        line = {"rs": "fn %s_%03d(x: u64) -> u64 { x.wrapping_mul(%d) } // %s\n",
                "md": "- the %s rule %03d: see section %d of the %s notes\n",
                "py": "def test_%s_%03d(): assert check(%d) == %r\n",
                "sh": "run_%s_%03d() { echo %d \"$1\" %s; }\n"}[path.rsplit(".", 1)[1]] % (w, k, rng.randrange(99999), w)
        lines.append(line)
        n += len(line)
    return "".join(lines)


def _edit(rng, text, n):
    """An outside edit: one to three lines changed or inserted, marked with its number."""
    lines = text.splitlines(True)
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(lines))
        if rng.random() < 0.3:
            lines.insert(i, "// inserted by outside edit %d\n" % n)
        else:
            lines[i] = lines[i].rstrip("\n") + " // edit %d\n" % n
    return "".join(lines)


def make(seed=SEED, quick=False):
    rng = random.Random(seed)
    nfiles = 6 if quick else 32
    files = {}
    for i in range(nfiles):
        d = DIRS[i % len(DIRS)]
        path = "%s/%s_%02d.%s" % (d, rng.choice(WORDS), i, EXTS[d])
        size = rng.randint(800, 2500) if quick else rng.randint(1200, 7000)
        files[path] = _file_text(rng, path, size)
    paths = sorted(files)
    # Zipf-like popularity: a few files are read again and again, most now and then.
    weights = [1.0 / (k + 1) for k in range(len(paths))]
    rng.shuffle(weights)
    current = dict(files)
    versions = {p: [t] for p, t in files.items()}
    unread = list(paths)
    rng.shuffle(unread)
    recent = {}  # chat -> paths read in it, most recent last
    events, schedule = [], {}
    n_read, n_edit = 0, 0

    def edit(path):
        nonlocal n_edit
        n_edit += 1
        current[path] = _edit(rng, current[path], n_edit)
        versions[path].append(current[path])
        return current[path]

    def pick(chat):
        r = rng.random()
        if unread and r < 0.4:
            return unread.pop()
        mine = recent.get(chat, [])
        if mine and r < 0.7:
            return rng.choice(mine[-10:])
        return rng.choices(paths, weights)[0]

    plan = QUICK_PLAN if quick else FULL_PLAN
    for t, (chat, kind, n) in enumerate(plan):
        if kind == "compact":
            events.append({"op": "compact", "chat": chat})
            continue
        if t > 0:  # outside edits between turns (the quick plan: one, before its third turn)
            for _ in range((1 if t == 2 else 0) if quick else rng.randint(0, 3)):
                p = rng.choice(recent.get(chat) or paths)
                events.append({"op": "edit", "path": p, "text": edit(p)})
        reads = [pick(chat) for _ in range(n)]
        if kind == "read":  # outside edits inside the turn, of a file read earlier in it
            for _ in range(1 if quick else rng.randint(1, 2)):
                k = rng.randrange(2, n)
                p = rng.choice(reads[:k - 1])
                reads[k] = p
                schedule.setdefault(n_read + k, []).append([p, edit(p)])
        events.append({"op": "turn", "chat": chat, "reads": reads, "subagent": kind == "sub",
                       "first_read": n_read})
        n_read += n
        for p in reads:
            if p in unread:
                unread.remove(p)
            recent.setdefault(chat, []).append(p)
    return {"seed": seed, "quick": quick, "files": files, "events": events, "schedule": schedule,
            "versions": versions, "reads": n_read, "edits": n_edit}


if __name__ == "__main__":
    s = make()
    touched = {p for e in s["events"] if e["op"] == "turn" for p in e["reads"]}
    print("reads %d, files %d (read: %d), edits %d, turns %d" % (
        s["reads"], len(s["files"]), len(touched), s["edits"], sum(e["op"] == "turn" for e in s["events"])))
