// ProfilingBackend around the reference backend: every op gives exactly what the
// reference gives when called directly, and is counted under the expected (op, rows).
#include "backend/profiling_backend.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "backend/backend_registry.h"

namespace pagellm {
namespace {

const OpTime* Find(const std::vector<OpTime>& table, std::string_view op, int64_t rows) {
  auto it = std::find_if(table.begin(), table.end(), [&](const OpTime& t) { return t.op == op && t.rows == rows; });
  return it == table.end() ? nullptr : &*it;
}

TEST(ProfilingBackend, ForwardsAndCounts) {
  auto ref_or = BackendRegistry::Get("reference");
  ASSERT_TRUE(ref_or.ok());
  Backend& ref = **ref_or;
  ProfilingBackend prof(ref);
  EXPECT_EQ(prof.name(), "reference");

  // Linear [N=2, K=3]: the weight is the reference's own, so its backend() check passes.
  std::vector<float> w = {1, 2, 3, 4, 5, 6}, bias = {10, 20}, x = {1, 1, 1, 2, 0, -1};
  auto lw = prof.PrepareLinear(TensorView{w.data(), DType::kF32, {2, 3}}, TensorView{bias.data(), DType::kF32, {2}});
  ASSERT_TRUE(lw.ok());
  EXPECT_EQ((*lw)->backend(), &ref);
  std::vector<float> y(4), want(4);
  prof.Linear(**lw, x.data(), 2, y.data());
  ref.Linear(**lw, x.data(), 2, want.data());
  EXPECT_EQ(y, want);
  prof.Linear(**lw, x.data(), 1, y.data());

  std::vector<float> norm_w = {1, 2, 3}, normed(6), normed_want(6);
  prof.RmsNorm(x.data(), norm_w.data(), 2, 3, 1e-6f, normed.data());
  ref.RmsNorm(x.data(), norm_w.data(), 2, 3, 1e-6f, normed_want.data());
  EXPECT_EQ(normed, normed_want);

  std::vector<int32_t> ids = {1, 0, 1};
  std::vector<float> emb(9), emb_want(9);
  prof.Embedding(TensorView{w.data(), DType::kF32, {2, 3}}, ids, emb.data());
  ref.Embedding(TensorView{w.data(), DType::kF32, {2, 3}}, ids, emb_want.data());
  EXPECT_EQ(emb, emb_want);

  std::vector<float> silu(6), silu_want(6), sum = x, sum_want = x;
  prof.SiluMul(x.data(), w.data(), 6, silu.data());
  ref.SiluMul(x.data(), w.data(), 6, silu_want.data());
  EXPECT_EQ(silu, silu_want);
  prof.AddInPlace(w.data(), 6, sum.data());
  ref.AddInPlace(w.data(), 6, sum_want.data());
  EXPECT_EQ(sum, sum_want);

  // Rope over 2 tokens x 1 head x hd 4, then one sequence's keys and attention (2 new
  // tokens, 1 kv head) into two separate caches.
  auto rope = BuildRopeTable({.rotary_dim = 4, .theta = 10000.0, .max_positions = 8});
  ASSERT_TRUE(rope.ok());
  std::vector<int32_t> positions = {3, 4};
  std::vector<float> q = {1, 2, 3, 4, -1, 0.5f, 2, 1}, q_want = q;
  prof.Rope(*rope, positions, 1, 4, q.data());
  ref.Rope(*rope, positions, 1, 4, q_want.data());
  EXPECT_EQ(q, q_want);
  const KvCacheSpec spec{.num_layers = 1, .num_blocks = 2, .block_size = 4, .num_kv_heads = 1, .head_dim = 4,
                         .dtype = DType::kF32};
  auto kv = PagedKvCache::Create(spec);
  auto kv_want = PagedKvCache::Create(spec);
  ASSERT_TRUE(kv.ok() && kv_want.ok());
  std::vector<int64_t> slots = {4, 5};
  std::vector<int32_t> qsl = {0, 2}, lens = {2}, table = {1};
  const AttentionBatch batch{.query_start_loc = qsl, .seq_lens = lens, .block_tables = table, .max_blocks_per_seq = 1};
  const AttentionDims dims{.num_heads = 1, .num_kv_heads = 1, .head_dim = 4, .scale = 0.5f};
  std::vector<float> att(8), att_want(8);
  prof.WriteKv(q.data(), w.data(), slots, (*kv)->layer(0));
  ref.WriteKv(q.data(), w.data(), slots, (*kv_want)->layer(0));
  prof.PagedAttention(q.data(), (*kv)->layer(0), batch, dims, att.data());
  ref.PagedAttention(q.data(), (*kv_want)->layer(0), batch, dims, att_want.data());
  EXPECT_EQ(att, att_want);

  const std::vector<OpTime> times = prof.Snapshot();
  const std::vector<std::tuple<std::string_view, int64_t, int64_t>> expected = {
      {"linear 2x3", 2, 1}, {"linear 2x3", 1, 1}, {"rms_norm 3", 2, 1},      {"embedding", 3, 1},
      {"silu_mul", 6, 1},   {"add_in_place", 6, 1}, {"rope 1x4", 2, 1},      {"write_kv", 2, 1},
      {"paged_attention 1x4", 2, 1}};
  EXPECT_EQ(times.size(), expected.size());
  for (const auto& [op, rows, calls] : expected) {
    const OpTime* t = Find(times, op, rows);
    ASSERT_NE(t, nullptr) << op << " rows " << rows;
    EXPECT_EQ(t->calls, calls) << op;
    EXPECT_GE(t->seconds, 0.0) << op;
  }

  prof.Reset();
  EXPECT_TRUE(prof.Snapshot().empty());
  prof.Linear(**lw, x.data(), 2, y.data());
  ASSERT_EQ(prof.Snapshot().size(), 1u);
  EXPECT_EQ(prof.Snapshot()[0].calls, 1);
}

}  // namespace
}  // namespace pagellm
