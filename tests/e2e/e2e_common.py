"""Shared by the end-to-end scripts: failing with a message, and finding the shared models
(a missing model file is a failure that says what to set, never a skip); for the emulation
scripts (tests/emu) also running a command, reading `kiln-run ppl`'s result and checking
a refusal."""
import os
import re
import subprocess
import sys

PROMPT = "Once upon a time"


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def need(models, name):
    path = os.path.join(models, name)
    if not os.path.isfile(path):
        fail(f"{path} is missing: put the shared models there or set KILN_MODELS_DIR "
             f"to the directory holding {name}")
    return path


def need_oracles(node, oracles):
    """Fails with what to run when node or the npm oracles (node-llama-cpp) are missing."""
    if not os.path.isfile(node):
        fail(f"node ({node}) is missing: run scripts/install-deps.sh")
    entry = os.path.join(oracles, "node_modules", "node-llama-cpp", "package.json")
    if not os.path.isfile(entry):
        fail(f"{entry} is missing: run scripts/install-deps.sh (it installs the npm oracles "
             f"there) or set KILN_NODE_ORACLES to where they are")


def run(cmd, expect_ok=True):
    """Runs cmd (printed first), output captured; a failure fails the test unless expected."""
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, capture_output=True)
    if expect_ok and p.returncode != 0:
        fail(f"exit {p.returncode}: {p.stderr.decode(errors='replace').strip()}")
    return p


def ppl_of(p):
    """The PPL `kiln-run ppl` printed."""
    m = re.search(rb"PPL = ([0-9.]+)", p.stdout)
    if not m:
        fail(f"no PPL in output: {p.stdout!r}")
    return float(m.group(1))


def expect_one_error(p, want):
    """p exited non-zero with exactly one stderr line, containing want."""
    err = p.stderr.decode(errors="replace")
    if p.returncode == 0 or want not in err or err.count("\n") != 1:
        fail(f"expected one error line containing {want!r} and a non-zero exit, got "
             f"exit {p.returncode}: {err!r}")
    print(f"refused: {err.strip()}")
