#!/usr/bin/env python3
"""The floors of the source tree, checked over its #include graph (ctest layering-includes).

passes/, codegen/, models/ and dialects/ are below compiler/: they read the bottom floor
(models/weights, dialects/kiln, runtime-min's headers) and never include a header of
compiler/ (frontends, eval, pipelines, tools). runtime-min includes nothing of the
compiler at all. KNOWN lists the includes that still cross the line, each with why; a new
one fails, and so does a KNOWN entry that is gone (delete it).
"""
import os
import re
import sys

RULES = {  # folder -> include prefixes it must not use
    "passes": ("compiler/",),
    "codegen": ("compiler/",),
    "models": ("compiler/",),
    "dialects": ("compiler/", "passes/", "codegen/", "models/"),
    "runtime-min": ("compiler/", "passes/", "codegen/", "models/", "dialects/"),
}

# Includes that still cross the line, each with the reason it is allowed for now.
KNOWN = set()

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def main(root):
    found = set()
    for top, banned in RULES.items():
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in files:
                if not name.endswith((".h", ".c", ".cpp", ".inc", ".td")):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for line in f:
                        m = INCLUDE.match(line)
                        if m and m.group(1).startswith(banned):
                            found.add((rel, m.group(1)))
    new = sorted(found - KNOWN)
    gone = sorted(KNOWN - found)
    for rel, inc in new:
        print(f"layering: {rel} includes \"{inc}\", above its floor")
    for rel, inc in gone:
        print(f"layering: {rel} no longer includes \"{inc}\": remove it from KNOWN")
    print(f"layering: {len(found)} crossing includes, {len(KNOWN)} known, {len(new)} new")
    return 1 if new or gone else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else
                  os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")))
