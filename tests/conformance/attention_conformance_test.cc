// Paged attention: CPU kernels (AVX2 / AVX-512, bf16/f16/f32 cache) against the
// reference on a mixed batch with scattered block tables: a fresh prefill, a prefill
// chunk continuing cached context, decode rows, and a sequence ending mid-block.
// Both sides read the same cache values; only fp32-vs-double math differs:
// tolerance 1e-4 absolute + 1e-4 relative (outputs are O(1)).
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <tuple>

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

namespace pagellm::conformance {
namespace {

// One sequence's context in a scattered cache, and its query rows (one per position).
struct InvarianceFixture {
  int64_t nh, nkv, hd, block_size, len;
  std::unique_ptr<PagedKvCache> cache;
  std::vector<int32_t> table;
  std::vector<float> q;  // [len, nh, hd]

  InvarianceFixture(DType dtype, int64_t nh, int64_t nkv, int64_t hd, int64_t block_size, int64_t len)
      : nh(nh), nkv(nkv), hd(hd), block_size(block_size), len(len) {
    const int32_t blocks = static_cast<int32_t>((len + block_size - 1) / block_size);
    KvCacheSpec spec{.num_layers = 1, .num_blocks = blocks + 8, .block_size = block_size, .num_kv_heads = nkv,
                     .head_dim = hd, .dtype = dtype};
    cache = std::move(*PagedKvCache::Create(spec));
    table.resize(static_cast<size_t>(blocks));
    std::iota(table.begin(), table.end(), 0);
    std::shuffle(table.begin(), table.end(), std::mt19937(5));
    std::vector<int64_t> slots;
    for (int64_t t = 0; t < len; ++t) slots.push_back(int64_t{table[t / block_size]} * block_size + t % block_size);
    auto k = RandomFloats(slots.size() * nkv * hd, 11), v = RandomFloats(slots.size() * nkv * hd, 12);
    ReferenceBackend().WriteKv(k.data(), v.data(), slots, cache->layer(0));
    q = RandomFloats(static_cast<size_t>(len * nh * hd), 13, 0.5f);
  }

  // Rows [begin, end) as one step of the sequence (seq_len = end), next to `others`
  // decode rows of copies of the same sequence at full length; returns the first
  // sequence's outputs.
  std::vector<float> Step(const CpuVariant& variant, int64_t begin, int64_t end, int others = 0) const {
    const int32_t width = static_cast<int32_t>(table.size());
    std::vector<int32_t> tables, qsl = {0}, lens;
    std::vector<float> rows(q.begin() + begin * nh * hd, q.begin() + end * nh * hd);
    for (int i = 0; i <= others; ++i) {
      tables.insert(tables.end(), table.begin(), table.end());
      qsl.push_back(qsl.back() + static_cast<int32_t>(i == 0 ? end - begin : 1));
      lens.push_back(static_cast<int32_t>(i == 0 ? end : len));
      if (i > 0) rows.insert(rows.end(), q.end() - nh * hd, q.end());
    }
    AttentionBatch batch{.query_start_loc = qsl, .seq_lens = lens, .block_tables = tables, .max_blocks_per_seq = width};
    AttentionDims dims{.num_heads = nh, .num_kv_heads = nkv, .head_dim = hd,
                       .scale = 1.0f / std::sqrt(static_cast<float>(hd))};
    std::vector<float> out(rows.size(), NAN);
    CpuBackend(variant.options).PagedAttention(rows.data(), cache->layer(0), batch, dims, out.data());
    out.resize(static_cast<size_t>((end - begin) * nh * hd));
    return out;
  }
};

// A row's attention output is bit-identical however the step that carries it is made:
// the whole prefill, prefill chunks of any size after cached context, one decode step,
// and next to other sequences. This is what keeps greedy decoding and logprobs
// unchanged by chunked prefill, prefix caching, preemption and a router's resume.
TEST(AttentionInvariance, RowsDoNotDependOnChunkingOrBatch) {
  for (const CpuVariant& variant : CpuVariants()) {
    if (variant.name.find("_default") == std::string::npos) continue;
    for (auto [nh, nkv, hd, bs] : {std::tuple<int64_t, int64_t, int64_t, int64_t>{16, 8, 128, 16}, {8, 1, 64, 16},
                                   {4, 2, 64, 32}, {32, 4, 64, 16}}) {
      InvarianceFixture f(DType::kBF16, nh, nkv, hd, bs, 61);
      const std::vector<float> whole = f.Step(variant, 0, f.len);
      const size_t row = static_cast<size_t>(nh * hd);
      auto expect_rows = [&](const std::vector<float>& got, int64_t begin, const std::string& what) {
        for (size_t i = 0; i < got.size(); ++i) {
          ASSERT_EQ(got[i], whole[static_cast<size_t>(begin) * row + i])
              << variant.name << " nh=" << nh << " nkv=" << nkv << " " << what << " row " << begin + int64_t(i / row);
        }
      };
      for (int64_t chunk : {1, 2, 3, 5, 7, 13}) {
        for (int64_t b = 0; b < f.len; b += chunk) {
          expect_rows(f.Step(variant, b, std::min(f.len, b + chunk)), b, "chunk " + std::to_string(chunk));
        }
      }
      expect_rows(f.Step(variant, 40, 45, /*others=*/3), 40, "chunk next to 3 decodes");
    }
  }
}

// Contexts longer than one segment (512 tokens): a decode row alone is cut into context
// splits across threads (flash-decoding), beside 15 other sequences it is not, and in a
// prefill it never is; all three give the same bits.
TEST(AttentionInvariance, LongContextDecodeSplitsDoNotChangeRows) {
  for (const CpuVariant& variant : CpuVariants()) {
    if (variant.name.find("_default") == std::string::npos) continue;
    for (auto [nh, nkv, bs, len] : {std::tuple<int64_t, int64_t, int64_t, int64_t>{16, 8, 16, 1300}, {8, 1, 32, 1100}}) {
      InvarianceFixture f(DType::kBF16, nh, nkv, /*hd=*/64, bs, len);
      const std::vector<float> whole = f.Step(variant, 0, f.len);
      const size_t row = static_cast<size_t>(nh * 64);
      auto expect_row = [&](const std::vector<float>& got, int64_t pos, const std::string& what) {
        for (size_t i = 0; i < row; ++i) {
          ASSERT_EQ(got[i], whole[static_cast<size_t>(pos) * row + i]) << variant.name << " " << what << " pos " << pos;
        }
      };
      for (int64_t pos : {int64_t{511}, int64_t{512}, int64_t{1025}, len - 1}) {
        expect_row(f.Step(variant, pos, pos + 1), pos, "decode alone");
      }
      expect_row(f.Step(variant, len - 1, len, /*others=*/15), len - 1, "decode beside 15");
      expect_row(f.Step(variant, len - 37, len), len - 37, "chunk after cached context");
    }
  }
}

}  // namespace
}  // namespace pagellm::conformance
