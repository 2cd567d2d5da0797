#include "backend/paged_kv_cache.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace pagellm {
namespace {

TEST(PagedKvCache, LayoutAndAlignment) {
  KvCacheSpec spec{.num_layers = 3, .num_blocks = 5, .block_size = 4, .num_kv_heads = 2, .head_dim = 8,
                   .dtype = DType::kBF16};
  EXPECT_EQ(spec.BytesPerBlock(), size_t{2 * 3 * 2 * 4 * 8 * 2});
  auto kv = PagedKvCache::Create(spec);
  ASSERT_TRUE(kv.ok());
  EXPECT_EQ((*kv)->total_bytes(), spec.BytesPerBlock() * 5);
  EXPECT_EQ(reinterpret_cast<uintptr_t>((*kv)->layer(0).k) % 4096, 0u);
  const size_t per_array = 5 * 2 * 4 * 8 * 2;  // blocks * heads * block_size * hd * bytes
  for (int64_t l = 0; l < 3; ++l) {
    KvLayerView v = (*kv)->layer(l);
    EXPECT_EQ(static_cast<char*>(v.v) - static_cast<char*>(v.k), static_cast<ptrdiff_t>(per_array));
    EXPECT_EQ(static_cast<char*>(v.k) - static_cast<char*>((*kv)->layer(0).k), static_cast<ptrdiff_t>(2 * l * per_array));
  }
  KvLayerView v = (*kv)->layer(1);
  // [num_blocks, num_kv_heads, block_size, head_dim]
  EXPECT_EQ(v.ElementIndex(2, 1, 3), ((2 * 2 + 1) * 4 + 3) * 8);
  EXPECT_EQ(v.num_slots(), 20);
}

TEST(PagedKvCache, RejectsBadSpecs) {
  EXPECT_FALSE(PagedKvCache::Create({.num_layers = 1, .num_blocks = 0, .num_kv_heads = 1, .head_dim = 8}).ok());
  EXPECT_FALSE(PagedKvCache::Create({.num_layers = 1, .num_blocks = 2, .num_kv_heads = 1, .head_dim = 8,
                                     .dtype = DType::kI8}).ok());
}

}  // namespace
}  // namespace pagellm
