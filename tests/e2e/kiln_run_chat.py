"""kiln-run chat and generate --chat, end to end.

  pty       the fake artifact with a Llama 2 template (tests/unit/make_fake_chat_artifact.cpp:
            its model answers "^_`a" to any Llama 2 prompt, then the end-of-turn token)
            through a pseudo-terminal (`script`): two turns, each reply stops at the end
            of turn, well before -n
  resume    stories260K compiled with --chat-template zephyr: three turns keep one session
            (the decode count grows across turns, so the KV cache was never reset), the
            first reply equals `generate --chat`'s, and a conversation past the context
            starts over with a message saying so
  templates a Llama 3-style GGUF (kiln synth with the Llama 3.1 tokenizer.json and its
            tokenizer_config.json, as llama.cpp's converter writes it) records "llama3"
            by itself; an unknown template is one error line naming it, and
            --chat-template chatml / none override it
  errors    chat on an artifact without a template, a bad --chat-template, --system
            without --chat: one error line each, exit 1

  kiln_run_chat.py CASE --kiln K --kiln-run R --fake-maker M --models DIR --oracles DIR
                   --work W
"""
import argparse
import json
import os
import re
import shlex
import subprocess

from e2e_common import expect_one_error, fail, need, run


def stats(stderr):
    """(prefill tokens, decode tokens, context used) of each turn's stats line."""
    return [tuple(int(x) for x in m) for m in re.findall(
        r"prefill: (\d+) tokens.*decode: (\d+) tokens.*context (\d+)/", stderr)]


def case_pty(a):
    art = os.path.join(a.work, "fake-chat.kiln")
    run([a.fake_maker, art])
    cmd = f"{shlex.quote(a.kiln_run)} chat {shlex.quote(art)} -n 10"
    print(f"$ script -qec {cmd!r} /dev/null  < 'hello\\nworld\\n'", flush=True)
    p = subprocess.run(["script", "-qec", cmd, "/dev/null"], input=b"hello\nworld\n",
                       capture_output=True, timeout=60)
    out = p.stdout.decode(errors="replace").replace("\r\n", "\n")
    if p.returncode != 0:
        fail(f"exit {p.returncode}: {out}")
    replies = re.findall(r"^> (.*)$", out, re.M)
    if replies[:2] != ["^_`a", "^_`a"] or len(replies) != 3 or replies[2].strip():
        fail(f"expected two replies '^_`a' (stopped by the end of turn) and a last prompt, "
             f"got {replies!r} in:\n{out}")
    turns = stats(out)
    if len(turns) != 2 or any(d != 5 for _, d, _ in turns):
        fail(f"each turn should decode 4 tokens and the end of turn (5 < -n 10): {turns}")
    print(f"pty: two turns, each reply '^_`a' ended by the end-of-turn token (stats {turns})")


def case_resume(a):
    model = need(a.models, "stories260K.gguf")
    art = os.path.join(a.work, "stories-zephyr.kiln")
    run([a.kiln, "compile", model, "-o", art, "--chat-template", "zephyr", "--ctx", "256",
         "--quiet"])
    info = run([a.kiln, "inspect", art]).stdout.decode()
    if "chat template: zephyr" not in info:
        fail(f"inspect does not show the template:\n{info}")
    msgs = ["Once upon a time", "What did the cat do?", "And then?"]
    p = subprocess.run([a.kiln_run, "chat", art, "-n", "24"], capture_output=True,
                       input="\n".join(msgs).encode() + b"\n", timeout=120)
    if p.returncode != 0:
        fail(f"chat: exit {p.returncode}: {p.stderr.decode()}")
    out, err = p.stdout.decode(), p.stderr.decode()
    turns = stats(err)
    if len(turns) != 3 or [d for _, d, _ in turns] != [24, 48, 72]:
        fail(f"three turns in one session should decode 24, 48, 72 tokens in all: {turns}")
    if not (turns[0][2] < turns[1][2] < turns[2][2]):
        fail(f"the context should grow turn by turn: {turns}")
    first = out.split("> ")[1].rstrip("\n")
    g = run([a.kiln_run, "generate", art, "--chat", "-p", msgs[0], "-n", "24"])
    if g.stdout.decode().rstrip("\n") != first:
        fail(f"generate --chat {g.stdout.decode()!r} differs from chat's first reply {first!r}")
    print(f"resume: 3 turns, one KV cache (prefill/decode/context per turn {turns}); "
          f"generate --chat gives chat's first reply")
    # Past the context: 256 positions, 24-token replies and long messages.
    long = " ".join(["The little dog ran to the park and played with a red ball."] * 6)
    p = subprocess.run([a.kiln_run, "chat", art, "-n", "24"], capture_output=True,
                       input=(long + "\n") * 4, text=True, timeout=120)
    if p.returncode != 0 or "starting over from the last message" not in p.stderr:
        fail(f"a full context should start over with a note: exit {p.returncode}, "
             f"{p.stderr}")
    print("resume: a full context starts over from the newest message, with a note")


