// DraftModelProposer: speculative drafts from a smaller model that shares the target's
// tokenizer (vLLM's {"model": DIR, "num_speculative_tokens": k}). The draft keeps its own
// paged KV cache with its own block ids; per request it remembers which tokens its KV
// holds, so after a verification it keeps the longest prefix the request still agrees
// with (accepted drafts stay, rejected ones are overwritten) and catches up on the rest.
//
//   DraftModelProposer drafts(*draft_model, *draft_kv, {.block_size = 16, .num_blocks = n, ...});
//   std::vector<DraftSequence> seqs = {{"req-1", req->all_token_ids()}};
//   PAGELLM_ASSIGN_OR_RETURN(auto proposals, drafts.Propose(seqs, /*k=*/4));
//   // proposals[0]: up to 4 token ids, greedy on the draft model
//
// One Propose: a catch-up forward over every request's unseen tokens (chunked by the
// token budget), whose last row gives draft 1; then k - 1 one-token forwards for drafts
// 2..k, all requests batched. Drafts are the draft model's argmax, deterministic
// proposals: verification accepts a draft iff the target's own sample equals it, which
// keeps greedy and seeded outputs exactly as without speculation (no draft
// distribution enters the sampling). Attention-only draft models: a recurrent draft's
// state could not drop rejected tokens this way.
// Requests missing from a Propose call (finished, preempted, still in their prompt) lose
// their draft state and blocks there; a request that finds no free blocks gets no
// drafts that step.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "backend/paged_kv_cache.h"
#include "common/status.h"
#include "runner/model_runner.h"
#include "spec/draft_kv_blocks.h"

namespace pagellm {

struct DraftSequence {
  std::string_view request_id;
  std::span<const int32_t> token_ids;  // prompt + output so far (the last one not yet in any KV)
};

struct DraftModelProposerOptions {
  int32_t block_size = 16;
  int32_t num_blocks = 0;             // of the draft's KV cache, including the null block 0
  int32_t max_num_batched_tokens = 0;  // tokens per draft forward (the model's workspace)
  int32_t max_model_len = 0;          // drafts never reach this position
  int32_t num_valid_tokens = 0;       // argmax over [0, num_valid_tokens) (no padding rows)
};

// One draft forward, for the caller's cost model.
struct DraftForwardTiming {
  int32_t num_tokens = 0;
  double seconds = 0;
};

class DraftModelProposer {
 public:
  // `model` (attention-only) and `kv` (num_blocks blocks) are borrowed.
  DraftModelProposer(CausalLm& model, PagedKvCache& kv, DraftModelProposerOptions options);

  // Up to k drafts per sequence (fewer near max_model_len, none without free blocks).
  StatusOr<std::vector<std::vector<int32_t>>> Propose(std::span<const DraftSequence> seqs, int32_t k);
  // Sizes and touches the draft's logits up front (ModelRunner::ReserveLogitRows).
  Status ReserveLogitRows(int64_t rows) { return runner_.ReserveLogitRows(rows); }

  // A request that finished or was aborted: its blocks go back now (a Propose without it
  // would release them too).
  void Forget(std::string_view request_id);

  // The forwards of the last Propose call.
  std::span<const DraftForwardTiming> last_forwards() const { return last_forwards_; }
  int32_t num_free_blocks() const { return blocks_.num_free(); }
  int32_t num_usable_blocks() const { return blocks_.num_usable(); }
  int32_t num_tracked() const { return static_cast<int32_t>(seqs_.size()); }
  // Tokens fed to catch the draft KV up with the target's (besides each call's last token).
  int64_t num_catch_up_tokens() const { return num_catch_up_tokens_; }

 private:
  struct SeqState {
    std::vector<int32_t> blocks;
    std::vector<int32_t> computed;  // token ids whose KV this draft cache holds, from position 0
    uint64_t epoch = 0;
  };
  // One batch entry of a forward: which sequence, which tokens (appended to computed).
  struct Feed {
    size_t seq = 0;
    std::vector<int32_t> tokens;  // the last one's row gives the next draft
  };

  void Release(SeqState& st);
  // Runs `feeds` (one per sequence) as forwards of at most max_num_batched_tokens tokens,
  // a long feed split over consecutive forwards; the argmax of each feed's last row is
  // appended to out[feed.seq]. On error some states list tokens never computed: the
  // caller releases them.
  Status RunFeeds(std::span<const Feed> feeds, std::span<SeqState* const> states,
                  std::vector<std::vector<int32_t>>* out);
  int32_t Argmax(const float* row) const;

  DraftModelProposerOptions options_;
  ModelRunner runner_;
  std::unordered_map<std::string, SeqState> seqs_;
  DraftKvBlocks blocks_;
  uint64_t epoch_ = 0;
  int64_t num_catch_up_tokens_ = 0;
  std::vector<DraftForwardTiming> last_forwards_;
};

}  // namespace pagellm
