"""Parse PowerShell scripts with tree-sitter-powershell and fail on a syntax
error (no PowerShell runs here: this is the check installers/install.ps1
gets; what it does is not run). Usage: ps1_syntax.py FILE..."""

import sys

import tree_sitter
import tree_sitter_powershell


def errors(parser, src):
    out = []
    stack = [parser.parse(src).root_node]
    while stack:
        n = stack.pop()
        if n.type == "ERROR" or n.is_missing:
            out.append(n)
        elif n.has_error:
            stack.extend(n.children)
    return sorted(out, key=lambda n: n.start_byte)


def main(paths):
    parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_powershell.language()))
    bad = 0
    for p in paths:
        src = open(p, "rb").read()
        for n in errors(parser, src):
            bad += 1
            line, col = n.start_point
            what = "missing " + n.type if n.is_missing else "cannot parse"
            text = src[n.start_byte : n.end_byte][:60].decode("utf-8", "replace")
            print(f"{p}:{line + 1}:{col + 1}: {what}: {text!r}")
        if bad == 0:
            print(f"{p}: parses")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