def synth_with_config(a, name, config_extra):
    """A Llama 3-style GGUF whose tokenizer_config.json holds config_extra's template."""
    src = os.path.join(a.oracles, "node_modules", "@lenml", "tokenizer-llama3_1", "models")
    if not os.path.isfile(os.path.join(src, "tokenizer.json")):
        fail(f"{src}/tokenizer.json is missing: run scripts/install-deps.sh")
    d = os.path.join(a.work, name)
    os.makedirs(d, exist_ok=True)
    tj = os.path.join(d, "tokenizer.json")
    if not os.path.exists(tj):
        os.symlink(os.path.join(src, "tokenizer.json"), tj)
    with open(os.path.join(src, "tokenizer_config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    cfg.update(config_extra)
    with open(os.path.join(d, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(cfg, f)
    gguf = os.path.join(a.work, name + ".gguf")
    run([a.kiln, "synth", "-o", gguf, "--tokenizer", tj, "--tied", "--type", "q8_0",
         "--dim", "64", "--ctx", "256"])
    return gguf


def case_templates(a):
    gguf = synth_with_config(a, "llama3", {})
    art = os.path.join(a.work, "llama3.kiln")
    run([a.kiln, "compile", gguf, "-o", art, "--quiet"])
    if "chat template: llama3" not in run([a.kiln, "inspect", art]).stdout.decode():
        fail("the Llama 3 template was not recognised")
    g = run([a.kiln_run, "generate", art, "--chat", "-p", "Hi", "-n", "4"])
    m = re.search(r"prefill: (\d+) tokens", g.stderr.decode())
    # <|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>
    # <|start_header_id|>assistant<|end_header_id|>\n\n: every marker one token.
    if not m or int(m.group(1)) != 11:
        fail(f"the Llama 3 chat prompt should be 11 tokens: {g.stderr.decode()}")
    print("templates: Llama 3's recognised; its chat prompt is 11 tokens (markers are ids)")
    phi3 = ("{% for m in messages %}{{'<|' + m['role'] + '|>\\n' + m['content'] + "
            "'<|end|>\\n'}}{% endfor %}{{ '<|assistant|>\\n' }}")
    gguf = synth_with_config(a, "phi3", {"chat_template": phi3})
    bad = os.path.join(a.work, "phi3.kiln")
    expect_one_error(run([a.kiln, "compile", gguf, "-o", bad, "--quiet"], expect_ok=False),
                     "{% for m in messages %}")
    run([a.kiln, "compile", gguf, "-o", bad, "--quiet", "--chat-template", "chatml"])
    if "chat template: chatml" not in run([a.kiln, "inspect", bad]).stdout.decode():
        fail("--chat-template chatml was not recorded")
    run([a.kiln, "compile", gguf, "-o", bad, "--quiet", "--chat-template", "none"])
    if "chat template: none" not in run([a.kiln, "inspect", bad]).stdout.decode():
        fail("--chat-template none still records a template")
    print("templates: an unknown one is refused naming it; --chat-template overrides")


def case_errors(a):
    model = need(a.models, "stories260K.gguf")
    art = os.path.join(a.work, "stories-plain.kiln")
    run([a.kiln, "compile", model, "-o", art, "--quiet"])
    expect_one_error(run([a.kiln_run, "chat", art], expect_ok=False), "has no chat template")
    expect_one_error(run([a.kiln_run, "generate", art, "--chat", "-p", "x"], expect_ok=False),
                     "has no chat template")
    expect_one_error(run([a.kiln_run, "generate", art, "-p", "x", "--system", "s"],
                         expect_ok=False), "--system needs --chat")
    expect_one_error(run([a.kiln, "compile", model, "-o", art, "--chat-template", "jinja"],
                         expect_ok=False), "--chat-template expects")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["pty", "resume", "templates", "errors"])
    for f in ("--kiln", "--kiln-run", "--fake-maker", "--oracles", "--work"):
        ap.add_argument(f, required=True)
    ap.add_argument("--models", default=os.environ.get("KILN_MODELS_DIR", "../shared/models"))
    a = ap.parse_args()
    a.models = os.environ.get("KILN_MODELS_DIR", a.models)
    os.makedirs(a.work, exist_ok=True)
    {"pty": case_pty, "resume": case_resume, "templates": case_templates,
     "errors": case_errors}[a.case](a)
    print("PASS")


if __name__ == "__main__":
    main()
