// StreamResume: what lets the router continue a stream on another worker after the
// first one died mid-way (NVIDIA Dynamo's request migration), so the client sees one
// uninterrupted stream.
//
//   StreamResume r(client_body, chat, key);
//   OrderedJson first = r.UpstreamBody();     // client's body + return_token_ids
//   for each SSE event of the attempt:  if (auto out = r.OnEvent(json)) send(*out);
//   // the worker died: continue elsewhere
//   OrderedJson next = r.ResumeBody();        // /v1/completions: prompt ids + ids so far
//
// The router asks the worker for token ids (vLLM's `return_token_ids`: the first chunk
// carries `prompt_token_ids`, every chunk its `token_ids`), records them, and removes
// them from what the client sees unless the client asked for them. A resume is a
// /v1/completions request whose prompt is the prompt's ids plus the ids produced so far
// and whose max_tokens is what is left, so greedy decoding continues token-identically
// (re-tokenizing the text would not). Its chunks are rewritten to the first attempt's
// id and created time, chat-shaped for a chat request, and its usage is corrected so
// prompt and completion tokens count as if nothing happened.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/json.h"
#include "router/request_key.h"

namespace pagellm::router {

class StreamResume {
 public:
  StreamResume(const OrderedJson& client_body, bool chat, const RequestKey& key);

  OrderedJson UpstreamBody() const;
  // True when a resume is possible now (token ids seen, tokens left to generate).
  bool CanResume() const;
  OrderedJson ResumeBody() const;
  const char* ResumePath() const { return "/v1/completions"; }
  // Marks that the following events come from a resumed attempt.
  void BeginResume();
  // One parsed SSE data event; the event to forward (nullopt: drop it).
  std::optional<OrderedJson> OnEvent(OrderedJson event);
  // A finish_reason arrived: only [DONE] (and the usage chunk) can still be missing.
  bool finished() const { return finished_; }
  int64_t num_generated() const { return static_cast<int64_t>(generated_.size()); }

 private:
  OrderedJson RewriteResumed(OrderedJson event) const;
  // Takes the ids out of a choice (or a chunk holding prompt_token_ids).
  void Record(OrderedJson& choice);

  OrderedJson client_body_;
  bool chat_;
  RequestKey key_;
  bool client_wants_ids_ = false;
  bool resumed_ = false;
  std::optional<std::vector<int64_t>> prompt_ids_;
  std::vector<int64_t> generated_;
  OrderedJson first_id_;       // id of the first attempt's chunks
  OrderedJson first_created_;
  bool finished_ = false;      // a finish_reason was seen
  int64_t resume_offset_ = 0;  // tokens generated before the current attempt began
};

}  // namespace pagellm::router
