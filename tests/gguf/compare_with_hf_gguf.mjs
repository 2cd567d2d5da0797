#!/usr/bin/env node
// CTest gguf_matches_hf_gguf: pagellm's GgufWriter writes a file with every metadata type and
// tensors of every supported ggml type; @huggingface/gguf must read back identical metadata
// (types, sub-types, values) and tensor infos (names, ne, types, offsets).
//
//   node tests/gguf/compare_with_hf_gguf.mjs GGUF_TEST_TOOL OUT_DIR
import fs from "node:fs";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { isDeepStrictEqual } from "node:util";
import { parseWithHfGguf } from "./parse_with_hf_gguf.mjs";

const [tool, outDir] = process.argv.slice(2);
fs.mkdirSync(outDir, { recursive: true });
const file = path.join(outDir, "hf_sample.gguf");
const expectedFile = path.join(outDir, "hf_sample.expected.json");
execFileSync(tool, ["sample", file, expectedFile], { stdio: "inherit" });
const expected = JSON.parse(fs.readFileSync(expectedFile, "utf8"));
const actual = await parseWithHfGguf(file);

let failures = 0;
const check = (what, a, e) => {
  if (!isDeepStrictEqual(a, e)) {
    ++failures;
    console.error(`MISMATCH ${what}:\n  hf:       ${JSON.stringify(a)}\n  expected: ${JSON.stringify(e)}`);
  }
};
check("version", actual.version, expected.version);
check("metadata keys", Object.keys(actual.metadata), Object.keys(expected.metadata));
for (const key of Object.keys(expected.metadata)) check(`metadata ${key}`, actual.metadata[key], expected.metadata[key]);
check("tensor count", actual.tensors.length, expected.tensors.length);
expected.tensors.forEach((t, i) => check(`tensor ${t.name}`, actual.tensors[i], t));
if (failures > 0) {
  console.error(`${failures} mismatches`);
  process.exit(1);
}
console.log(`ok: ${Object.keys(expected.metadata).length} metadata keys and ${expected.tensors.length} tensor infos match`);
