#include "grammar/structural_tag.h"

#include <fmt/format.h>

#include "common/json.h"
#include "grammar/json_schema.h"

namespace pagellm::grammar {

int32_t AddTriggeredText(Grammar& g, std::vector<std::string> triggers, std::vector<int32_t> parts) {
  const int32_t free = g.AddTextWithout(std::move(triggers));
  return g.AddSeq({free, g.AddRepeat(g.AddSeq({g.AddAlt(std::move(parts)), free}), 0, -1)});
}

StatusOr<Grammar> StructuralTagGrammar(const std::string& spec_text, const JsonWhitespace& ws) {
  const OrderedJson spec = OrderedJson::parse(spec_text, nullptr, /*allow_exceptions=*/false);
  if (spec.is_discarded() || !spec.is_object()) return InvalidArgumentError("structural_tag: must be a JSON object");
  if (spec.contains("format")) {
    return InvalidArgumentError(
        "structural_tag: the 'format' form is not supported; give 'structures' and 'triggers'");
  }
  for (auto it = spec.begin(); it != spec.end(); ++it) {
    if (it.key() != "type" && it.key() != "structures" && it.key() != "triggers") {
      return InvalidArgumentError(fmt::format("structural_tag: unknown field '{}'", it.key()));
    }
  }
  if (!spec.contains("triggers") || !spec["triggers"].is_array() || spec["triggers"].empty()) {
    return InvalidArgumentError("structural_tag.triggers: must be a non-empty list of strings");
  }
  std::vector<std::string> triggers;
  for (const OrderedJson& t : spec["triggers"]) {
    if (!t.is_string() || t.get<std::string>().empty()) {
      return InvalidArgumentError("structural_tag.triggers: must be a non-empty list of non-empty strings");
    }
    triggers.push_back(t.get<std::string>());
  }
  if (!spec.contains("structures") || !spec["structures"].is_array() || spec["structures"].empty()) {
    return InvalidArgumentError("structural_tag.structures: must be a non-empty list");
  }
  Grammar g;
  std::vector<int32_t> parts;
  std::vector<bool> used(triggers.size(), false);
  for (size_t i = 0; i < spec["structures"].size(); ++i) {
    const OrderedJson& s = spec["structures"][i];
    const std::string where = fmt::format("structural_tag.structures[{}]", i);
    if (!s.is_object() || !s.contains("begin") || !s["begin"].is_string() || !s.contains("end") || !s["end"].is_string()) {
      return InvalidArgumentError(where + ": needs string 'begin' and 'end'");
    }
    for (auto it = s.begin(); it != s.end(); ++it) {
      if (it.key() != "begin" && it.key() != "end" && it.key() != "schema") {
        return InvalidArgumentError(fmt::format("{}: unknown field '{}'", where, it.key()));
      }
    }
    const std::string begin = s["begin"].get<std::string>();
    bool triggered = false;
    for (size_t t = 0; t < triggers.size(); ++t) {
      if (begin.compare(0, triggers[t].size(), triggers[t]) != 0) continue;
      triggered = true;
      used[t] = true;
    }
    if (!triggered) return InvalidArgumentError(fmt::format("{}: 'begin' {} starts with no trigger", where, OrderedJson(begin).dump()));
    // XGrammar's default for a missing schema: any JSON value.
    const OrderedJson schema = s.contains("schema") ? s["schema"] : OrderedJson::object();
    auto body = AddJsonSchema(g, schema, ws);
    if (!body.ok()) return body.status().WithPrefix(where + ".schema");
    parts.push_back(g.AddSeq({g.AddLiteral(begin), *body, g.AddLiteral(s["end"].get<std::string>())}));
  }
  // A trigger no structure begins with would only forbid text; XGrammar refuses it too.
  for (size_t t = 0; t < triggers.size(); ++t) {
    if (!used[t]) {
      return InvalidArgumentError(fmt::format("structural_tag.triggers: no structure begins with {}", OrderedJson(triggers[t]).dump()));
    }
  }
  g.SetRoot(g.AddRule("root", AddTriggeredText(g, std::move(triggers), std::move(parts))));
  PAGELLM_RETURN_IF_ERROR(g.Validate());
  return g;
}

}  // namespace pagellm::grammar
