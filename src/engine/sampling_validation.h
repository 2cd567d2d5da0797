// Validation of user-supplied SamplingParams (OpenAI/vLLM ranges) before a request is
// accepted, so bad values become a 400 naming the parameter, never a crash.
#pragma once

#include <cstdint>

#include "common/status.h"
#include "sched/sampling_params.h"

namespace pagellm {

// InvalidArgument "<param>: <what is wrong>" for the first bad field. `max_logprobs`
// bounds `logprobs`; `vocab_size` bounds logit_bias and stop_token_ids ids.
Status ValidateSamplingParams(const SamplingParams& params, int32_t max_logprobs, int32_t vocab_size);

}  // namespace pagellm
