#include "spec/mtp_proposer.h"

#include <algorithm>
#include <cstring>

#include "common/steady_clock.h"

namespace pagellm {

MtpProposer::MtpProposer(MtpHead& head, PagedKvCache& kv, MtpProposerOptions options)
    : head_(head), kv_(kv), options_(options), blocks_(options.num_blocks, options.block_size),
      input_(options.block_size) {
  PAGELLM_CHECK(options_.max_num_batched_tokens > 0 && options_.hidden_size > 0 && options_.vocab_size > 0);
  PAGELLM_CHECK(options_.num_valid_tokens > 0 && options_.num_valid_tokens <= options_.vocab_size);
}

void MtpProposer::Release(SeqState& st) {
  blocks_.Release(st.blocks);
  st.computed = 0;
}

void MtpProposer::Forget(std::string_view request_id) {
  auto it = seqs_.find(std::string(request_id));
  if (it == seqs_.end()) return;
  Release(it->second);
  seqs_.erase(it);
}

Status MtpProposer::RunFeeds(std::span<const Feed> feeds, std::span<SeqState* const> states, int32_t step,
                             std::vector<std::vector<int32_t>>* drafts) {
  const int64_t h = options_.hidden_size, v = options_.vocab_size;
  size_t next = 0, offset = 0;  // feed being scheduled, its rows already sent
  std::vector<size_t> logit_seq;
  while (next < feeds.size()) {
    input_.Clear();
    logit_seq.clear();
    struct Part {
      size_t feed, begin, n;
    };
    std::vector<Part> parts;
    int32_t budget = options_.max_num_batched_tokens;
    while (next < feeds.size() && budget > 0) {
      const Feed& f = feeds[next];
      const size_t n = std::min(f.tokens.size() - offset, static_cast<size_t>(budget));
      parts.push_back({next, offset, n});
      budget -= static_cast<int32_t>(n);
      offset += n;
      if (offset == f.tokens.size()) {
        ++next;
        offset = 0;
      }
    }
    const size_t num_rows = static_cast<size_t>(options_.max_num_batched_tokens - budget);
    hidden_in_.resize(num_rows * static_cast<size_t>(h));
    hidden_out_.resize(num_rows * static_cast<size_t>(h));
    for (const Part& part : parts) {
      const Feed& f = feeds[part.feed];
      const bool wants_logits = f.logits && part.begin + part.n == f.tokens.size();
      // Positions are relative to the head's context start (see the header).
      const int32_t row0 = input_.AddSequence(std::span(f.tokens).subspan(part.begin, part.n),
                                              f.first_slot + static_cast<int32_t>(part.begin),
                                              states[f.seq]->blocks, wants_logits ? 1 : 0);
      for (size_t j = 0; j < part.n; ++j) {
        std::memcpy(hidden_in_.data() + (static_cast<size_t>(row0) + j) * static_cast<size_t>(h),
                    f.hidden[part.begin + j], static_cast<size_t>(h) * sizeof(float));
      }
      if (wants_logits) logit_seq.push_back(f.seq);
    }
    const ForwardInput in = input_.Build();
    logits_.resize(in.logits_indices.size() * static_cast<size_t>(v));
    const double start = SteadySeconds();
    PAGELLM_RETURN_IF_ERROR(head_.ForwardMtp(in, hidden_in_.data(), step, kv_, hidden_out_.data(), logits_.data()));
    last_forwards_.push_back({static_cast<int32_t>(num_rows), SteadySeconds() - start});
    for (size_t r = 0; r < logit_seq.size(); ++r) {
      const float* row = logits_.data() + r * static_cast<size_t>(v);
      // The first of equal maxima, as the sampler's greedy path.
      (*drafts)[logit_seq[r]].push_back(
          static_cast<int32_t>(std::max_element(row, row + options_.num_valid_tokens) - row));
      const float* out = hidden_out_.data() + static_cast<size_t>(in.logits_indices[r]) * static_cast<size_t>(h);
      last_hidden_[logit_seq[r]].assign(out, out + h);
    }
  }
  return OkStatus();
}

StatusOr<std::vector<std::vector<int32_t>>> MtpProposer::Propose(std::span<const MtpSequence> seqs, int32_t k) {
  last_forwards_.clear();
  std::vector<std::vector<int32_t>> drafts(seqs.size());
  last_hidden_.assign(seqs.size(), {});
  ++epoch_;
  std::vector<SeqState*> states(seqs.size(), nullptr);
  for (size_t i = 0; i < seqs.size(); ++i) {
    SeqState& st = seqs_[std::string(seqs[i].request_id)];
    st.epoch = epoch_;
    states[i] = &st;
  }
  for (auto it = seqs_.begin(); it != seqs_.end();) {  // finished or preempted: blocks back
    if (it->second.epoch == epoch_) {
      ++it;
      continue;
    }
    Release(it->second);
    it = seqs_.erase(it);
  }
  const int64_t h = options_.hidden_size;
  std::vector<Feed> feeds;
  std::vector<int32_t> want(seqs.size(), 0);
  for (size_t i = 0; i < seqs.size(); ++i) {
    const MtpSequence& seq = seqs[i];
    SeqState& st = *states[i];
    const int32_t n_tokens = static_cast<int32_t>(seq.token_ids.size());
    const int32_t hb = seq.hidden_begin;
    // Row p needs x_{p+1}: rows past the known tokens cannot be fed.
    const int32_t rows = std::clamp(std::min(static_cast<int32_t>(static_cast<int64_t>(seq.hidden.size()) / h),
                                             n_tokens - 1 - hb), 0, n_tokens);
    if (rows == 0) continue;
    if (hb < st.base || hb > st.base + st.computed) {
      if (st.computed > 0 || hb > 0) ++num_context_restarts_;
      st.base = hb;
      st.computed = 0;
    } else {
      st.computed = hb - st.base;  // a recompute from inside the context drops what follows
    }
    // Draft j is the token at position n_tokens + j - 1.
    want[i] = seq.wants_drafts ? std::max(0, std::min(k, options_.max_model_len - n_tokens)) : 0;
    if (!blocks_.Reserve(st.blocks, st.computed + rows + std::max(want[i] - 1, 0))) {
      want[i] = 0;
      if (!blocks_.Reserve(st.blocks, st.computed + rows)) {
        // No room for these rows: the head's context restarts after them.
        Release(st);
        st.base = hb + rows;
        continue;
      }
    }
    Feed& f = feeds.emplace_back();
    f.seq = i;
    f.first_slot = st.computed;
    f.tokens.assign(seq.token_ids.begin() + hb + 1, seq.token_ids.begin() + hb + 1 + rows);
    for (int32_t r = 0; r < rows; ++r) f.hidden.push_back(seq.hidden.data() + static_cast<size_t>(r) * h);
    f.logits = want[i] > 0;
    st.computed += rows;
    num_rows_fed_ += rows;
  }
  // A failed forward leaves slots the states count as computed unwritten: drop them.
  auto run = [&](int32_t step) -> Status {
    Status status = RunFeeds(feeds, states, step, &drafts);
    if (!status.ok()) {
      for (SeqState* st : states) Release(*st);
    }
    return status;
  };
  PAGELLM_RETURN_IF_ERROR(run(0));
  for (int32_t j = 1; j < k; ++j) {
    feeds.clear();
    for (size_t i = 0; i < seqs.size(); ++i) {
      if (want[i] <= j || drafts[i].size() != static_cast<size_t>(j)) continue;
      Feed& f = feeds.emplace_back();
      f.seq = i;
      f.first_slot = states[i]->computed + j - 1;  // past the target's rows: overwritten next step
      f.tokens.assign(1, drafts[i].back());
      f.hidden.assign(1, last_hidden_[i].data());
      f.logits = true;
    }
    if (feeds.empty()) break;
    PAGELLM_RETURN_IF_ERROR(run(j));
  }
  return drafts;
}

}  // namespace pagellm
