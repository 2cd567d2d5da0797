#include "server/response_format.h"

#include <algorithm>

namespace pagellm::server {
namespace {

// vLLM clamps -inf logprobs (masked tokens) to -9999 so the JSON stays finite.
double FiniteLogprob(float lp) { return std::max(static_cast<double>(lp), -9999.0); }

OrderedJson BytesArray(const std::string& s) {
  OrderedJson a = OrderedJson::array();
  for (unsigned char c : s) a.push_back(static_cast<int>(c));
  return a;
}

}  // namespace

std::string TokenBytes(const tokenizer::Tokenizer& tok, int32_t id) {
  std::string out;
  bool first = true;
  tok.AppendTokenBytes(id, /*skip_special_tokens=*/false, &first, &out);
  return out;
}

OrderedJson ChatLogprobs(const tokenizer::Tokenizer& tok, const std::vector<TokenLogprob>& logprobs) {
  OrderedJson content = OrderedJson::array();
  for (const TokenLogprob& t : logprobs) {
    std::string text = TokenBytes(tok, t.token_id);
    OrderedJson top = OrderedJson::array();
    for (const auto& [id, lp] : t.top_logprobs) {
      std::string s = TokenBytes(tok, id);
      top.push_back({{"token", s}, {"logprob", FiniteLogprob(lp)}, {"bytes", BytesArray(s)}});
    }
    content.push_back({{"token", text}, {"logprob", FiniteLogprob(t.logprob)}, {"bytes", BytesArray(text)},
                       {"top_logprobs", std::move(top)}});
  }
  return content;
}

OrderedJson EmptyCompletionLogprobs() {
  return {{"text_offset", OrderedJson::array()}, {"token_logprobs", OrderedJson::array()},
          {"tokens", OrderedJson::array()}, {"top_logprobs", OrderedJson::array()}};
}

void AppendCompletionLogprobs(const tokenizer::Tokenizer& tok, const std::vector<TokenLogprob>& logprobs,
                              const std::string& delta_text, TextOffsets* offsets, OrderedJson* lp) {
  const int64_t end = offsets->text + Utf8Length(delta_text);
  int64_t pos = offsets->next_token;
  for (const TokenLogprob& t : logprobs) {
    std::string text = TokenBytes(tok, t.token_id);
    (*lp)["text_offset"].push_back(std::min(pos, end));
    pos += Utf8Length(text);
    (*lp)["token_logprobs"].push_back(FiniteLogprob(t.logprob));
    (*lp)["tokens"].push_back(text);
    // As vLLM: the top-k alternatives plus the sampled token, keyed by token text.
    OrderedJson top = OrderedJson::object();
    for (const auto& [id, value] : t.top_logprobs) top[TokenBytes(tok, id)] = FiniteLogprob(value);
    if (!top.contains(text)) top[text] = FiniteLogprob(t.logprob);
    (*lp)["top_logprobs"].push_back(std::move(top));
  }
  offsets->text = end;
  // Text received: the held-back characters are in it, the next token starts after it.
  offsets->next_token = delta_text.empty() ? pos : end;
}

OrderedJson UsageJson(int64_t prompt_tokens, int64_t completion_tokens, int64_t cached_tokens) {
  return {{"prompt_tokens", prompt_tokens},
          {"total_tokens", prompt_tokens + completion_tokens},
          {"completion_tokens", completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", cached_tokens}}}};
}

std::string DumpJson(const OrderedJson& j) { return j.dump(-1, ' ', false, OrderedJson::error_handler_t::replace); }

std::string SseEvent(const OrderedJson& j) { return "data: " + DumpJson(j) + "\n\n"; }

int64_t Utf8Length(const std::string& text) {
  int64_t n = 0;
  for (unsigned char c : text) n += (c & 0xC0) != 0x80;
  return n;
}

}  // namespace pagellm::server
