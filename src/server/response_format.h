// JSON pieces of OpenAI responses shared by chat and completions: logprobs in both
// shapes, usage, SSE framing, and lossless-enough JSON dumping of model text.
//
//   OrderedJson lp = ChatLogprobs(tok, delta.logprobs);   // [{token, logprob, bytes, top_logprobs}]
//   exchange->Write(SseEvent(chunk));                     // "data: {...}\n\n"
//
// Model text may hold invalid UTF-8 (a token that is half of a character); it is
// dumped with U+FFFD replacement instead of throwing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/json.h"
#include "engine/request_output.h"
#include "tokenizer/tokenizer.h"

namespace pagellm::server {

// What `id` decodes to on its own (raw bytes, possibly a partial UTF-8 character).
std::string TokenBytes(const tokenizer::Tokenizer& tok, int32_t id);

// Chat shape: one {token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]} per token.
OrderedJson ChatLogprobs(const tokenizer::Tokenizer& tok, const std::vector<TokenLogprob>& logprobs);

// Where a choice's completions logprobs stand: `text`, characters of text received so
// far; `next_token`, where the next token's text starts (ahead of `text` while the text
// of earlier tokens is held back: an engine delta carries text only once nothing of
// its tokens is held back, see engine/request_output.h).
struct TextOffsets {
  int64_t text = 0;
  int64_t next_token = 0;
};

// Completions shape accumulated into `lp` = {text_offset, token_logprobs, tokens,
// top_logprobs}. As in vLLM an offset is a position in the text the client receives:
// a token starts after the characters of the tokens before it, but never past the end
// of the text received with its delta, `delta_text` (a token holding part of a
// character adds none until the character is complete; bytes that never form one
// arrive as U+FFFD, one character each).
void AppendCompletionLogprobs(const tokenizer::Tokenizer& tok, const std::vector<TokenLogprob>& logprobs,
                              const std::string& delta_text, TextOffsets* offsets, OrderedJson* lp);
OrderedJson EmptyCompletionLogprobs();

OrderedJson UsageJson(int64_t prompt_tokens, int64_t completion_tokens, int64_t cached_tokens);

std::string DumpJson(const OrderedJson& j);
std::string SseEvent(const OrderedJson& j);
inline constexpr const char* kSseDone = "data: [DONE]\n\n";

// Number of Unicode code points in UTF-8 `text` (Python's len(), used for text_offset).
int64_t Utf8Length(const std::string& text);

}  // namespace pagellm::server
