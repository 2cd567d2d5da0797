// Runs multi-turn conversations against a chat endpoint: conversations start at their
// arrival offsets and run concurrently (at most max_concurrency at once; later ones wait
// in FIFO order), the turns of one conversation run one after another, and each turn
// sends the history built from the replies actually received (bench/multi_turn.h).
//
//   ConversationRunConfig config{.model = "qwen", .max_tokens = 32, .ignore_eos = true};
//   PAGELLM_ASSIGN_OR_RETURN(ConversationRunResult r,
//                            RunConversations(target, &conversations, config, offsets, /*max_concurrency=*/4));
//   // r.outputs[c * num_turns + t] is conversation c's turn t
//
// A conversation stops at its first failed turn; its later turns are recorded as failed
// ("not sent") so the counts add up. Each conversation holds at most one request in
// flight, so max_concurrency caps both conversations and requests.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "bench/load_generator.h"
#include "bench/multi_turn.h"
#include "bench/serving_metrics.h"
#include "common/json.h"
#include "common/status.h"

namespace pagellm::bench {

struct ConversationRunConfig {
  std::string model;   // the API's "model" field
  int64_t max_tokens = 0;
  bool ignore_eos = false;
  Json extra_body = Json::object();
};

struct ConversationRunResult {
  // [num_conversations * num_turns], conversation-major. prompt_len is the server's
  // usage.prompt_tokens (the rendered chat prompt); without usage, the user tokens so
  // far plus the replies' output tokens (a lower bound: no template tokens).
  std::vector<RequestOutput> outputs;
  double duration_s = 0.0;  // first conversation start -> last turn finished
};

// Appends each reply to (*conversations)[c].replies. `start_offsets_s` has one entry per
// conversation (seconds after the start); max_concurrency <= 0 means unlimited.
// Precondition: every conversation has the same number of turns and no replies yet.
StatusOr<ConversationRunResult> RunConversations(const LoadTarget& target, std::vector<Conversation>* conversations,
                                                 const ConversationRunConfig& config,
                                                 std::span<const double> start_offsets_s, int64_t max_concurrency);

}  // namespace pagellm::bench
