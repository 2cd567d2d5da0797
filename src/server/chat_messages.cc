#include "server/chat_messages.h"

#include <fmt/format.h>

namespace pagellm::server {
namespace {

// The text of each part, in order (a bare string part is tolerated, as by vLLM).
StatusOr<std::vector<std::string>> TextParts(const OrderedJson& content, size_t i) {
  std::vector<std::string> texts;
  for (const auto& part : content) {
    if (part.is_string()) {
      texts.push_back(part.get<std::string>());
      continue;
    }
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string()) {
      return InvalidArgumentError(fmt::format("messages[{}].content: each part needs a \"type\"", i));
    }
    std::string type = part["type"].get<std::string>();
    if (type != "text" && type != "input_text") {
      return InvalidArgumentError(fmt::format("messages[{}].content: part type '{}' is not supported", i, type));
    }
    if (!part.contains("text") || !part["text"].is_string()) {
      return InvalidArgumentError(fmt::format("messages[{}].content: a text part needs a string \"text\"", i));
    }
    texts.push_back(part["text"].get<std::string>());
  }
  return texts;
}

// kString: the text parts joined by "\n" (vLLM's "string" format); kOpenAi: a list of
// {"type": "text", "text": ...} parts for templates that iterate over them.
StatusOr<OrderedJson> NormalizeContent(const OrderedJson& content, size_t i, chat::ContentFormat format) {
  if (content.is_null()) return OrderedJson("");
  if (content.is_string()) return content;
  if (!content.is_array()) {
    return InvalidArgumentError(fmt::format("messages[{}].content: must be a string or an array of parts", i));
  }
  PAGELLM_ASSIGN_OR_RETURN(std::vector<std::string> texts, TextParts(content, i));
  if (format == chat::ContentFormat::kOpenAi) {
    OrderedJson parts = OrderedJson::array();
    for (std::string& t : texts) parts.push_back(OrderedJson{{"type", "text"}, {"text", std::move(t)}});
    return parts;
  }
  std::string joined;
  for (size_t k = 0; k < texts.size(); ++k) joined += (k ? "\n" : "") + texts[k];
  return OrderedJson(joined);
}

Status NormalizeToolCalls(OrderedJson& msg, size_t i) {
  if (!msg.contains("tool_calls") || msg["tool_calls"].is_null()) return OkStatus();
  OrderedJson& calls = msg["tool_calls"];
  if (!calls.is_array()) return InvalidArgumentError(fmt::format("messages[{}].tool_calls: must be an array", i));
  for (auto& call : calls) {
    if (!call.is_object() || !call.contains("function") || !call["function"].is_object()) {
      return InvalidArgumentError(fmt::format("messages[{}].tool_calls: each call needs a \"function\" object", i));
    }
    OrderedJson& fn = call["function"];
    if (fn.contains("arguments") && fn["arguments"].is_string()) {
      OrderedJson parsed = OrderedJson::parse(fn["arguments"].get<std::string>(), nullptr, false);
      if (!parsed.is_discarded()) fn["arguments"] = std::move(parsed);
    }
  }
  return OkStatus();
}

}  // namespace

StatusOr<OrderedJson> NormalizeMessages(const OrderedJson& messages, chat::ContentFormat content_format) {
  if (!messages.is_array() || messages.empty()) {
    return InvalidArgumentError("messages: must be a non-empty array of message objects");
  }
  OrderedJson out = OrderedJson::array();
  for (size_t i = 0; i < messages.size(); ++i) {
    const OrderedJson& m = messages[i];
    if (!m.is_object()) return InvalidArgumentError(fmt::format("messages[{}]: must be an object", i));
    if (!m.contains("role") || !m["role"].is_string()) {
      return InvalidArgumentError(fmt::format("messages[{}].role: field required", i));
    }
    std::string role = m["role"].get<std::string>();
    if (role != "system" && role != "developer" && role != "user" && role != "assistant" && role != "tool") {
      return InvalidArgumentError(fmt::format("messages[{}].role: unknown role '{}'", i, role));
    }
    OrderedJson msg = m;
    PAGELLM_ASSIGN_OR_RETURN(msg["content"],
                             NormalizeContent(m.contains("content") ? m["content"] : OrderedJson(), i, content_format));
    PAGELLM_RETURN_IF_ERROR(NormalizeToolCalls(msg, i));
    out.push_back(std::move(msg));
  }
  return out;
}

StatusOr<OrderedJson> ValidateTools(const OrderedJson& tools) {
  if (!tools.is_array()) return InvalidArgumentError("tools: must be an array");
  for (size_t i = 0; i < tools.size(); ++i) {
    const OrderedJson& t = tools[i];
    if (!t.is_object() || !t.contains("type") || t["type"] != "function" || !t.contains("function") || !t["function"].is_object() ||
        !t["function"].contains("name") || !t["function"]["name"].is_string()) {
      return InvalidArgumentError(
          fmt::format("tools[{}]: must be {{\"type\": \"function\", \"function\": {{\"name\": ...}}}}", i));
    }
  }
  return tools;
}

}  // namespace pagellm::server
