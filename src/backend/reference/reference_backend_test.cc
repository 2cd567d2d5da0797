// The reference backend against values worked out by hand, so the oracle itself is checked.
#include "backend/reference/reference_backend.h"

#include <gtest/gtest.h>

#include <cmath>

namespace pagellm {
namespace {

TEST(ReferenceBackend, RmsNormLinearSilu) {
  ReferenceBackend ref;
  std::vector<float> x = {3, 4}, w = {1, 2}, y(2);
  ref.RmsNorm(x.data(), w.data(), 1, 2, 0.0f, y.data());  // rms = sqrt(12.5)
  EXPECT_NEAR(y[0], 3 / std::sqrt(12.5), 1e-6);
  EXPECT_NEAR(y[1], 8 / std::sqrt(12.5), 1e-6);
  std::vector<float> wdata = {1, 2, 3, 4, 5, 6}, bias = {10, 20}, in = {1, 1, 1, 2, 0, -1}, out(4);
  auto lw = ref.PrepareLinear(TensorView{wdata.data(), DType::kF32, {2, 3}}, TensorView{bias.data(), DType::kF32, {2}});
  ASSERT_TRUE(lw.ok());
  ref.Linear(**lw, in.data(), 2, out.data());
  EXPECT_EQ(out, (std::vector<float>{16, 35, 9, 22}));
  std::vector<float> g = {0, 2}, u = {5, 3}, s(2);
  ref.SiluMul(g.data(), u.data(), 2, s.data());
  EXPECT_NEAR(s[0], 0, 1e-7);
  EXPECT_NEAR(s[1], 2 / (1 + std::exp(-2.0)) * 3, 1e-6);
}

TEST(ReferenceBackend, AttentionByHand) {
  // One sequence, 2 cached tokens + 1 new, 1 head, hd 2, block_size 1, blocks {2, 0, 1}.
  ReferenceBackend ref;
  auto kv = PagedKvCache::Create({.num_layers = 1, .num_blocks = 3, .block_size = 1, .num_kv_heads = 1,
                                  .head_dim = 2, .dtype = DType::kF32});
  ASSERT_TRUE(kv.ok());
  std::vector<float> k = {1, 0, 0, 1, 1, 1}, v = {1, 2, 3, 4, 5, 6};
  std::vector<int64_t> slots = {2, 0, 1};
  ref.WriteKv(k.data(), v.data(), slots, (*kv)->layer(0));
  std::vector<int32_t> qsl = {0, 2}, lens = {3}, table = {2, 0, 1};
  std::vector<float> q = {1, 0, 0, 2}, out(4);
  ref.PagedAttention(q.data(), (*kv)->layer(0),
                     {.query_start_loc = qsl, .seq_lens = lens, .block_tables = table, .max_blocks_per_seq = 3},
                     {.num_heads = 1, .num_kv_heads = 1, .head_dim = 2, .scale = 1.0f}, out.data());
  // Row 0 (position 1) sees tokens 0, 1: scores 1, 0.
  double p0 = std::exp(1.0) / (std::exp(1.0) + 1.0);
  EXPECT_NEAR(out[0], p0 * 1 + (1 - p0) * 3, 1e-6);
  EXPECT_NEAR(out[1], p0 * 2 + (1 - p0) * 4, 1e-6);
  // Row 1 (position 2) sees all three: scores 0, 2, 2.
  double e = std::exp(2.0), z = 1 + 2 * e;
  EXPECT_NEAR(out[2], (1 + e * 3 + e * 5) / z, 1e-6);
  EXPECT_NEAR(out[3], (2 + e * 4 + e * 6) / z, 1e-6);
}

}  // namespace
}  // namespace pagellm
