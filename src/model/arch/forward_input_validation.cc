#include "model/arch/forward_input_validation.h"

#include <fmt/format.h>

namespace pagellm {
namespace {

Status ValidateSizes(const ForwardInput& in, const ForwardLimits& lim) {
  const int64_t t = in.num_tokens(), s = in.num_seqs();
  if (t <= 0) return InvalidArgumentError("forward input has no tokens");
  if (t > lim.max_num_tokens) {
    return InvalidArgumentError(fmt::format("forward input has {} tokens, more than max_num_tokens {}", t,
                                            lim.max_num_tokens));
  }
  if (static_cast<int64_t>(in.positions.size()) != t || static_cast<int64_t>(in.slot_mapping.size()) != t) {
    return InvalidArgumentError(fmt::format("positions ({}) and slot_mapping ({}) must have num_tokens ({}) entries",
                                            in.positions.size(), in.slot_mapping.size(), t));
  }
  if (s <= 0 || static_cast<int64_t>(in.query_start_loc.size()) != s + 1) {
    return InvalidArgumentError(fmt::format("query_start_loc must have num_seqs + 1 = {} entries, got {}", s + 1,
                                            in.query_start_loc.size()));
  }
  if (in.max_blocks_per_seq <= 0 || static_cast<int64_t>(in.block_tables.size()) != s * in.max_blocks_per_seq) {
    return InvalidArgumentError(fmt::format("block_tables must be [num_seqs={}, max_blocks_per_seq={}], got {} entries",
                                            s, in.max_blocks_per_seq, in.block_tables.size()));
  }
  if (static_cast<int64_t>(in.logits_indices.size()) > t) {
    return InvalidArgumentError("more logits_indices than tokens");
  }
  return OkStatus();
}

Status ValidateSequence(const ForwardInput& in, const ForwardLimits& lim, int64_t s) {
  const int32_t begin = in.query_start_loc[static_cast<size_t>(s)];
  const int32_t end = in.query_start_loc[static_cast<size_t>(s) + 1];
  const int32_t seq_len = in.seq_lens[static_cast<size_t>(s)];
  if (end < begin || end > in.num_tokens() || (s == 0 && begin != 0)) {
    return InvalidArgumentError(fmt::format("query_start_loc is not non-decreasing from 0 at sequence {}", s));
  }
  if (end - begin > seq_len) {
    return InvalidArgumentError(fmt::format("sequence {}: {} new tokens but seq_len {}", s, end - begin, seq_len));
  }
  const int64_t blocks_needed = (int64_t{seq_len} + lim.block_size - 1) / lim.block_size;
  if (blocks_needed > in.max_blocks_per_seq) {
    return InvalidArgumentError(fmt::format("sequence {}: seq_len {} needs {} blocks, block table has {}", s, seq_len,
                                            blocks_needed, in.max_blocks_per_seq));
  }
  for (int64_t b = 0; b < blocks_needed; ++b) {
    int32_t id = in.block_tables[static_cast<size_t>(s * in.max_blocks_per_seq + b)];
    if (id < 0 || id >= lim.num_blocks) {
      return InvalidArgumentError(fmt::format("sequence {}: block id {} out of range [0, {})", s, id, lim.num_blocks));
    }
  }
  for (int32_t i = begin; i < end; ++i) {
    const int32_t want = seq_len - (end - i);
    if (in.positions[static_cast<size_t>(i)] != want) {
      return InvalidArgumentError(fmt::format("token {}: position {} but seq_len/query layout implies {}", i,
                                              in.positions[static_cast<size_t>(i)], want));
    }
  }
  return OkStatus();
}

}  // namespace

Status ValidateForwardInput(const ForwardInput& in, const ForwardLimits& lim) {
  PAGELLM_RETURN_IF_ERROR(ValidateSizes(in, lim));
  if (in.query_start_loc.back() != in.num_tokens()) {
    return InvalidArgumentError("query_start_loc must end at num_tokens");
  }
  for (int64_t s = 0; s < in.num_seqs(); ++s) PAGELLM_RETURN_IF_ERROR(ValidateSequence(in, lim, s));
  for (int64_t i = 0; i < in.num_tokens(); ++i) {
    const size_t u = static_cast<size_t>(i);
    if (in.token_ids[u] < 0 || in.token_ids[u] >= lim.vocab_size) {
      return InvalidArgumentError(fmt::format("token {}: id {} out of range [0, {})", i, in.token_ids[u], lim.vocab_size));
    }
    if (in.positions[u] >= lim.max_positions) {
      return InvalidArgumentError(fmt::format("token {}: position {} beyond the model's {} positions", i,
                                              in.positions[u], lim.max_positions));
    }
    if (in.slot_mapping[u] >= lim.num_blocks * lim.block_size) {
      return InvalidArgumentError(fmt::format("token {}: slot {} beyond the KV cache", i, in.slot_mapping[u]));
    }
  }
  for (size_t r = 0; r < in.logits_indices.size(); ++r) {
    const int32_t row = in.logits_indices[r];
    if (row < 0 || row >= in.num_tokens() || (r > 0 && row <= in.logits_indices[r - 1])) {
      return InvalidArgumentError(fmt::format("logits_indices[{}] = {} is out of range or not ascending", r, row));
    }
  }
  return OkStatus();
}

}  // namespace pagellm
