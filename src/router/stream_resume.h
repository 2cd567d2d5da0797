// StreamResume: what lets the router continue a stream on another worker after the
// first one died mid-way (NVIDIA Dynamo's request migration), so the client sees one
// uninterrupted stream.
//
//   StreamResume r(client_body, chat, key);
//   OrderedJson first = r.UpstreamBody();     // client's body + return_token_ids
//   for each SSE event of the attempt:  if (auto out = r.OnEvent(json)) send(*out);
//   // the worker died: continue elsewhere, one unfinished choice at a time
//   while (!r.AllFinished() && r.BeginResume(&events)) {   // events: synthetic finishes
//     post r.ResumeBody() to r.ResumePath(), relaying its events through OnEvent
//   }
//   for (auto& e : r.FinalEvents()) send(e);  // the corrected usage chunk, if asked for
//
// The router asks the worker for token ids (vLLM's `return_token_ids`: the first chunk
// carries `prompt_token_ids`, every chunk its `token_ids`), records them per choice,
// and removes them from what the client sees unless the client asked for them. A
// resume is a /v1/completions request for one unfinished choice (n = 1) whose prompt is
// the prompt's ids plus that choice's ids so far and whose max_tokens is what is left,
// so greedy decoding continues token-identically (re-tokenizing the text would not).
// A worker's chunk carries text only when nothing of its tokens is held back (an
// incomplete UTF-8 character, a possible start of a stop string: engine/request_output.h),
// so the tokens after the last chunk with text are left out of that prompt and
// generated again, their ids and logprobs not shown twice; min_tokens counts on.
// Its chunks are rewritten to the first attempt's id, created time and the choice's
// index, chat-shaped for a chat request (logprobs too); completions text offsets
// continue the choice's text; usage is the router's own count (prompt once, every
// choice's tokens), sent once at the end.
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
  // True when a resume is possible now (token ids seen, a choice with tokens left).
  bool CanResume() const;
  // Picks the next unfinished choice to continue; a choice whose budget is spent is
  // closed instead, with a finish_reason "length" event appended to `events`. False
  // when no choice is left to continue.
  bool BeginResume(std::vector<OrderedJson>* events);
  // The request that continues the choice BeginResume picked.
  OrderedJson ResumeBody() const;
  const char* ResumePath() const { return "/v1/completions"; }
  // One parsed SSE data event; the event to forward (nullopt: drop it).
  std::optional<OrderedJson> OnEvent(OrderedJson event);
  // What goes before [DONE] once every choice finished after a resume.
  std::vector<OrderedJson> FinalEvents() const;
  bool resumed() const { return current_ >= 0; }
  // Every choice has its finish_reason: only [DONE] (and the usage chunk) can be missing.
  bool AllFinished() const;
  int64_t num_generated() const;

 private:
  struct Choice {
    std::vector<int64_t> generated;
    bool finished = false;
    int64_t next_text_offset = 0;  // completions: code points of the text sent so far
    int64_t offset_base = 0;       // what the current resume's offsets count from
    // Tokens whose text the client has seen whole: those up to the last chunk that
    // carried text. Text held back for later tokens would never come from the next
    // worker, so a resume starts there and produces the later tokens again.
    size_t settled = 0;
    int64_t settled_offset = 0;
    int64_t repeat = 0;  // tokens the current resume produces again: not shown twice
  };

  OrderedJson RewriteResumed(OrderedJson event);
  OrderedJson ChatChoice(const OrderedJson& choice) const;
  // Takes the ids out of a choice (or a chunk holding prompt_token_ids).
  void Record(OrderedJson& choice);
  int64_t Remaining(const Choice& c) const { return key_.max_tokens - static_cast<int64_t>(c.generated.size()); }
  OrderedJson ChunkHeader() const;

  OrderedJson client_body_;
  bool chat_;
  RequestKey key_;
  bool client_wants_ids_ = false;
  bool wants_usage_ = false;
  int64_t top_k_ = 0;          // chat: top_logprobs asked for
  std::optional<std::vector<int64_t>> prompt_ids_;
  std::vector<Choice> choices_;  // by the client's choice index
  int current_ = -1;             // choice being continued; -1 before any resume
  OrderedJson first_id_;         // the first attempt's id, created and model
  OrderedJson first_created_;
  OrderedJson first_model_;
  int64_t cached_tokens_ = -1;   // from a usage chunk, when one was seen
};

}  // namespace pagellm::router
