#!/usr/bin/env node
// Parses a GGUF file with @huggingface/gguf (an independent reader) and prints its header,
// typed metadata and tensor infos as JSON. u64/i64 values (bigint) are printed as strings.
//
//   node tests/gguf/parse_with_hf_gguf.mjs FILE.gguf
//
// Output: {version, metadata: {key: {type, subType?, value}}, tensors: [{name, shape, dtype, offset}]}
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, "../../.refs/package.json"));
const { gguf } = await import(require.resolve("@huggingface/gguf"));

const plain = (v) => (typeof v === "bigint" ? v.toString() : Array.isArray(v) ? v.map(plain) : v);

export async function parseWithHfGguf(file) {
  const { typedMetadata, tensorInfos } = await gguf(path.resolve(file), { allowLocalFile: true, typedMetadata: true });
  const out = { version: typedMetadata.version.value, metadata: {}, tensors: [] };
  for (const [key, entry] of Object.entries(typedMetadata)) {
    if (key === "version" || key === "tensor_count" || key === "kv_count") continue;
    const item = { type: entry.type, value: plain(entry.value) };
    if (entry.subType !== undefined) item.subType = entry.subType;
    out.metadata[key] = item;
  }
  for (const t of tensorInfos) {
    out.tensors.push({ name: t.name, shape: t.shape.map(Number), dtype: t.dtype, offset: Number(t.offset) });
  }
  return out;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (process.argv.length !== 3) {
    console.error("usage: parse_with_hf_gguf.mjs FILE.gguf");
    process.exit(2);
  }
  console.log(JSON.stringify(await parseWithHfGguf(process.argv[2])));
}
