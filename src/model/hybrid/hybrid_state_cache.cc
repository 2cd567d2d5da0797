#include "model/hybrid/hybrid_state_cache.h"

#include <cstring>

#include <fmt/format.h>

namespace pagellm {

StatusOr<std::unique_ptr<HybridStateCache>> HybridStateCache::Create(const HybridStateSpec& spec) {
  // No GDN layers is a pipeline stage holding only full-attention layers: empty slots.
  if (spec.num_slots <= 0 || spec.num_gdn_layers < 0) {
    return InvalidArgumentError(fmt::format("HybridStateCache: need positive slots and >= 0 GDN layers, got {} and {}",
                                            spec.num_slots, spec.num_gdn_layers));
  }
  PAGELLM_RETURN_IF_ERROR(ValidateGdnDims(spec.dims));
  std::unique_ptr<HybridStateCache> cache(new HybridStateCache(spec));
  const size_t bytes = static_cast<size_t>(spec.num_slots * spec.bytes_per_slot());
  PAGELLM_ASSIGN_OR_RETURN(cache->arena_, AlignedBuffer::Allocate(bytes));
  if (bytes > 0) std::memset(cache->arena_.data(), 0, bytes);
  return cache;
}

float* HybridStateCache::SlotBase(int64_t slot_idx) {
  PAGELLM_CHECK(slot_idx >= 0 && slot_idx < spec_.num_slots);
  return arena_.as<float>() + slot_idx * spec_.num_gdn_layers * spec_.floats_per_layer();
}

GdnSequenceState HybridStateCache::Get(int64_t slot_idx, int64_t gdn_layer_idx) {
  PAGELLM_CHECK(gdn_layer_idx >= 0 && gdn_layer_idx < spec_.num_gdn_layers);
  float* base = SlotBase(slot_idx) + gdn_layer_idx * spec_.floats_per_layer();
  return GdnSequenceState{.conv_state = base, .recurrent_state = base + spec_.dims.conv_state_floats()};
}

void HybridStateCache::ResetSlot(int64_t slot_idx) {
  if (spec_.num_gdn_layers == 0) return;
  std::memset(SlotBase(slot_idx), 0, static_cast<size_t>(spec_.bytes_per_slot()));
}

}  // namespace pagellm
