// Prompt preparation shared by the offline commands: text, chat messages or ids ->
// token ids, and vLLM-named sampling fields from a JSON object -> SamplingParams.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/status.h"
#include "sched/sampling_params.h"

namespace pagellm {
class EngineCore;
}

namespace pagellm::cli {

// "1,2,3" -> {1, 2, 3}.
StatusOr<std::vector<int32_t>> ParseIdList(const std::string& text);

// Renders `messages` with the model's chat template (add_generation_prompt = true).
StatusOr<std::string> RenderChat(const EngineCore& core, const OrderedJson& messages,
                                 const OrderedJson& chat_template_kwargs, const std::string& chat_template_path);

// One input line of `generate --input`: {"prompt": str} | {"messages": [...]} |
// {"prompt_token_ids": [...]}, plus sampling fields with vLLM's names.
StatusOr<std::vector<int32_t>> PromptIdsFromJson(const EngineCore& core, const OrderedJson& line,
                                                 const std::string& chat_template_path);
StatusOr<SamplingParams> SamplingParamsFromJson(const OrderedJson& line);

}  // namespace pagellm::cli
