#include "router/completion_logprobs.h"

#include <algorithm>
#include <string>

namespace pagellm::router {
namespace {

// Code points, as the workers count text_offset.
int64_t CodePoints(const std::string& s) {
  int64_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

OrderedJson Bytes(const std::string& s) {
  OrderedJson out = OrderedJson::array();
  for (unsigned char c : s) out.push_back(static_cast<int>(c));
  return out;
}

const OrderedJson* Field(const OrderedJson& j, const char* key) {
  if (!j.is_object() || !j.contains(key)) return nullptr;
  return &j[key];
}

}  // namespace

void ShiftTextOffsets(OrderedJson* logprobs, int64_t base) {
  if (!logprobs->is_object() || !logprobs->contains("text_offset")) return;
  for (auto& off : (*logprobs)["text_offset"]) {
    if (off.is_number_integer()) off = off.get<int64_t>() + base;
  }
}

void DropLeadingTokens(OrderedJson* logprobs, int64_t n) {
  if (!logprobs->is_object()) return;
  for (const char* key : {"text_offset", "token_logprobs", "tokens", "top_logprobs"}) {
    if (!logprobs->contains(key) || !(*logprobs)[key].is_array()) continue;
    OrderedJson& a = (*logprobs)[key];
    a.erase(a.begin(), a.begin() + std::min<int64_t>(n, static_cast<int64_t>(a.size())));
  }
}

int64_t TextOffsetAdvance(const std::string& text) { return CodePoints(text); }

OrderedJson ChatLogprobsFromCompletion(const OrderedJson& logprobs, int64_t top_k) {
  OrderedJson content = OrderedJson::array();
  const OrderedJson* tokens = Field(logprobs, "tokens");
  const OrderedJson* values = Field(logprobs, "token_logprobs");
  const OrderedJson* tops = Field(logprobs, "top_logprobs");
  if (!tokens || !values || !tokens->is_array() || !values->is_array()) return {{"content", content}};
  for (size_t i = 0; i < tokens->size() && i < values->size(); ++i) {
    std::string token = (*tokens)[i].is_string() ? (*tokens)[i].get<std::string>() : "";
    OrderedJson top = OrderedJson::array();
    if (tops && tops->is_array() && i < tops->size() && (*tops)[i].is_object()) {
      for (const auto& [text, lp] : (*tops)[i].items()) {
        if (static_cast<int64_t>(top.size()) >= top_k) break;
        top.push_back({{"token", text}, {"logprob", lp}, {"bytes", Bytes(text)}});
      }
    }
    content.push_back({{"token", token}, {"logprob", (*values)[i]}, {"bytes", Bytes(token)},
                       {"top_logprobs", std::move(top)}});
  }
  return {{"content", std::move(content)}};
}

}  // namespace pagellm::router
