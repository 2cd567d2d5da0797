// The `multi-turn` dataset of `pagellm bench serve`: synthetic chat conversations whose
// turn k sends the whole history (every earlier user message and the assistant's actual
// reply to it) plus a new user message, so turn k's prompt extends turn k-1's and a
// server with prefix caching can skip re-computing it.
//
//   MultiTurnParams params{.num_conversations = 4, .num_turns = 4, .input_len = 256, .output_len = 32};
//   PAGELLM_ASSIGN_OR_RETURN(std::vector<Conversation> convs, SampleConversations(tok, params, /*seed=*/0));
//   Json messages = TurnMessages(convs[0], 0);   // [{user, m0}]
//   convs[0].replies.push_back(reply_text);
//   messages = TurnMessages(convs[0], 1);        // [{user, m0}, {assistant, reply}, {user, m1}]
//
// User messages are vLLM-style random prompts (bench/datasets.h) of exactly input_len
// tokens each, all different, so nothing but a conversation's own history can be cached.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/status.h"
#include "tokenizer/tokenizer.h"

namespace pagellm::bench {

struct MultiTurnParams {
  int64_t num_conversations = 8;
  int64_t num_turns = 4;
  int64_t input_len = 256;  // new user tokens per turn
  int64_t output_len = 64;  // max_completion_tokens per turn
};

Status ValidateMultiTurnParams(const MultiTurnParams& params);

struct Conversation {
  std::vector<std::string> user_messages;  // [num_turns]
  std::vector<int64_t> user_message_lens;  // [num_turns], tokens of each user message
  std::vector<std::string> replies;        // the assistant's replies received so far
};

// Precondition: params valid. Conversation c's turn t uses random prompt c * num_turns + t.
StatusOr<std::vector<Conversation>> SampleConversations(const tokenizer::Tokenizer& tokenizer,
                                                        const MultiTurnParams& params, uint64_t seed);

// The chat messages of turn `turn_idx` (0-based): user/assistant pairs for every earlier
// turn, then the new user message. Precondition: replies.size() >= turn_idx.
Json TurnMessages(const Conversation& conversation, int64_t turn_idx);

}  // namespace pagellm::bench
