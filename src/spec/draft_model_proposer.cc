#include "spec/draft_model_proposer.h"

#include <algorithm>

#include "common/steady_clock.h"

namespace pagellm {

DraftModelProposer::DraftModelProposer(CausalLm& model, PagedKvCache& kv, DraftModelProposerOptions options)
    : options_(options), runner_(model, kv, options.block_size), blocks_(options.num_blocks, options.block_size) {
  PAGELLM_CHECK(model.state_bytes_per_slot() == 0);  // attention-only drafts (see the header)
  PAGELLM_CHECK(options_.max_num_batched_tokens > 0);
}

void DraftModelProposer::Release(SeqState& st) {
  blocks_.Release(st.blocks);
  st.computed.clear();
}

void DraftModelProposer::Forget(std::string_view request_id) {
  auto it = seqs_.find(std::string(request_id));
  if (it == seqs_.end()) return;
  Release(it->second);
  seqs_.erase(it);
}

int32_t DraftModelProposer::Argmax(const float* row) const {
  // The first of equal maxima, as the sampler's greedy path.
  return static_cast<int32_t>(std::max_element(row, row + options_.num_valid_tokens) - row);
}

Status DraftModelProposer::RunFeeds(std::span<const Feed> feeds, std::span<SeqState* const> states,
                                    std::vector<std::vector<int32_t>>* out) {
  size_t next = 0;     // feed being scheduled
  size_t offset = 0;   // tokens of feeds[next] already sent
  SchedulerOutput batch;
  std::vector<size_t> seq_of;  // per scheduled entry
  while (next < feeds.size()) {
    batch.scheduled.clear();
    seq_of.clear();
    int32_t budget = options_.max_num_batched_tokens;
    while (next < feeds.size() && budget > 0) {
      const Feed& f = feeds[next];
      SeqState& st = *states[f.seq];
      const size_t n = std::min(f.tokens.size() - offset, static_cast<size_t>(budget));
      ScheduledRequest& s = batch.scheduled.emplace_back();
      s.num_computed_tokens = static_cast<int32_t>(st.computed.size());
      s.num_new_tokens = static_cast<int32_t>(n);
      s.new_token_ids.assign(f.tokens.begin() + static_cast<ptrdiff_t>(offset),
                             f.tokens.begin() + static_cast<ptrdiff_t>(offset + n));
      s.block_ids = st.blocks;
      s.samples = offset + n == f.tokens.size();
      st.computed.insert(st.computed.end(), s.new_token_ids.begin(), s.new_token_ids.end());
      seq_of.push_back(f.seq);
      budget -= static_cast<int32_t>(n);
      offset += n;
      if (offset == f.tokens.size()) {
        ++next;
        offset = 0;
      }
    }
    const double start = SteadySeconds();
    PAGELLM_ASSIGN_OR_RETURN(const StepLogits* logits, runner_.Execute(batch));
    last_forwards_.push_back({options_.max_num_batched_tokens - budget, SteadySeconds() - start});
    for (int32_t r = 0; r < logits->num_rows(); ++r) {
      (*out)[seq_of[static_cast<size_t>(logits->scheduled_index[static_cast<size_t>(r)])]].push_back(
          Argmax(logits->row(r)));
    }
  }
  return OkStatus();
}

StatusOr<std::vector<std::vector<int32_t>>> DraftModelProposer::Propose(std::span<const DraftSequence> seqs,
                                                                       int32_t k) {
  last_forwards_.clear();
  std::vector<std::vector<int32_t>> drafts(seqs.size());
  if (k <= 0 || seqs.empty()) return drafts;
  ++epoch_;
  std::vector<SeqState*> states(seqs.size(), nullptr);
  for (size_t i = 0; i < seqs.size(); ++i) {
    SeqState& st = seqs_[std::string(seqs[i].request_id)];
    st.epoch = epoch_;
    states[i] = &st;
  }
  // Whoever is not asking any more gives its blocks back first.
  for (auto it = seqs_.begin(); it != seqs_.end();) {
    if (it->second.epoch == epoch_) {
      ++it;
      continue;
    }
    Release(it->second);
    it = seqs_.erase(it);
  }
  // Catch-up: each sequence's tokens after the prefix its draft KV still agrees with
  // (at least the last token, whose row gives draft 1).
  std::vector<Feed> feeds;
  std::vector<int32_t> want(seqs.size(), 0);  // drafts per sequence
  for (size_t i = 0; i < seqs.size(); ++i) {
    SeqState& st = *states[i];
    const std::span<const int32_t> tokens = seqs[i].token_ids;
    const int32_t n = static_cast<int32_t>(tokens.size());
    // Draft j (1-based) is the token at position n + j - 1: at most max_model_len - n.
    want[i] = std::min(k, options_.max_model_len - n);
    if (n == 0 || want[i] <= 0) continue;
    size_t keep = 0;
    const size_t limit = std::min(st.computed.size(), tokens.size() - 1);
    while (keep < limit && st.computed[keep] == tokens[keep]) ++keep;
    st.computed.resize(keep);
    // KV for the tokens and for drafts 1..want-1 (the last draft is never fed back).
    if (!blocks_.Reserve(st.blocks, n + want[i] - 1)) {
      want[i] = 0;
      continue;
    }
    Feed& f = feeds.emplace_back();
    f.seq = i;
    f.tokens.assign(tokens.begin() + static_cast<ptrdiff_t>(keep), tokens.end());
    num_catch_up_tokens_ += static_cast<int64_t>(f.tokens.size()) - 1;
  }
  // A failed forward leaves `computed` listing tokens whose KV was never written: drop what
  // this call's sequences hold, so the next call catches them up from scratch.
  auto run = [&]() -> Status {
    Status status = RunFeeds(feeds, states, &drafts);
    if (!status.ok()) {
      for (SeqState* st : states) Release(*st);
    }
    return status;
  };
  PAGELLM_RETURN_IF_ERROR(run());
  for (int32_t j = 1; j < k; ++j) {
    feeds.clear();
    for (size_t i = 0; i < seqs.size(); ++i) {
      if (want[i] <= j || drafts[i].size() != static_cast<size_t>(j)) continue;
      Feed& f = feeds.emplace_back();
      f.seq = i;
      f.tokens.assign(1, drafts[i].back());
    }
    if (feeds.empty()) break;
    PAGELLM_RETURN_IF_ERROR(run());
  }
  return drafts;
}

}  // namespace pagellm
