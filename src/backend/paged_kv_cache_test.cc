#include "backend/paged_kv_cache.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <vector>

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

// Whether every page of [p, p + bytes) is resident.
bool Resident(const void* p, size_t bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t first = reinterpret_cast<uintptr_t>(p) / page * page;
  const size_t len = reinterpret_cast<uintptr_t>(p) + bytes - first;
  std::vector<unsigned char> vec((len + page - 1) / page);
  if (mincore(reinterpret_cast<void*>(first), len, vec.data()) != 0) return false;
  for (unsigned char c : vec) {
    if ((c & 1) == 0) return false;
  }
  return true;
}

TEST(PagedKvCache, PrefaultBlocksFaultsInTheLeadingBlocksOfEveryLayerAndKeepsContents) {
  // 64 KiB per layer's K (or V) block: a 10 MiB arena, from mmap (lazily faulted).
  KvCacheSpec spec{.num_layers = 2, .num_blocks = 40, .block_size = 16, .num_kv_heads = 8, .head_dim = 128,
                   .dtype = DType::kF32};
  auto kv = PagedKvCache::Create(spec);
  ASSERT_TRUE(kv.ok());
  const size_t block_bytes = 8 * 16 * 128 * 4;
  KvLayerView l1 = (*kv)->layer(1);
  std::memset(l1.v, 0x5A, block_bytes);  // block 0 of layer 1's V already holds data
  EXPECT_EQ((*kv)->PrefaultBlocks(6), 6 * spec.BytesPerBlock());
  for (int64_t l = 0; l < 2; ++l) {
    EXPECT_TRUE(Resident((*kv)->layer(l).k, 6 * block_bytes)) << l;
    EXPECT_TRUE(Resident((*kv)->layer(l).v, 6 * block_bytes)) << l;
  }
  const auto* bytes = static_cast<const unsigned char*>(l1.v);
  for (size_t i = 0; i < 2 * block_bytes; ++i) ASSERT_EQ(bytes[i], i < block_bytes ? 0x5A : 0) << i;
  // The start-up prefault covers at most the arena.
  EXPECT_EQ((*kv)->PrefaultStartupBlocks(), 40 * spec.BytesPerBlock());
  EXPECT_TRUE(Resident((*kv)->layer(1).v, 40 * block_bytes));
}

TEST(PagedKvCache, RejectsBadSpecs) {
  EXPECT_FALSE(PagedKvCache::Create({.num_layers = 1, .num_blocks = 0, .num_kv_heads = 1, .head_dim = 8}).ok());
  EXPECT_FALSE(PagedKvCache::Create({.num_layers = 1, .num_blocks = 2, .num_kv_heads = 1, .head_dim = 8,
                                     .dtype = DType::kI8}).ok());
}

}  // namespace
}  // namespace pagellm
