// Reshapes the logprobs of a /v1/completions chunk, for a stream the router resumed:
// a resume always runs on /v1/completions (its prompt is token ids), so a chat
// client's logprobs arrive completions-shaped and an offset-carrying completions
// client's arrive counted from the resume's first token.
//
//   OrderedJson lp = choice["logprobs"];   // {tokens, token_logprobs, top_logprobs, text_offset}
//   ShiftTextOffsets(&lp, 42);             // offsets continue the first attempt's text
//   offset += TextOffsetAdvance(choice["text"]);  // where the next settled token's text starts
//   OrderedJson chat = ChatLogprobsFromCompletion(lp, /*top_k=*/2);   // {content: [...]}
#pragma once

#include <cstdint>

#include "common/json.h"

namespace pagellm::router {

// Adds `base` to every text_offset.
void ShiftTextOffsets(OrderedJson* logprobs, int64_t base);

// Removes the first n tokens' entries (tokens a resume produced again).
void DropLeadingTokens(OrderedJson* logprobs, int64_t n);

// How far a chunk's emitted text moves completions' text_offset: its code points. The
// workers count offsets in code points of the generated text, so once every token's
// text is out, the next token starts at the code points emitted so far. (The `tokens`
// strings cannot tell: a token holding part of a UTF-8 character arrives as U+FFFD.)
int64_t TextOffsetAdvance(const std::string& text);

// OpenAI's chat shape: one {token, logprob, bytes, top_logprobs} per token. A
// completions top_logprobs map holds the k alternatives followed by the sampled token
// when it was not among them (vLLM's and pagellm's rule); the chat list keeps the k.
// `bytes` are the token text's UTF-8 bytes (a token that is not valid UTF-8 on its own
// reaches the router already replaced by U+FFFD, so its bytes are those of U+FFFD).
OrderedJson ChatLogprobsFromCompletion(const OrderedJson& logprobs, int64_t top_k);

}  // namespace pagellm::router
