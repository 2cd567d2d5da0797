#include "server/structured_outputs_request.h"

#include <fmt/format.h>

namespace pagellm::server {
namespace {

bool Has(const OrderedJson& j, const char* key) { return j.contains(key) && !j[key].is_null(); }

// One constraint from vLLM's structured_outputs object (or the guided_* aliases,
// `prefix` = "guided_").
Status ParseVllmFields(const OrderedJson& o, const std::string& prefix, const std::string& where,
                       std::optional<StructuredOutputsParams>* out) {
  auto key = [&](const char* k) { return prefix + k; };
  auto set = [&](StructuredOutputKind kind, std::string spec, const char* field) -> Status {
    if (out->has_value()) {
      return InvalidArgumentError(fmt::format("{}{}: only one structured output constraint may be given", where, field));
    }
    StructuredOutputsParams p;
    p.kind = kind;
    p.spec = std::move(spec);
    *out = std::move(p);
    return OkStatus();
  };
  if (Has(o, key("json").c_str())) {
    const OrderedJson& j = o[key("json")];
    // vLLM accepts the schema as an object or as its JSON text.
    PAGELLM_RETURN_IF_ERROR(set(StructuredOutputKind::kJson, j.is_string() ? j.get<std::string>() : j.dump(), "json"));
  }
  if (Has(o, key("regex").c_str())) {
    if (!o[key("regex")].is_string()) return InvalidArgumentError(fmt::format("{}{}: must be a string", where, key("regex")));
    PAGELLM_RETURN_IF_ERROR(set(StructuredOutputKind::kRegex, o[key("regex")].get<std::string>(), "regex"));
  }
  if (Has(o, key("choice").c_str())) {
    const OrderedJson& c = o[key("choice")];
    if (!c.is_array() || c.empty()) return InvalidArgumentError(fmt::format("{}{}: must be a non-empty list of strings", where, key("choice")));
    PAGELLM_RETURN_IF_ERROR(set(StructuredOutputKind::kChoice, "", "choice"));
    for (const OrderedJson& s : c) {
      if (!s.is_string()) return InvalidArgumentError(fmt::format("{}{}: must be a list of strings", where, key("choice")));
      (*out)->choice.push_back(s.get<std::string>());
    }
  }
  if (Has(o, key("grammar").c_str())) {
    if (!o[key("grammar")].is_string()) return InvalidArgumentError(fmt::format("{}{}: must be a string", where, key("grammar")));
    PAGELLM_RETURN_IF_ERROR(set(StructuredOutputKind::kGrammar, o[key("grammar")].get<std::string>(), "grammar"));
  }
  if (prefix.empty() && Has(o, "json_object") && o["json_object"] == true) {
    PAGELLM_RETURN_IF_ERROR(set(StructuredOutputKind::kJsonObject, "", "json_object"));
  }
  if (Has(o, key("structural_tag").c_str())) {
    // vLLM takes the tag as its JSON text; an object is accepted as well.
    const OrderedJson& t = o[key("structural_tag")];
    if (!t.is_string() && !t.is_object()) {
      return InvalidArgumentError(fmt::format("{}{}: must be a JSON string", where, key("structural_tag")));
    }
    PAGELLM_RETURN_IF_ERROR(set(StructuredOutputKind::kStructuralTag, t.is_string() ? t.get<std::string>() : t.dump(),
                                "structural_tag"));
  }
  if (out->has_value()) {
    std::string ws_key = prefix.empty() ? "whitespace_pattern" : "guided_whitespace_pattern";
    if (Has(o, ws_key.c_str())) {
      if (!o[ws_key].is_string()) return InvalidArgumentError(fmt::format("{}{}: must be a string", where, ws_key));
      (*out)->whitespace_pattern = o[ws_key].get<std::string>();
    }
    if (Has(o, "disable_any_whitespace")) {
      if (!o["disable_any_whitespace"].is_boolean()) return InvalidArgumentError(fmt::format("{}disable_any_whitespace: must be a boolean", where));
      (*out)->disable_any_whitespace = o["disable_any_whitespace"].get<bool>();
    }
  }
  return OkStatus();
}

Status ParseResponseFormat(const OrderedJson& rf, std::optional<StructuredOutputsParams>* out) {
  if (!rf.is_object() || !rf.contains("type") || !rf["type"].is_string()) {
    return InvalidArgumentError("response_format: must be an object with a string 'type'");
  }
  std::string type = rf["type"].get<std::string>();
  if (type == "text") return OkStatus();
  StructuredOutputsParams p;
  if (type == "json_object") {
    p.kind = StructuredOutputKind::kJsonObject;
  } else if (type == "json_schema") {
    if (!rf.contains("json_schema") || !rf["json_schema"].is_object()) {
      return InvalidArgumentError("response_format.json_schema: field required (an object with 'name' and 'schema')");
    }
    const OrderedJson& js = rf["json_schema"];
    if (js.contains("name") && !js["name"].is_string()) return InvalidArgumentError("response_format.json_schema.name: must be a string");
    if (!js.contains("schema")) return InvalidArgumentError("response_format.json_schema.schema: field required");
    if (!js["schema"].is_object() && !js["schema"].is_boolean()) return InvalidArgumentError("response_format.json_schema.schema: must be an object");
    p.kind = StructuredOutputKind::kJson;
    p.spec = js["schema"].dump();
  } else if (type == "structural_tag") {
    p.kind = StructuredOutputKind::kStructuralTag;  // structures and triggers, checked when compiled
    p.spec = rf.dump();
  } else {
    return InvalidArgumentError(
        fmt::format("response_format.type: '{}' is not one of text, json_object, json_schema, structural_tag", type));
  }
  *out = std::move(p);
  return OkStatus();
}

}  // namespace

Status ParseStructuredOutputs(const OrderedJson& body, SamplingParams* params) {
  std::optional<StructuredOutputsParams> out;
  if (Has(body, "structured_outputs")) {
    if (!body["structured_outputs"].is_object()) return InvalidArgumentError("structured_outputs: must be an object");
    PAGELLM_RETURN_IF_ERROR(ParseVllmFields(body["structured_outputs"], "", "structured_outputs.", &out));
  }
  std::optional<StructuredOutputsParams> guided;
  PAGELLM_RETURN_IF_ERROR(ParseVllmFields(body, "guided_", "", &guided));
  std::optional<StructuredOutputsParams> rf;
  if (Has(body, "response_format")) PAGELLM_RETURN_IF_ERROR(ParseResponseFormat(body["response_format"], &rf));
  int given = out.has_value() + guided.has_value() + rf.has_value();
  if (given > 1) {
    return InvalidArgumentError("response_format, structured_outputs and guided_*: give only one output constraint");
  }
  if (guided) out = std::move(guided);
  if (rf) out = std::move(rf);
  params->structured_outputs = std::move(out);
  return OkStatus();
}

}  // namespace pagellm::server
