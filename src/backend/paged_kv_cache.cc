#include "backend/paged_kv_cache.h"

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

KvLayerView PagedKvCache::layer(int64_t layer_idx) const {
  PAGELLM_CHECK(layer_idx >= 0 && layer_idx < spec_.num_layers);
  // Arena order: layer-major, then K, then V.
  size_t half = spec_.BytesPerBlock() / static_cast<size_t>(2 * spec_.num_layers) *
                static_cast<size_t>(spec_.num_blocks);
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
