#!/usr/bin/env python3
"""Builds the training text of pagellm's small model from files Debian ships.

    /usr/bin/python3 tools/small_model/build_corpus.py OUT_DIR

Writes OUT_DIR/{train,heldout}.jsonl, one JSON object per line: {"text": ...}. Two kinds
of document (sources and licences: SOURCES.md beside this file):

  * prose: the reStructuredText sources of the Python 3.11 documentation
    (python3.11-doc, /usr/share/doc/python3.11/html/_sources), lightly cleaned of markup;
  * chat: question/answer pairs derived from that documentation and from the docstrings
    of the standard library (libpython3.11-stdlib), rendered exactly as the Qwen3 chat
    template renders a conversation, with the empty think block that Qwen3 writes when it
    does not reason (so a served request with the default template is in distribution).

Deterministic: the same Debian packages give byte-identical files (fixed seed, sorted
inputs). Every 40th documentation file (by sorted path) and every 40th question is held
out for the perplexity report.
"""
import importlib
import inspect
import json
import os
import random
import re
import sys
import warnings

DOC_ROOT = "/usr/share/doc/python3.11/html/_sources"
SEED = 20261201
HELDOUT_EVERY = 40

# Standard-library modules whose public API becomes questions (pure-Python or built in,
# present in every Debian python3 install).
MODULES = """
os os.path sys json re collections itertools functools math cmath string pathlib subprocess
shutil datetime time random typing textwrap argparse logging csv io urllib.parse
urllib.request hashlib base64 heapq bisect copy glob fnmatch tempfile struct zipfile gzip
bz2 lzma statistics operator enum dataclasses contextlib threading queue socket uuid pprint
difflib unicodedata html html.parser xml.etree.ElementTree sqlite3 decimal fractions
calendar locale platform signal selectors inspect ast dis tokenize pickle shelve
configparser getpass secrets hmac zlib tarfile codecs array weakref abc numbers types
traceback warnings gc atexit builtins keyword shlex filecmp fileinput stat mimetypes
email.utils http.client http.server wave colorsys graphlib zoneinfo concurrent.futures
multiprocessing asyncio unittest doctest timeit cProfile pdb trace sched secrets
""".split()

QUESTION_FORMS = [
    "What does `{name}` do?",
    "Explain `{name}` in Python.",
    "How do I use `{name}`?",
    "What is `{name}` for?",
]
MODULE_FORMS = [
    "What is the `{name}` module for?",
    "What does the Python module `{name}` provide?",
]
GLOSSARY_FORMS = [
    "What is {term} in Python?",
    "Explain the term \"{term}\".",
]
SYSTEM_PROMPTS = ["You are a helpful assistant.", "You answer questions about Python."]

ROLE = re.compile(r":(?:[a-z]+:)?[a-z]+:`~?([^`<]*?)(?:\s*<[^>]*>)?`")
DIRECTIVE = re.compile(r"^\s*\.\. [a-z:-]+::.*$")
OPTION_LINE = re.compile(r"^\s+:[a-z-]+:(\s.*)?$")
HEADING_RULE = re.compile(r"^([=\-~^\"'`#*+.])\1{3,}\s*$")


def clean_rst(text):
    """Keeps the prose and code of a reST file; drops directives' option lines, heading
    underlines and index/label noise; turns roles into plain `name` literals."""
    out = []
    for line in text.splitlines():
        if HEADING_RULE.match(line) or OPTION_LINE.match(line):
            continue
        if DIRECTIVE.match(line):
            body = line.split("::", 1)[1].strip()
            kind = line.strip()[3:].split("::", 1)[0]
            if kind.split(":")[-1] in ("function", "method", "class", "attribute", "data", "exception",
                                       "module", "decorator", "var", "macro", "type", "member"):
                out.append(body)
            continue
        if line.startswith(".. _") or line.strip() == "..":
            continue
        line = ROLE.sub(lambda m: "`" + m.group(1) + "`", line)
        line = line.replace("``", "`")
        out.append(line.rstrip())
    text = "\n".join(out)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip() + "\n"


