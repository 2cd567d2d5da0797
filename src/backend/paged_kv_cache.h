// PagedKvCache: the device memory behind the paged KV cache (all layers, K and V).
//
// Per layer, K and V are each laid out [num_blocks, num_kv_heads, block_size, head_dim]
// so that one KV head's block is contiguous for the attention kernel. A token's slot is
// `block_id * block_size + offset`; block ids are handed out elsewhere (kv/BlockPool),
// this class only owns the storage. All layers live in one 4 KiB-aligned arena.
//
//   KvCacheSpec spec{.num_layers = 28, .num_blocks = 1024, .block_size = 16,
//                    .num_kv_heads = 8, .head_dim = 128, .dtype = DType::kBF16};
//   PAGELLM_ASSIGN_OR_RETURN(auto kv, PagedKvCache::Create(spec));
//   KvLayerView layer0 = kv->layer(0);
#pragma once

#include <cstdint>
#include <memory>

#include "backend/aligned_buffer.h"
#include "common/status.h"
#include "tensor/dtype.h"

namespace pagellm {

struct KvCacheSpec {
  int64_t num_layers = 0;
  int64_t num_blocks = 0;
  int64_t block_size = 16;  // tokens per block
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  DType dtype = DType::kBF16;  // kBF16, kF16 or kF32

  // Bytes of one block across all layers, K and V.
  size_t BytesPerBlock() const;
  Status Validate() const;
};

// One layer's cache; elements are of `dtype`.
struct KvLayerView {
  void* k = nullptr;  // [num_blocks, num_kv_heads, block_size, head_dim]
  void* v = nullptr;  // [num_blocks, num_kv_heads, block_size, head_dim]
  DType dtype = DType::kBF16;
  int64_t num_blocks = 0;
  int64_t num_kv_heads = 0;
  int64_t block_size = 0;
  int64_t head_dim = 0;

  int64_t num_slots() const { return num_blocks * block_size; }
  // Element index of (block, kv head, offset in block, 0).
  int64_t ElementIndex(int64_t block_id, int64_t kv_head, int64_t offset) const {
    return ((block_id * num_kv_heads + kv_head) * block_size + offset) * head_dim;
  }
};

class PagedKvCache {
 public:
  static StatusOr<std::unique_ptr<PagedKvCache>> Create(const KvCacheSpec& spec);

  const KvCacheSpec& spec() const { return spec_; }
  // Precondition: 0 <= layer_idx < num_layers.
  KvLayerView layer(int64_t layer_idx) const;
  size_t total_bytes() const { return arena_.size(); }

  // Faults in the storage of blocks [0, num_blocks) of every layer now (AlignedBuffer::
  // Prefault): the block pool hands those out first, so the first requests after start-up
  // do not pay the page faults. Returns the bytes covered. Call before serving.
  size_t PrefaultBlocks(int64_t num_blocks);
  // PrefaultBlocks for the leading blocks that fit kStartupPrefaultBytes: what engines do
  // once the cache is created. The cap keeps a default plan of most of RAM from being
  // committed at start-up (it costs up to ~0.6 s on a VM where a first touch is slow);
  // later blocks are faulted in when the pool first reaches them. Measured on 2-core Zen 5,
  // Qwen3-0.6B Q4_K_M decode after a llama.cpp run freed its memory: the first step
  // (16-token prompt) took 100-300 ms more without it, 8-12 % of the 128-token figure.
  static constexpr size_t kStartupPrefaultBytes = size_t{256} << 20;
  size_t PrefaultStartupBlocks();

 private:
  PagedKvCache(const KvCacheSpec& spec, AlignedBuffer arena) : spec_(spec), arena_(std::move(arena)) {}
  size_t half_layer_bytes() const;  // one layer's K (or V) for all blocks
  KvCacheSpec spec_;
  AlignedBuffer arena_;
};

}  // namespace pagellm
