// MtpProposer: speculative drafts from the target's own multi-token-prediction head
// (Qwen3.5 / Qwen3-Next mtp.*; vLLM's {"method": "mtp", "num_speculative_tokens": k}).
//
//   MtpProposer mtp(*model.mtp_head(), *mtp_kv, {.block_size = 16, .num_blocks = n, ...});
//   // after every target step, for every running request:
//   std::vector<MtpSequence> seqs = {{"req-1", tokens, /*hidden_begin=*/40, rows, /*wants_drafts=*/true}};
//   PAGELLM_ASSIGN_OR_RETURN(auto drafts, mtp.Propose(seqs, /*k=*/2));
//
// The head needs the target's final-normed hidden state h_p of every position p next to
// the token x_{p+1}: MTP row p = (x_{p+1}, h_p) writes the head's KV at p and predicts
// x_{p+2}. Those hidden states exist only in the step that computed them, so every step
// feeds the head its rows (prefill chunks included: "its own KV cache filled during
// prefill"), whether or not drafts are wanted. Only rows whose inputs were all right
// count: a verification's accepted drafts and its first token, never a rejected draft's
// row, so the head's KV never holds a rejected token past the next step (its slots are
// overwritten, as the draft chain's are). Draft 1 is the argmax of the last fed row;
// drafts 2..k feed (draft, the head's own output hidden) one position further, the same
// layer (step % num_mtp_layers), vLLM's chain.
// Where the target computed nothing the head saw (a prefix-cache hit, a recompute after
// preemption restarting elsewhere), the head's context restarts at the first position it
// is given: its slots are then relative to that position. RoPE attention depends only on
// position differences, so the rows after a restart see the positions as vLLM's would,
// just without the context before it (drafts only; verification keeps outputs exact).
// Drafts are the head's argmax, deterministic proposals verified like n-gram ones.
// Requests missing from a Propose call (finished, preempted) give their blocks back.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "backend/paged_kv_cache.h"
#include "common/status.h"
#include "model/forward_input_builder.h"
#include "runner/mtp_head.h"
#include "spec/draft_kv_blocks.h"
#include "spec/draft_model_proposer.h"

namespace pagellm {

struct MtpSequence {
  std::string_view request_id;
  std::span<const int32_t> token_ids;  // prompt + output so far, this step's samples included
  int32_t hidden_begin = 0;            // position of hidden's first row
  std::span<const float> hidden;       // [rows, H] the target's rows of this step that count (may be empty)
  bool wants_drafts = false;           // false: feed the head only (e.g. a prompt chunk)
};

struct MtpProposerOptions {
  int32_t block_size = 16;
  int32_t num_blocks = 0;              // of the head's KV cache, including the null block 0
  int32_t max_num_batched_tokens = 0;  // rows per head forward (the model's workspace)
  int32_t max_model_len = 0;           // drafts never reach this position
  int32_t num_valid_tokens = 0;        // argmax over [0, num_valid_tokens)
  int64_t hidden_size = 0;
  int64_t vocab_size = 0;              // logits row length
};

class MtpProposer {
 public:
  // `head` and `kv` (head.MakeMtpKvCacheSpec with num_blocks blocks) are borrowed.
  MtpProposer(MtpHead& head, PagedKvCache& kv, MtpProposerOptions options);

  // Feeds every sequence's rows; returns up to k drafts for those that want them (none
  // with k == 0, near max_model_len, or without free blocks).
  StatusOr<std::vector<std::vector<int32_t>>> Propose(std::span<const MtpSequence> seqs, int32_t k);
  void Forget(std::string_view request_id);

  std::span<const DraftForwardTiming> last_forwards() const { return last_forwards_; }
  int32_t num_free_blocks() const { return blocks_.num_free(); }
  int32_t num_usable_blocks() const { return blocks_.num_usable(); }
  int32_t num_tracked() const { return static_cast<int32_t>(seqs_.size()); }
  // Context restarts (see above) and rows fed, for the exit log and tests.
  int64_t num_context_restarts() const { return num_context_restarts_; }
  int64_t num_rows_fed() const { return num_rows_fed_; }

 private:
  struct SeqState {
    std::vector<int32_t> blocks;
    int32_t base = 0;      // position of the head's slot 0
    int32_t computed = 0;  // slots [0, computed) hold rows of the target's hidden states
    uint64_t epoch = 0;
  };
  // One sequence's rows in a head forward.
  struct Feed {
    size_t seq = 0;
    int32_t first_slot = 0;            // slot of tokens[0]
    std::vector<int32_t> tokens;       // x_{p+1} per row
    std::vector<const float*> hidden;  // h_p per row
    bool logits = false;               // argmax of the last row -> a draft
  };

  void Release(SeqState& st);
  // Runs `feeds` in forwards of at most max_num_batched_tokens rows (a long feed split
  // over consecutive forwards); a feed with logits appends its last row's argmax to
  // (*drafts)[feed.seq] and its output hidden to last_hidden_[feed.seq].
  // `step`: the draft step (0 for the target's rows), which picks the head's layer.
  Status RunFeeds(std::span<const Feed> feeds, std::span<SeqState* const> states, int32_t step,
                  std::vector<std::vector<int32_t>>* drafts);

  MtpHead& head_;
  PagedKvCache& kv_;
  MtpProposerOptions options_;
  DraftKvBlocks blocks_;
  std::unordered_map<std::string, SeqState> seqs_;
  uint64_t epoch_ = 0;
  int64_t num_context_restarts_ = 0;
  int64_t num_rows_fed_ = 0;
  std::vector<DraftForwardTiming> last_forwards_;
  std::vector<std::vector<float>> last_hidden_;  // per sequence of the call: the head's last output row
  // Reused host arrays of a forward.
  ForwardInputBuilder input_;
  std::vector<float> hidden_in_, hidden_out_, logits_;
};

}  // namespace pagellm
