#include "runner/tp_step_message.h"

#include <cstring>
#include <span>

namespace pagellm {
namespace {

// Arrays in body order; int64 slot_mapping first keeps every array naturally aligned.
struct Layout {
  size_t slots, tokens, positions, query_start, seq_lens, tables, logits, states, end;
};

Layout LayoutOf(const StepHeader& h) {
  Layout l{};
  l.slots = 0;
  l.tokens = l.slots + 8 * static_cast<size_t>(h.num_tokens);
  l.positions = l.tokens + 4 * static_cast<size_t>(h.num_tokens);
  l.query_start = l.positions + 4 * static_cast<size_t>(h.num_tokens);
  l.seq_lens = l.query_start + 4 * static_cast<size_t>(h.num_seqs + 1);
  l.tables = l.seq_lens + 4 * static_cast<size_t>(h.num_seqs);
  l.logits = l.tables + 4 * static_cast<size_t>(h.num_seqs) * static_cast<size_t>(h.max_blocks_per_seq);
  l.states = l.logits + 4 * static_cast<size_t>(h.num_logits);
  l.end = l.states + 4 * static_cast<size_t>(h.num_state_slots);
  return l;
}

template <typename T>
void Put(std::vector<std::byte>& body, size_t offset, std::span<const T> values) {
  if (!values.empty()) std::memcpy(body.data() + offset, values.data(), values.size_bytes());
}

template <typename T>
std::span<const T> View(const std::vector<std::byte>& body, size_t offset, size_t count) {
  return {reinterpret_cast<const T*>(body.data() + offset), count};
}

}  // namespace

void StepMessage::EncodeForward(const ForwardInput& in) {
  header = StepHeader{};
  header.kind = static_cast<int32_t>(StepKind::kForward);
  header.num_tokens = in.num_tokens();
  header.num_seqs = in.num_seqs();
  header.max_blocks_per_seq = in.max_blocks_per_seq;
  header.num_logits = static_cast<int32_t>(in.logits_indices.size());
  header.num_state_slots = static_cast<int32_t>(in.state_slots.size());
  const Layout l = LayoutOf(header);
  header.body_bytes = static_cast<int64_t>(l.end);
  body.resize(l.end);
  Put(body, l.slots, in.slot_mapping);
  Put(body, l.tokens, in.token_ids);
  Put(body, l.positions, in.positions);
  Put(body, l.query_start, in.query_start_loc);
  Put(body, l.seq_lens, in.seq_lens);
  Put(body, l.tables, in.block_tables);
  Put(body, l.logits, in.logits_indices);
  Put(body, l.states, in.state_slots);
}

ForwardInput StepMessage::DecodeForward() const {
  const StepHeader& h = header;
  const Layout l = LayoutOf(h);
  const auto t = static_cast<size_t>(h.num_tokens), s = static_cast<size_t>(h.num_seqs);
  ForwardInput in;
  in.slot_mapping = View<int64_t>(body, l.slots, t);
  in.token_ids = View<int32_t>(body, l.tokens, t);
  in.positions = View<int32_t>(body, l.positions, t);
  in.query_start_loc = View<int32_t>(body, l.query_start, s + 1);
  in.seq_lens = View<int32_t>(body, l.seq_lens, s);
  in.block_tables = View<int32_t>(body, l.tables, s * static_cast<size_t>(h.max_blocks_per_seq));
  in.max_blocks_per_seq = h.max_blocks_per_seq;
  in.logits_indices = View<int32_t>(body, l.logits, static_cast<size_t>(h.num_logits));
  in.state_slots = View<int32_t>(body, l.states, static_cast<size_t>(h.num_state_slots));
  return in;
}

}  // namespace pagellm
