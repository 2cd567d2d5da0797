// Causal conv + SiLU: a hand-written reference over a zero/state-padded history, and
// continuation: splitting a sequence anywhere gives the same outputs and final state.
#include "model/hybrid/gdn_conv.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "model/hybrid/gdn_test_util.h"

namespace pagellm {
namespace {

const GdnDims kDims{.num_k_heads = 1, .num_v_heads = 2, .k_head_dim = 16, .v_head_dim = 16};  // conv_dim 64

// Direct formula of §4.3 step 1 in double, over history = [initial state rows | x].
std::vector<float> ConvByHand(const std::vector<float>& init_state, const std::vector<float>& x,
                              const std::vector<float>& w, int64_t num_tokens) {
  const int64_t c = kDims.conv_dim(), kernel = kDims.conv_kernel;
  std::vector<float> history(init_state);
  history.insert(history.end(), x.begin(), x.end());  // row hist + t = x[t]
  std::vector<float> out(num_tokens * c);
  for (int64_t t = 0; t < num_tokens; ++t) {
    for (int64_t ch = 0; ch < c; ++ch) {
      double acc = 0.0;
      for (int64_t i = 0; i < kernel; ++i) acc += double(w[ch * kernel + i]) * history[(t + i) * c + ch];
      out[t * c + ch] = static_cast<float>(acc / (1.0 + std::exp(-acc)));
    }
  }
  return out;
}

TEST(GdnConvTest, MatchesHandWrittenConvFromFreshAndGivenState) {
  const int64_t len = 9, c = kDims.conv_dim();
  const auto x = RandomUniform(len * c, 1, -2.0f, 2.0f);
  const auto w = RandomUniform(c * 4, 2, -1.0f, 1.0f);
  for (bool fresh : {true, false}) {
    const auto init = fresh ? std::vector<float>(3 * c, 0.0f) : RandomUniform(3 * c, 3, -2.0f, 2.0f);
    std::vector<float> state = init, out(len * c);
    GdnCausalConvSilu(kDims, x.data(), len, w.data(), state.data(), out.data());
    EXPECT_LE(MaxAbsDiff(out, ConvByHand(init, x, w, len)), 1e-5f) << "fresh=" << fresh;
    // The state now holds the last K-1 = 3 inputs, oldest first.
    EXPECT_EQ(state, std::vector<float>(x.end() - 3 * c, x.end()));
  }
}

TEST(GdnConvTest, NewestInputUsesLastTap) {
  // One token, zero state, weight only on tap 3: out = silu(w3 * x).
  std::vector<float> w(kDims.conv_dim() * 4, 0.0f), state(3 * kDims.conv_dim(), 0.0f);
  std::vector<float> x(kDims.conv_dim(), 1.5f), out(kDims.conv_dim());
  for (int64_t ch = 0; ch < kDims.conv_dim(); ++ch) w[ch * 4 + 3] = 2.0f;
  GdnCausalConvSilu(kDims, x.data(), 1, w.data(), state.data(), out.data());
  EXPECT_NEAR(out[0], 3.0 / (1.0 + std::exp(-3.0)), 1e-6);
}

TEST(GdnConvTest, SplittingAnywhereGivesSameOutputsAndState) {
  const int64_t len = 11, c = kDims.conv_dim();
  const auto x = RandomUniform(len * c, 4, -2.0f, 2.0f);
  const auto w = RandomUniform(c * 4, 5, -1.0f, 1.0f);
  const auto init = RandomUniform(3 * c, 6, -2.0f, 2.0f);
  std::vector<float> whole_state = init, whole(len * c);
  GdnCausalConvSilu(kDims, x.data(), len, w.data(), whole_state.data(), whole.data());
  // Every pair of cut points, including pieces shorter than K-1 and 1-token decode steps.
  for (int64_t a = 0; a <= len; ++a) {
    for (int64_t b = a; b <= len; ++b) {
      std::vector<float> state = init, out(len * c, NAN);
      for (auto [s, e] : {std::pair{int64_t{0}, a}, std::pair{a, b}, std::pair{b, len}}) {
        GdnCausalConvSilu(kDims, x.data() + s * c, e - s, w.data(), state.data(), out.data() + s * c);
      }
      ASSERT_EQ(MaxAbsDiff(out, whole), 0.0f) << "cuts " << a << "," << b;
      ASSERT_EQ(state, whole_state) << "cuts " << a << "," << b;
    }
  }
}

}  // namespace
}  // namespace pagellm
