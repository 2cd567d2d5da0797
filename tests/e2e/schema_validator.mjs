// The independent judge of structured outputs: ajv 8 + ajv-formats, with the draft a
// schema declares ($schema), so outputs are checked by rules pagellm did not write.
//
//   const check = await schemaValidator(schema);   // null when ajv cannot compile it
//   if (check && !check(JSON.parse(text))) console.log(check.errors);
import { importRef } from "./harness.mjs";

const { default: Ajv07 } = await importRef("ajv/dist/ajv.js");
const { default: Ajv2019 } = await importRef("ajv/dist/2019.js");
const { default: Ajv2020 } = await importRef("ajv/dist/2020.js");
const { default: addFormats } = await importRef("ajv-formats/dist/index.js");

// Draft-04 -> draft-07, the two differences that change a verdict (ajv 8 ships no
// draft-04 mode): boolean exclusiveMinimum/Maximum become numbers, `id` becomes `$id`.
// Values (enum, const, default, examples) are left alone.
function fromDraft04(s) {
  if (Array.isArray(s)) return s.map(fromDraft04);
  if (typeof s !== "object" || s === null) return s;
  const out = {};
  for (const [k, v] of Object.entries(s)) {
    if (["enum", "const", "default", "examples"].includes(k)) out[k] = v;
    else if (k === "id" && typeof v === "string") out.$id = v;
    else if (k === "$schema") continue;
    else out[k] = fromDraft04(v);
  }
  for (const [ex, bound] of [["exclusiveMinimum", "minimum"], ["exclusiveMaximum", "maximum"]]) {
    if (out[ex] === true && typeof out[bound] === "number") { out[ex] = out[bound]; delete out[bound]; }
    else if (typeof out[ex] === "boolean") delete out[ex];
  }
  return out;
}

// Without $schema, 2020-12 is tried first and draft-07 when that fails to compile
// (array-form `items` is only draft-07).
function ajvsFor(schema) {
  const declared = typeof schema === "object" && schema !== null ? String(schema.$schema ?? "") : "";
  const options = { strict: false, allErrors: true, validateFormats: true, validateSchema: false };
  if (declared.includes("draft-03")) return [];
  if (declared.includes("draft-07") || declared.includes("draft-06")) return [new Ajv07(options)];
  if (declared.includes("2019-09")) return [new Ajv2019(options)];
  return [new Ajv2020(options), new Ajv07(options)];
}

export function schemaValidator(schema) {
  const draft04 = typeof schema === "object" && schema !== null && String(schema.$schema ?? "").includes("draft-04");
  for (const ajv of draft04 ? [new Ajv07({ strict: false, allErrors: true, validateFormats: true, validateSchema: false })] : ajvsFor(schema)) {
    addFormats(ajv);
    try {
      return ajv.compile(draft04 ? fromDraft04(schema) : schema);
    } catch {
      // e.g. a $ref to another document, or a keyword form of another draft
    }
  }
  return null;
}
