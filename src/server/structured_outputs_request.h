// Request fields that constrain the output, parsed into SamplingParams::structured_outputs:
//   response_format: {"type": "text" | "json_object" | "json_schema", "json_schema": {name, schema, strict}}
//                    {"type": "structural_tag", "structures": [...], "triggers": [...]}
//   structured_outputs (vLLM): {json | regex | choice | grammar | json_object | structural_tag,
//                               whitespace_pattern, disable_any_whitespace}
//   guided_json / guided_regex / guided_choice / guided_grammar / guided_whitespace_pattern
//   (vLLM before 0.12, kept as aliases).
// At most one constraint per request. What cannot be honoured (two constraints at once,
// a malformed field) is a 400; the schema or grammar itself is
// compiled (and refused, naming the keyword) when the engine validates the request.
#pragma once

#include "common/json.h"
#include "common/status.h"
#include "sched/sampling_params.h"

namespace pagellm::server {

Status ParseStructuredOutputs(const OrderedJson& body, SamplingParams* params);

}  // namespace pagellm::server
