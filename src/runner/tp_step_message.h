// The message rank 0 broadcasts to the other tensor-parallel ranks for every model call:
// a fixed header, then (for a forward step) the step's ForwardInput arrays in one body.
//
//   StepMessage msg;
//   msg.EncodeForward(input);                       // rank 0
//   PAGELLM_RETURN_IF_ERROR(comm.Broadcast(&msg.header, sizeof(msg.header), 0));
//   PAGELLM_RETURN_IF_ERROR(comm.Broadcast(msg.body.data(), msg.header.body_bytes, 0));
//   ForwardInput in = msg.DecodeForward();          // other ranks, after both broadcasts
//
// Only the model input travels: sampling, scheduling and tokenization stay on rank 0,
// so the other ranks never see requests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/forward_input.h"

namespace pagellm {

enum class StepKind : int32_t {
  kForward = 1,
  kSaveSnapshot = 2,     // a = slot, b = snapshot
  kRestoreSnapshot = 3,  // a = snapshot, b = slot
  kAllocateStates = 4,   // a = num_slots, b = num_snapshots
  kShutdown = 5,
};

struct StepHeader {
  int32_t kind = 0;
  int32_t num_tokens = 0, num_seqs = 0, max_blocks_per_seq = 0, num_logits = 0, num_state_slots = 0;
  int32_t a = 0, b = 0;
  int64_t body_bytes = 0;
};

struct StepMessage {
  StepHeader header;
  std::vector<std::byte> body;  // reused across steps

  void EncodeForward(const ForwardInput& input);
  // Sizes `body` for header.body_bytes (receiving side, before the body broadcast).
  void PrepareBody() { body.resize(static_cast<size_t>(header.body_bytes)); }
  // Views into `body`; valid until the next Encode/PrepareBody.
  ForwardInput DecodeForward() const;
};

}  // namespace pagellm
