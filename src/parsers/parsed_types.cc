#include "parsers/parsed_types.h"

namespace pagellm::parsers {

OrderedJson ToolCallsToJson(const std::vector<ToolCall>& calls) {
  OrderedJson out = OrderedJson::array();
  for (const ToolCall& call : calls) {
    out.push_back({{"id", call.id},
                   {"type", "function"},
                   {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
  }
  return out;
}

OrderedJson ToolCallDeltasToJson(const std::vector<ToolCallDelta>& deltas) {
  OrderedJson out = OrderedJson::array();
  for (const ToolCallDelta& delta : deltas) {
    OrderedJson item = {{"index", delta.index}};
    OrderedJson function = OrderedJson::object();
    if (!delta.id.empty()) {
      item["id"] = delta.id;
      item["type"] = "function";
      function["name"] = delta.name;
    }
    function["arguments"] = delta.arguments;
    item["function"] = std::move(function);
    out.push_back(std::move(item));
  }
  return out;
}

}  // namespace pagellm::parsers