def first_paragraph(doc, limit=700):
    doc = inspect.cleandoc(doc if isinstance(doc, str) else "").strip()
    if not doc:
        return ""
    para = doc.split("\n\n")[0].strip()
    para = " ".join(para.split())
    if len(para) > limit:
        cut = para.rfind(". ", 0, limit)
        para = para[: cut + 1] if cut > 80 else para[:limit]
    return para


def chat(question, answer, system=None):
    """The Qwen3 template's rendering of [system?, user, assistant] plus the assistant's
    reply as the model must write it (empty think block, answer, <|im_end|>)."""
    s = ""
    if system:
        s += "<|im_start|>system\n" + system + "<|im_end|>\n"
    s += "<|im_start|>user\n" + question + "<|im_end|>\n<|im_start|>assistant\n"
    s += "<think>\n\n</think>\n\n" + answer + "<|im_end|>\n"
    return s


def signature_of(obj):
    """The signature as Python prints it, without the memory addresses that default
    values' reprs carry (`<function f at 0x7f...>`, `<weakref at 0x7f...; to ...>`), which would make the corpus differ
    from run to run."""
    try:
        return re.sub(r" at 0x[0-9a-f]+", "", str(inspect.signature(obj)))
    except (TypeError, ValueError):
        return "(...)"


