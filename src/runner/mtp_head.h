// MtpHead: a model's multi-token-prediction head (Qwen3.5 / Qwen3-Next mtp.*) as the MTP
// proposer sees it (spec/mtp_proposer.h). CausalLm::mtp_head() returns it for a model
// loaded with its head, nullptr otherwise.
//
//   MtpHead* head = model.mtp_head();
//   std::span<const float> h = head->last_hidden();  // target rows of the last Forward
//   PAGELLM_RETURN_IF_ERROR(head->ForwardMtp(input, hidden_in, /*step=*/0, mtp_kv, hidden_out, logits));
#pragma once

#include <cstdint>
#include <span>

#include "backend/paged_kv_cache.h"
#include "common/status.h"
#include "model/forward_input.h"

namespace pagellm {

class MtpHead {
 public:
  virtual ~MtpHead() = default;
  // The head's own paged KV cache (one layer per MTP layer, the target's KV heads).
  virtual KvCacheSpec MakeMtpKvCacheSpec(int64_t num_blocks, int64_t block_size, DType dtype) const = 0;
  // Final-normed hidden state of every token of the target's last Forward, [num_tokens, H]
  // in the Forward's token order.
  virtual std::span<const float> last_hidden() const = 0;
  // Row i: token x_{i+1} (input.token_ids) with hidden_in row i (the target's, or the
  // head's own hidden_out for later draft steps); hidden_out [num_tokens, H] normed,
  // logits [input.logits_indices.size(), vocab] (model/hybrid/hybrid_model.h).
  virtual Status ForwardMtp(const ForwardInput& input, const float* hidden_in, int32_t step, PagedKvCache& kv,
                            float* hidden_out, float* logits) = 0;
};

}  // namespace pagellm
