#include "backend/paged_kv_cache.h"

#include <algorithm>

#include <fmt/format.h>

namespace pagellm {

size_t KvCacheSpec::BytesPerBlock() const {
  return static_cast<size_t>(2 * num_layers * num_kv_heads * block_size * head_dim) * DTypeSize(dtype);
}

Status KvCacheSpec::Validate() const {
  // No layers is a pipeline stage without attention layers (hybrid models): an empty cache.
  if (num_layers < 0 || num_blocks <= 0 || block_size <= 0 || num_kv_heads <= 0 || head_dim <= 0) {
    return InvalidArgumentError(fmt::format(
        "KV cache sizes must be positive (layers {}, blocks {}, block_size {}, kv heads {}, head_dim {})",
        num_layers, num_blocks, block_size, num_kv_heads, head_dim));
  }
  if (dtype != DType::kBF16 && dtype != DType::kF16 && dtype != DType::kF32) {
    return InvalidArgumentError(fmt::format("KV cache dtype {} is not supported (bf16, f16, f32)",
                                            DTypeName(dtype)));
  }
  return OkStatus();
}

StatusOr<std::unique_ptr<PagedKvCache>> PagedKvCache::Create(const KvCacheSpec& spec) {
  PAGELLM_RETURN_IF_ERROR(spec.Validate());
  size_t bytes = spec.BytesPerBlock() * static_cast<size_t>(spec.num_blocks);
  PAGELLM_ASSIGN_OR_RETURN(AlignedBuffer arena, AlignedBuffer::Allocate(bytes));
  return std::unique_ptr<PagedKvCache>(new PagedKvCache(spec, std::move(arena)));
}

size_t PagedKvCache::half_layer_bytes() const {
  return spec_.BytesPerBlock() / static_cast<size_t>(2 * spec_.num_layers) * static_cast<size_t>(spec_.num_blocks);
}

size_t PagedKvCache::PrefaultBlocks(int64_t num_blocks) {
  if (spec_.num_layers == 0) return 0;
  const size_t blocks = static_cast<size_t>(std::clamp<int64_t>(num_blocks, 0, spec_.num_blocks));
  const size_t half = half_layer_bytes(), bytes = half / static_cast<size_t>(spec_.num_blocks) * blocks;
  for (int64_t i = 0; i < 2 * spec_.num_layers; ++i) arena_.Prefault(static_cast<size_t>(i) * half, bytes);
  return bytes * static_cast<size_t>(2 * spec_.num_layers);
}

size_t PagedKvCache::PrefaultStartupBlocks() {
  const size_t per_block = spec_.BytesPerBlock();
  return per_block == 0 ? 0 : PrefaultBlocks(static_cast<int64_t>(kStartupPrefaultBytes / per_block));
}

KvLayerView PagedKvCache::layer(int64_t layer_idx) const {
  PAGELLM_CHECK(layer_idx >= 0 && layer_idx < spec_.num_layers);
  // Arena order: layer-major, then K, then V.
  const size_t half = half_layer_bytes();
  char* base = arena_.as<char>() + static_cast<size_t>(layer_idx) * 2 * half;
  KvLayerView view;
  view.k = base;
  view.v = base + half;
  view.dtype = spec_.dtype;
  view.num_blocks = spec_.num_blocks;
  view.num_kv_heads = spec_.num_kv_heads;
  view.block_size = spec_.block_size;
  view.head_dim = spec_.head_dim;
  return view;
}

}  // namespace pagellm
