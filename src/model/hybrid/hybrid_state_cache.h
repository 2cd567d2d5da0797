// HybridStateCache: the per-sequence recurrent state of every Gated DeltaNet layer of a
// hybrid model (docs/qwen-architectures.md §4.8), in STATE SLOTS addressed by integer id.
//
// One fp32 arena: slot-major, then GDN layer, then {conv state [K-1, conv_dim],
// recurrent state [nv, dk, dv]}. Unlike the paged KV cache, a slot's size does not grow
// with the sequence, cannot be shared by prefix and must be reset when its sequence
// (re)starts; HybridModel::Forward resets a slot whose sequence starts at position 0.
// Who owns which slot is the scheduler's business (integer ids, no pointers).
//
//   PAGELLM_ASSIGN_OR_RETURN(auto states, HybridStateCache::Create(model->MakeStateSpec(/*num_slots=*/8)));
//   GdnSequenceState st = states->Get(/*slot=*/3, /*gdn_layer_idx=*/0);
//   states->ResetSlot(3);
#pragma once

#include <cstdint>
#include <memory>

#include "backend/aligned_buffer.h"
#include "common/status.h"
#include "model/hybrid/gdn_dims.h"
#include "model/hybrid/gdn_mixer.h"

namespace pagellm {

struct HybridStateSpec {
  int64_t num_slots = 0;       // concurrent sequences
  int64_t num_gdn_layers = 0;  // linear-attention layers of the model
  GdnDims dims;

  int64_t floats_per_layer() const { return dims.conv_state_floats() + dims.state_floats(); }
  int64_t bytes_per_slot() const { return num_gdn_layers * floats_per_layer() * static_cast<int64_t>(sizeof(float)); }
};

class HybridStateCache {
 public:
  // InvalidArgument on non-positive counts or invalid dims; ResourceExhausted if the
  // arena cannot be allocated. All slots start zeroed.
  static StatusOr<std::unique_ptr<HybridStateCache>> Create(const HybridStateSpec& spec);

  const HybridStateSpec& spec() const { return spec_; }
  int64_t num_slots() const { return spec_.num_slots; }

  // Views of slot `slot_idx`'s state for GDN layer `gdn_layer_idx` (0-based among the
  // GDN layers). Preconditions: both in range.
  GdnSequenceState Get(int64_t slot_idx, int64_t gdn_layer_idx);
  // Zeroes every layer's conv and recurrent state of the slot (a fresh sequence).
  void ResetSlot(int64_t slot_idx);

 private:
  explicit HybridStateCache(const HybridStateSpec& spec) : spec_(spec) {}
  float* SlotBase(int64_t slot_idx);

  HybridStateSpec spec_;
  AlignedBuffer arena_;
};

}  // namespace pagellm
