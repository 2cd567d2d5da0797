// Paged attention: CPU kernels (AVX2 / AVX-512, bf16/f16/f32 cache) against the
// reference on a mixed batch with scattered block tables: a fresh prefill, a prefill
// chunk continuing cached context, decode rows, and a sequence ending mid-block.
// Both sides read the same cache values; only fp32-vs-double math differs:
// tolerance 1e-4 absolute + 1e-4 relative (outputs are O(1)).
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "tests/conformance/conformance_util.h"

namespace pagellm::conformance {
namespace {

struct Seq {
  int32_t seq_len;  // context after this step
  int32_t num_new;  // query rows this step
};

void CheckAttention(const CpuVariant& variant, DType kv_dtype, int64_t nh, int64_t nkv, int64_t hd,
                    int64_t block_size, const std::vector<Seq>& seqs) {
  // Table width and pool size from the sequences (at least the original 16 x 64).
  int32_t max_blocks = 16, total_blocks = 0;
  for (const Seq& s : seqs) {
    const int32_t blocks = (s.seq_len + static_cast<int32_t>(block_size) - 1) / static_cast<int32_t>(block_size);
    max_blocks = std::max(max_blocks, blocks);
    total_blocks += blocks;
  }
  const int32_t pool_size = std::max(64, total_blocks + 8);
  KvCacheSpec spec{.num_layers = 1, .num_blocks = pool_size, .block_size = block_size, .num_kv_heads = nkv,
                   .head_dim = hd, .dtype = kv_dtype};
  auto cache = PagedKvCache::Create(spec);
  ASSERT_TRUE(cache.ok());
  // Scattered, shuffled block ids shared out among the sequences.
  std::vector<int32_t> pool(static_cast<size_t>(pool_size));
  std::iota(pool.begin(), pool.end(), 0);
  std::shuffle(pool.begin(), pool.end(), std::mt19937(42));
  std::vector<int32_t> tables(seqs.size() * max_blocks, -1), qsl = {0}, lens;
  size_t next = 0;
  ReferenceBackend ref;
  for (size_t s = 0; s < seqs.size(); ++s) {
    int32_t blocks = (seqs[s].seq_len + static_cast<int32_t>(block_size) - 1) / static_cast<int32_t>(block_size);
    ASSERT_LE(blocks, max_blocks);
    for (int32_t b = 0; b < blocks; ++b) tables[s * max_blocks + b] = pool[next++];
    // Fill the whole context (cached + new) with random K/V through slot mapping.
    std::vector<int64_t> slots;
    for (int32_t t = 0; t < seqs[s].seq_len; ++t) {
      slots.push_back(int64_t{tables[s * max_blocks + t / block_size]} * block_size + t % block_size);
    }
    auto k = RandomFloats(slots.size() * nkv * hd, 100 + s), v = RandomFloats(slots.size() * nkv * hd, 200 + s);
    ref.WriteKv(k.data(), v.data(), slots, (*cache)->layer(0));
    qsl.push_back(qsl.back() + seqs[s].num_new);
    lens.push_back(seqs[s].seq_len);
  }
  const int64_t num_tokens = qsl.back();
  auto q = RandomFloats(static_cast<size_t>(num_tokens * nh * hd), 7, 0.5f);
  AttentionBatch batch{.query_start_loc = qsl, .seq_lens = lens, .block_tables = tables,
                       .max_blocks_per_seq = max_blocks};
  AttentionDims dims{.num_heads = nh, .num_kv_heads = nkv, .head_dim = hd,
                     .scale = 1.0f / std::sqrt(static_cast<float>(hd))};
  std::vector<float> want(q.size()), got(q.size(), NAN);
  ref.PagedAttention(q.data(), (*cache)->layer(0), batch, dims, want.data());
  CpuBackend(variant.options).PagedAttention(q.data(), (*cache)->layer(0), batch, dims, got.data());
  ExpectClose(got, want, 1e-4, 1e-4,
              variant.name + " attention kv=" + std::string(DTypeName(kv_dtype)) + " hd=" + std::to_string(hd) +
                  " nh=" + std::to_string(nh) + " nkv=" + std::to_string(nkv) + " bs=" + std::to_string(block_size));
}

const std::vector<Seq> kMixedBatch = {
    {37, 37},  // fresh prefill spanning several blocks
    {50, 7},   // prefill chunk on top of 43 cached tokens
    {1, 1},    // first decode-sized step
    {64, 1},   // decode at a block boundary
    {29, 1},   // decode mid-block
};

TEST(AttentionConformance, MixedBatchAllKvDtypes) {
  for (const CpuVariant& variant : CpuVariants()) {
    if (variant.name.find("_default") == std::string::npos) continue;  // linear split irrelevant here
    for (DType dtype : {DType::kBF16, DType::kF16, DType::kF32}) {
      CheckAttention(variant, dtype, /*nh=*/4, /*nkv=*/2, /*hd=*/64, /*block_size=*/16, kMixedBatch);
    }
  }
}

TEST(AttentionConformance, HeadDimsGroupsAndBlockSizes) {
  for (const CpuVariant& variant : CpuVariants()) {
    if (variant.name.find("_default") == std::string::npos) continue;
    CheckAttention(variant, DType::kBF16, 6, 1, 128, 8, kMixedBatch);   // MQA, small blocks
    CheckAttention(variant, DType::kBF16, 2, 2, 32, 5, kMixedBatch);    // MHA, odd block size
    CheckAttention(variant, DType::kF32, 4, 2, 24, 16, kMixedBatch);    // hd % 16 != 0: fallback
    CheckAttention(variant, DType::kBF16, 8, 2, 256, 32, {{100, 1}, {64, 64}});
    CheckAttention(variant, DType::kF16, 4, 2, 48, 16, kMixedBatch);  // odd multiple of 16 lanes
    CheckAttention(variant, DType::kBF16, 9, 3, 80, 7, {{100, 1}, {40, 40}});  // group 3, block 7
  }
}

// The CPU kernel groups query heads by KV head and splits long prefills into work items
// of 32 rows: cover groups larger than 8 and prefills that span several items.
TEST(AttentionConformance, LargeGroupsAndLongPrefills) {
  for (const CpuVariant& variant : CpuVariants()) {
    if (variant.name.find("_default") == std::string::npos) continue;
    CheckAttention(variant, DType::kBF16, 12, 1, 64, 16, {{90, 90}, {120, 33}, {70, 1}});  // group of 12
    CheckAttention(variant, DType::kF32, 18, 2, 32, 16, {{97, 97}, {40, 1}});             // group of 9
    CheckAttention(variant, DType::kBF16, 16, 8, 128, 16, {{200, 65}, {33, 33}});         // Qwen3-0.6B heads
  }
}

// Decode rows of long contexts in small batches are cut into context splits (one work
// item per whole-block range, merged by log-sum-exp) so both threads stay busy: long and
// odd context lengths, block sizes 16/32, GQA groups 1/2/4/8, several sequences of
// different lengths, and prefill rows in the same batch (those are never split).
TEST(AttentionConformance, LongContextSplits) {
  for (const CpuVariant& variant : CpuVariants()) {
    if (variant.name.find("_default") == std::string::npos) continue;
    CheckAttention(variant, DType::kBF16, 16, 8, 128, 16, {{4099, 1}});                     // Qwen3-0.6B heads
    CheckAttention(variant, DType::kBF16, 8, 1, 64, 32, {{1537, 1}});                       // group 8, MQA
    CheckAttention(variant, DType::kF16, 2, 2, 32, 16, {{2000, 1}, {1100, 1}, {1024, 1}});  // group 1
    CheckAttention(variant, DType::kF32, 8, 2, 64, 32, {{1030, 1}, {3001, 1}});             // group 4
    CheckAttention(variant, DType::kBF16, 4, 2, 64, 16, {{1300, 1}, {90, 90}, {700, 5}, {1200, 1}});  // mixed
  }
}

}  // namespace
}  // namespace pagellm::conformance
