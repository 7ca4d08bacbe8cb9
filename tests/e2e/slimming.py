#!/usr/bin/env python3
"""End-to-end checks of compile-time slimming (passes/slimming, docs/slimming.md) on the real
stories260K model: pruned models compile to artifacts that runtime-min runs.

Usage: slimming.py CASE --kiln PATH --kiln-run PATH --embed PATH --work DIR [--models DIR]
The models directory is $KILN_MODELS_DIR, else --models (CMake passes ../shared/models).
A missing model file is a failure with a message, never a skip.

Cases:
  prune-generate  layers + heads (a whole KV group) pruned explicitly: `kiln-run generate` on
                  the artifact prints exactly what `kiln eval` with the same flags prints
  heads-auto      --prune-heads auto --max-ppl-increase 2 on tinystories-calib.txt: every
                  decision is in the provenance, the calibration PPL stays within the budget,
                  and the artifact's own PPL on the calibration text matches the recorded one
  layers-auto     --prune-layers auto --max-ppl-increase 2: no layer of stories260K fits that
                  budget, so nothing is pruned, it says so, and the artifact still builds
  context-cap     --max-ctx 12: the memory plan holds 12 positions, and the runtime refuses
                  position 12 (kiln-run before it starts, the session API when it gets there)
"""
import argparse
import os
import re
import subprocess
import sys

from e2e_common import PROMPT, fail, need



def run(cmd, expect_fail=False):
    print("$ " + " ".join(cmd))
    p = subprocess.run(cmd, capture_output=True)
    err = p.stderr.decode(errors="replace")
    if expect_fail:
        if p.returncode == 0:
            fail("expected a failure, got exit 0")
        if p.returncode < 0:
            fail(f"crashed with signal {-p.returncode}: {err.strip()}")
    elif p.returncode != 0:
        fail(f"exit {p.returncode}: {err.strip()}")
    sys.stdout.write(err)
    return p


def records(inspect_out, name):
    """(params, effects) of every provenance record called `name`."""
    out = []
    for line in inspect_out.splitlines():
        m = re.match(r"^  (\S+) \[(.*?)\] ?(.*)$", line)
        if m and m.group(1) == name:
            out.append((m.group(2), m.group(3)))
    return out


def field(effects, key):
    m = re.search(rf"(?:^|,){re.escape(key)}=([^,]*)", effects)
    if not m:
        fail(f"no {key} in {effects!r}")
    return m.group(1)