def api_items(module_name):
    """(qualified name, signature, docstring paragraph) for the module's public API."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mod = importlib.import_module(module_name)
    except Exception:
        return []
    items = []
    exported = getattr(mod, "__all__", None)
    names = exported or [n for n in dir(mod) if not n.startswith("_")]
    for name in sorted(set(names)):
        obj = getattr(mod, name, None)
        if obj is None or inspect.ismodule(obj):
            continue
        # Without __all__, skip names the module merely imported from elsewhere.
        home = getattr(obj, "__module__", None) or module_name
        if not exported and home != module_name and not home.startswith("_") and home not in ("posix", "builtins"):
            continue
        if not (inspect.isfunction(obj) or inspect.isbuiltin(obj) or inspect.isclass(obj)):
            continue
        doc = first_paragraph(getattr(obj, "__doc__", ""))
        if len(doc) < 20:
            continue
        sig = signature_of(obj)
        qual = module_name + "." + name if module_name != "builtins" else name
        items.append((qual, sig, doc))
        if inspect.isclass(obj):
            for mname, meth in sorted(vars(obj).items()):
                if mname.startswith("_") or not callable(meth):
                    continue
                mdoc = first_paragraph(getattr(meth, "__doc__", ""))
                if len(mdoc) < 20:
                    continue
                items.append((qual + "." + mname, signature_of(meth), mdoc))
    return items


def glossary_items():
    path = os.path.join(DOC_ROOT, "glossary.rst.txt")
    items, term, body = [], None, []
    for line in open(path, encoding="utf-8").read().splitlines():
        if line and not line.startswith(" ") and term is not None and body:
            items.append((term, " ".join(" ".join(body).split())))
            term, body = None, []
        if line.startswith("   ") and not line.startswith("      ") and line.strip() and not line.strip().startswith(".."):
            if term is not None and body:
                items.append((term, " ".join(" ".join(body).split())))
            term, body = line.strip(), []
        elif line.startswith("      ") and term is not None:
            body.append(line.strip())
    if term is not None and body:
        items.append((term, " ".join(" ".join(body).split())))
    out = []
    for t, b in items:
        b = ROLE.sub(lambda m: "`" + m.group(1) + "`", b).replace("``", "`")
        para = first_paragraph(b)
        if t and len(para) > 30 and len(t) < 60:
            out.append((t, para))
    return out


def doc_api_items():
    """(qualified name, signature, first paragraph) of every function/method/class
    directive in the library reference, qualified by its `.. module::`/`currentmodule`."""
    items = []
    lib = os.path.join(DOC_ROOT, "library")
    for f in sorted(os.listdir(lib)):
        lines = open(os.path.join(lib, f), encoding="utf-8", errors="replace").read().splitlines()
        module = None
        for i, line in enumerate(lines):
            m = re.match(r"^\.\. (?:current)?module:: (\S+)", line)
            if m:
                module = m.group(1)
                continue
            m = re.match(r"^(\s*)\.\. (function|method|class|exception|decorator)::\s+([\w.]+)(\(.*\))?", line)
            if not m or module is None:
                continue
            indent = len(m.group(1))
            body = []
            for nxt in lines[i + 1:]:
                if nxt.strip() == "":
                    if body:
                        break
                    continue
                if len(nxt) - len(nxt.lstrip()) <= indent or OPTION_LINE.match(nxt):
                    if body or len(nxt) - len(nxt.lstrip()) <= indent:
                        break
                    continue
                body.append(nxt.strip())
            text = ROLE.sub(lambda r: "`" + r.group(1) + "`", " ".join(body)).replace("``", "`")
            name = m.group(3) if m.group(3).startswith(module + ".") else module + "." + m.group(3)
            if len(text) > 30:
                items.append((name, m.group(4) or "", first_paragraph(text)))
    return items


def chat_documents(rng):
    docs = []
    for qual, sig, doc in doc_api_items():
        for form in rng.sample(QUESTION_FORMS, 2):
            docs.append(chat(form.format(name=qual), f"`{qual}{sig}`: {doc}",
                             rng.choice(SYSTEM_PROMPTS) if rng.random() < 0.25 else None))
    for module_name in MODULES:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                mod = importlib.import_module(module_name)
        except Exception:
            continue
        mdoc = first_paragraph(mod.__doc__)
        if len(mdoc) > 30:
            for form in MODULE_FORMS:
                docs.append(chat(form.format(name=module_name),
                                 f"The `{module_name}` module: {mdoc}",
                                 rng.choice(SYSTEM_PROMPTS) if rng.random() < 0.25 else None))
        for qual, sig, doc in api_items(module_name):
            for form in rng.sample(QUESTION_FORMS, 2):
                answer = f"`{qual}{sig}`: {doc}"
                docs.append(chat(form.format(name=qual), answer,
                                 rng.choice(SYSTEM_PROMPTS) if rng.random() < 0.25 else None))
    for term, para in glossary_items():
        for form in GLOSSARY_FORMS:
            docs.append(chat(form.format(term=term), f"{term[0].upper() + term[1:]}: {para}"))
    return docs


def prose_documents():
    paths = []
    for root, _, files in os.walk(DOC_ROOT):
        for f in files:
            if f.endswith(".rst.txt") and "whatsnew/changelog" not in os.path.join(root, f):
                paths.append(os.path.join(root, f))
    paths.sort()
    docs = []
    for p in paths:
        text = clean_rst(open(p, encoding="utf-8", errors="replace").read())
        if len(text) > 200:
            docs.append((os.path.relpath(p, DOC_ROOT), text))
    return docs


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    rng = random.Random(SEED)
    train, heldout = [], []
    for i, (name, text) in enumerate(prose_documents()):
        (heldout if i % HELDOUT_EVERY == HELDOUT_EVERY // 2 else train).append({"kind": "prose", "source": name,
                                                                              "text": text})
    for i, text in enumerate(chat_documents(rng)):
        (heldout if i % HELDOUT_EVERY == HELDOUT_EVERY // 2 else train).append({"kind": "chat", "text": text})
    rng.shuffle(train)
    for name, docs in (("train", train), ("heldout", heldout)):
        with open(os.path.join(out_dir, name + ".jsonl"), "w", encoding="utf-8") as f:
            for d in docs:
                f.write(json.dumps(d, ensure_ascii=False) + "\n")
    for name, docs in (("train", train), ("heldout", heldout)):
        chars = sum(len(d["text"]) for d in docs)
        kinds = {k: sum(1 for d in docs if d["kind"] == k) for k in ("prose", "chat")}
        print(f"{name}: {len(docs)} documents ({kinds['prose']} prose, {kinds['chat']} chat), {chars / 1e6:.1f} M chars")


if __name__ == "__main__":
    main()
