#include "router/request_key.h"

namespace pagellm::router {
namespace {

// The text parts of a message's content (a string or [{type: text, text}, ...]).
void AppendContent(const OrderedJson& content, std::string* out) {
  if (content.is_string()) {
    *out += content.get<std::string>();
  } else if (content.is_array()) {
    for (const auto& part : content) {
      if (part.is_object() && part.contains("text") && part["text"].is_string()) *out += part["text"].get<std::string>();
    }
  }
}

void AppendPrompt(const OrderedJson& prompt, std::string* out) {
  if (prompt.is_string()) {
    *out += prompt.get<std::string>();
  } else if (prompt.is_array()) {
    for (const auto& p : prompt) {
      if (p.is_number_integer()) {
        // Token ids: key on their decimal text, so equal id prefixes match.
        *out += std::to_string(p.get<int64_t>()) + ",";
      } else {
        AppendPrompt(p, out);
        *out += '\x1e';
      }
    }
  }
}

bool SinglePrompt(const OrderedJson& prompt) {
  if (prompt.is_string()) return true;
  if (!prompt.is_array() || prompt.empty()) return false;
  for (const auto& p : prompt) {
    if (!p.is_number_integer()) return false;
  }
  return true;
}

bool Truthy(const OrderedJson& body, const char* key) {
  if (!body.contains(key)) return false;
  const auto& v = body[key];
  return !(v.is_null() || (v.is_boolean() && !v.get<bool>()) || (v.is_number() && v.get<double>() == 0));
}

// A constrained output (response_format, structured_outputs, guided_*, a forced tool
// call): a resumed stream would be a new /v1/completions request whose grammar starts
// again mid-output (or is dropped with the chat-only fields), so its text could break
// the constraint. Such streams are not resumed.
bool Constrained(const OrderedJson& body) {
  if (body.contains("response_format") && body["response_format"].is_object() &&
      body["response_format"].value("type", OrderedJson("text")) != "text") {
    return true;
  }
  for (const char* key : {"structured_outputs", "guided_json", "guided_regex", "guided_choice", "guided_grammar"}) {
    if (body.contains(key) && !body[key].is_null()) return true;
  }
  return body.contains("tool_choice") && (body["tool_choice"].is_object() || body["tool_choice"] == "required");
}

}  // namespace

RequestKey ReadRequestKey(const OrderedJson& body, bool chat) {
  RequestKey k;
  if (chat && body.contains("messages") && body["messages"].is_array()) {
    for (const auto& m : body["messages"]) {
      if (!m.is_object()) continue;
      if (m.contains("role") && m["role"].is_string()) k.text += m["role"].get<std::string>();
      k.text += '\x1f';
      if (m.contains("content")) AppendContent(m["content"], &k.text);
      k.text += '\x1e';
    }
  } else if (!chat && body.contains("prompt")) {
    AppendPrompt(body["prompt"], &k.text);
  }
  for (const char* key : {"max_completion_tokens", "max_tokens"}) {
    if (body.contains(key) && body[key].is_number_integer()) {
      k.max_tokens = body[key].get<int64_t>();
      k.max_tokens_given = true;
      break;
    }
  }
  k.est_tokens = static_cast<int64_t>(k.text.size() / 4) + k.max_tokens;
  k.stream = body.contains("stream") && body["stream"].is_boolean() && body["stream"].get<bool>();
  bool n_ok = !body.contains("n") || body["n"].is_null();
  if (body.contains("n") && body["n"].is_number_integer() && body["n"].get<int64_t>() >= 1) {
    k.n = body["n"].get<int64_t>();
    n_ok = true;
  }
  k.resumable = k.stream && n_ok && !Truthy(body, "echo") && !Truthy(body, "best_of") &&
                !Constrained(body) &&
                (chat || (body.contains("prompt") && SinglePrompt(body.at("prompt"))));
  return k;
}

}  // namespace pagellm::router