def ppl_of(p):
    m = re.search(rb"PPL = ([0-9.]+)", p.stdout)
    if not m:
        fail(f"no PPL in output: {p.stdout!r}")
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["prune-generate", "heads-auto", "layers-auto",
                                     "context-cap"])
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--kiln-run", dest="kiln_run", required=True)
    ap.add_argument("--embed", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--models", default="../shared/models")
    a = ap.parse_args()
    models = os.environ.get("KILN_MODELS_DIR") or a.models
    gguf = need(models, "stories260K.gguf")
    os.makedirs(a.work, exist_ok=True)
    art = os.path.join(a.work, f"{a.case}.kiln")

    if a.case == "prune-generate":
        flags = ["--max-ctx", "256", "--prune-layers", "3", "--prune-heads", "0:0,1;4:5"]
        run([a.kiln, "compile", gguf, "-o", art] + flags)
        info = run([a.kiln, "inspect", art]).stdout.decode()
        heads = records(info, "kiln-prune-heads")
        if not heads or field(heads[0][1], "kv_heads_removed") != "1":
            fail(f"expected one KV head removed: {heads}")
        if not records(info, "kiln-prune-layers"):
            fail("no kiln-prune-layers record")
        want = run([a.kiln, "eval", gguf, "--prompt", PROMPT, "-n", "64"] + flags).stdout
        got = run([a.kiln_run, "generate", art, "-p", PROMPT, "-n", "64", "--threads", "2"]).stdout
        if got != want:
            fail(f"kiln-run text differs from kiln eval's:\n got: {got!r}\nwant: {want!r}")
        if len(got) <= len(PROMPT) + 10:
            fail(f"the pruned model generated almost nothing: {got!r}")
        print(f"pruned model generates the reference text: {got.decode(errors='replace')!r}")
    elif a.case == "heads-auto":
        calib = need(models, "tinystories-calib.txt")
        run([a.kiln, "compile", gguf, "-o", art, "--max-ctx", "256", "--prune-heads", "auto",
             "--max-ppl-increase", "2", "--calib", calib])
        info = run([a.kiln, "inspect", art]).stdout.decode()
        print(info)
        if len(records(info, "head-importance")) != 5:
            fail("expected the head scores of 5 layers in the provenance")
        decisions = records(info, "kiln-prune-heads.decision")
        removed = [d for d in decisions if "removed=yes" in d[1]]
        if not removed or not any("stop=" in d[1] for d in decisions):
            fail(f"expected accepted heads and a stop decision: {decisions}")
        result = records(info, "slimming-result")
        if len(result) != 1:
            fail("no slimming-result record")
        increase = float(field(result[0][1], "increase_pct"))
        after = float(field(result[0][1], "ppl_after"))
        if increase > 2.0:
            fail(f"calibration PPL grew {increase}%, over the 2% budget")
        got = ppl_of(run([a.kiln_run, "ppl", art, calib, "--ctx", "256", "--threads", "2"]))
        rel = abs(got - after) / after
        print(f"{len(removed)} heads removed, calibration PPL +{increase}%; artifact PPL "
              f"{got:.4f} vs recorded {after:.4f} ({rel * 100:.4f}%)")
        if rel > 0.001:
            fail("the artifact's PPL differs from the recorded measurement")
        text = run([a.kiln_run, "generate", art, "-p", PROMPT, "-n", "32"]).stdout
        if not text.startswith(PROMPT.encode()) or len(text) <= len(PROMPT) + 10:
            fail(f"the pruned artifact does not generate: {text!r}")
    elif a.case == "layers-auto":
        calib = need(models, "tinystories-calib.txt")
        p = run([a.kiln, "compile", gguf, "-o", art, "--max-ctx", "256", "--prune-layers", "auto",
                 "--max-ppl-increase", "2", "--calib", calib])
        if b"no layer can be removed within +2.00%" not in p.stderr:
            fail("the compiler did not say that nothing fits the budget")
        info = run([a.kiln, "inspect", art]).stdout.decode()
        if len(records(info, "kiln-prune-layers.search")) != 5:
            fail("expected one measurement per layer in the provenance")
        if records(info, "kiln-prune-layers"):
            fail("a layer was pruned although none fits the budget")
        if not any("stop=" in e for _, e in records(info, "kiln-prune-layers.decision")):
            fail("no stop decision recorded")
    else:
        run([a.kiln, "compile", gguf, "-o", art, "--max-ctx", "12"])
        info = run([a.kiln, "inspect", art]).stdout.decode()
        if not re.search(r"KV cache 15360 bytes \(1280 per token\), max batch 12, max context 12",
                         info):
            fail("the memory plan is not sized to 12 positions")
        ctx = records(info, "kiln-prune-context")
        if not ctx or field(ctx[0][1], "kv_bytes_saved") != str(1280 * (128 - 12)):
            fail(f"wrong context-pruning record: {ctx}")
        p = run([a.kiln_run, "generate", art, "-p", PROMPT, "-n", "16"], expect_fail=True)
        if b"exceed the artifact's context of 12" not in p.stderr:
            fail("kiln-run did not refuse the generation past the cap")
        # The embedding example decodes 16 tokens through the session API with no check
        # of its own: the session refuses position 12.
        p = run([a.embed, art, PROMPT], expect_fail=True)
        if not re.search(rb"positions 12\.\.12 exceed the context of 12 positions \(max_ctx\)",
                         p.stderr):
            fail(f"the session did not refuse position 12: {p.stderr!r}")
        print(f"refused: {p.stderr.decode().strip()}")
    print("PASS")


if __name__ == "__main__":
    main()
