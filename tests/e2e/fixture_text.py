"""Fixture file texts of exact sizes, shared by the MCP server and the mock model (stdlib only)."""
import hashlib
import re

LINE = "the quick brown fox jumps over the lazy dog; filler line for result-size tests."
# big-<N>, or big-<N>-<tag> (e.g. big-16384-a01: 32 files of one size whose texts differ by name)
BIG_RE = re.compile(r"(?:^|/)big-(\d+)(?:-[A-Za-z0-9]+)?$")
START_RE = re.compile(r"MARK-START (\S+) size=(\d+)\n")
MARKERS = ["MARK-START"] + ["MARK-MID-%d" % k for k in range(1, 10)] + ["MARK-END"]
MAX_SIZE = 8 * 1024 * 1024


def big_text(name, size):
    """`size` bytes of numbered lines with MARK-START, MARK-MID-1..9 at every 10 % and MARK-END."""
    head = "MARK-START %s size=%d\n" % (name, size)
    tail = "MARK-END %s\n" % name
    out = [head]
    n = len(head)
    k, i = 1, 0
    while True:
        if k <= 9 and n >= size * k // 10:
            mid = "MARK-MID-%d (at ~%d%% of %s)\n" % (k, k * 10, name)
            if n + len(mid) + len(tail) + 1 > size:
                break
            out.append(mid)
            n += len(mid)
            k += 1
            continue
        i += 1
        line = "L%06d %s\n" % (i, LINE)
        if n + len(line) + len(tail) + 1 > size:
            break
        out.append(line)
        n += len(line)
    pad = size - n - len(tail)
    if pad > 0:
        out.append("." * (pad - 1) + "\n")
    out.append(tail)
    return "".join(out)


def text_for(path):
    """The text `ctx_read {path}` returns: `big-<N>` or `big-<N>-<tag>` (any directory) is big_text of N bytes, every
    other path the fixed line `fixture content of <path>`."""
    m = BIG_RE.search(path)
    if m and 0 < int(m.group(1)) <= MAX_SIZE:
        return big_text(path.rsplit("/", 1)[-1], int(m.group(1)))
    return "fixture content of %s" % path


def sha256(text):
    return hashlib.sha256(text.encode()).hexdigest()


def whole_copies(text):
    """Names of the big fixtures whose complete text appears in `text` (what a model received)."""
    out = []
    for m in START_RE.finditer(text):
        name, size = m.group(1), int(m.group(2))
        if 0 < size <= MAX_SIZE and big_text(name, size) in text[m.start():]:
            out.append(name)
    return out


def markers(text):
    return [k for k in MARKERS if k in text]
