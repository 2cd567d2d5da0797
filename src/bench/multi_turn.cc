#include "bench/multi_turn.h"

#include <fmt/format.h>

#include "bench/datasets.h"

namespace pagellm::bench {

Status ValidateMultiTurnParams(const MultiTurnParams& p) {
  if (p.num_conversations < 1) return InvalidArgumentError("--multi-turn-num-conversations must be >= 1");
  if (p.num_turns < 1) return InvalidArgumentError("--multi-turn-turns must be >= 1");
  if (p.input_len < 1) return InvalidArgumentError("--multi-turn-input-len must be >= 1");
  if (p.output_len < 1) return InvalidArgumentError("--multi-turn-output-len must be >= 1");
  return OkStatus();
}

StatusOr<std::vector<Conversation>> SampleConversations(const tokenizer::Tokenizer& tokenizer,
                                                        const MultiTurnParams& params, uint64_t seed) {
  PAGELLM_RETURN_IF_ERROR(ValidateMultiTurnParams(params));
  const RandomDatasetParams random{.input_len = params.input_len, .output_len = params.output_len};
  PAGELLM_ASSIGN_OR_RETURN(std::vector<SampleRequest> prompts,
                           SampleRandomRequests(tokenizer, params.num_conversations * params.num_turns, random, seed));
  std::vector<Conversation> conversations(static_cast<size_t>(params.num_conversations));
  size_t next = 0;
  for (Conversation& c : conversations) {
    for (int64_t t = 0; t < params.num_turns; ++t, ++next) {
      c.user_messages.push_back(std::move(prompts[next].prompt));
      c.user_message_lens.push_back(prompts[next].prompt_len);
    }
  }
  return conversations;
}

Json TurnMessages(const Conversation& conversation, int64_t turn_idx) {
  PAGELLM_CHECK(turn_idx >= 0 && static_cast<size_t>(turn_idx) < conversation.user_messages.size());
  PAGELLM_CHECK(conversation.replies.size() >= static_cast<size_t>(turn_idx));
  Json messages = Json::array();
  for (int64_t t = 0; t <= turn_idx; ++t) {
    messages.push_back(Json{{"role", "user"}, {"content", conversation.user_messages[static_cast<size_t>(t)]}});
    if (t < turn_idx)
      messages.push_back(Json{{"role", "assistant"}, {"content", conversation.replies[static_cast<size_t>(t)]}});
  }
  return messages;
}

}  // namespace pagellm::bench
