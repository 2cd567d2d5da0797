// Compiled with -ffp-contract=off (see gguf_quantize_math.h for why); float expressions keep
// llama.cpp's order, e.g. w * q * x as (w * q) * x.
#include "gguf/gguf_quantize_iq4.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "common/status.h"
#include "gguf/gguf_quantize_math.h"
#include "gguf/gguf_types.h"
#include "tensor/half.h"

namespace pagellm {
namespace {

constexpr int kSub = 32;
constexpr int kNumTrials = 7;  // trial scales either side of -127 / max (llama-quantize's ntry)

// kIq4NlValues as floats (exact), so the search below compares without converting.
constexpr std::array<float, 16> kLevels = [] {
  std::array<float, 16> levels{};
  for (int i = 0; i < 16; ++i) levels[static_cast<size_t>(i)] = kIq4NlValues[i];
  return levels;
}();

// The level nearest x; on a tie the upper one (llama.cpp's best_index_int8, which this
// matches for every input including NaN, which maps to 15).
int NearestLevel(float x) {
  const float* v = kLevels.data();
  if (x <= v[0]) return 0;
  if (x >= v[15]) return 15;
  int lo = 0, hi = 15;  // bisect to the first level above x: v[lo] <= x < v[hi], hi = lo + 1
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (x < v[mid]) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  return x - v[lo] < v[hi] - x ? lo : hi;
}

// The value of level NearestLevel(y), without branches: lo is the largest level <= y (level 0
// when y is below all), hi the next one up, and the tie rule is NearestLevel's expression.
// Same result for every y: above level 15 or NaN, lo = 14 and hi = 15, and the comparison
// is false (NaN compares false), so 15; below level 0, lo = 0 and hi = 1, so 0.
inline float NearestLevelValue(float y) {
  float lo = kLevels[0], hi = kLevels[15];
  for (int i = 1; i < 15; ++i) lo = y < kLevels[static_cast<size_t>(i)] ? lo : kLevels[static_cast<size_t>(i)];
  for (int i = 14; i >= 1; --i) hi = y < kLevels[static_cast<size_t>(i)] ? kLevels[static_cast<size_t>(i)] : hi;
  return y - lo < hi - y ? lo : hi;
}

// For each of kNumScales trial inverse scales id[s]: sum w q x and sum w q^2 over a
// sub-block for the levels q nearest id[s] * x. Each sum accumulates j = 0..31 in order, as
// llama.cpp's loop does for one scale; the scales are the inner loop so that the compiler
// computes them side by side in SIMD lanes (the branchy bisection of NearestLevel, 16 x 32
// times per sub-block, made IQ4_XS conversion ~10x slower than the other types).
constexpr int kNumScales = 2 * kNumTrials + 2;  // the first fit and 15 trials (16 lanes)
void LevelSums(const float* x, const float* w, const float* id, float* sum_qx, float* sum_q2) {
  for (int s = 0; s < kNumScales; ++s) sum_qx[s] = sum_q2[s] = 0;
  for (int j = 0; j < kSub; ++j) {
    for (int s = 0; s < kNumScales; ++s) {
      const float q = NearestLevelValue(id[s] * x[j]);
      sum_qx[s] += w[j] * q * x[j];
      sum_q2[s] += w[j] * q * q;
    }
  }
}

// The x^2-weighted least-squares scale d of one sub-block (0 when all |x| are below
// kQuantGroupMaxEps): first for the levels of id = 127 / max, then for each trial id =
// (t - 127) / max, t = -7..7, keeping the d that explains the most (sum_qx^2 / sum_q2).
float FitSubBlock(const float* x) {
  float w[kSub];
  float amax = 0, max = 0;
  for (int j = 0; j < kSub; ++j) {
    w[j] = x[j] * x[j];
    const float ax = std::fabs(x[j]);
    if (ax > amax) {
      amax = ax;
      max = x[j];
    }
  }
  if (amax < kQuantGroupMaxEps) return 0;
  float d = -max / kLevels[0];
  float id[kNumScales], sum_qx[kNumScales], sum_q2[kNumScales];
  id[0] = 1 / d;
  for (int t = -kNumTrials; t <= kNumTrials; ++t) {
    id[t + kNumTrials + 1] = static_cast<float>(t + kIq4NlValues[0]) / max;  // int sum, as llama.cpp
  }
  LevelSums(x, w, id, sum_qx, sum_q2);
  d = sum_q2[0] > 0 ? sum_qx[0] / sum_q2[0] : 0.f;
  float best = d * sum_qx[0];
  for (int s = 1; s < kNumScales; ++s) {
    if (sum_q2[s] > 0 && sum_qx[s] * sum_qx[s] > best * sum_q2[s]) {
      d = sum_qx[s] / sum_q2[s];
      best = d * sum_qx[s];
    }
  }
  return d;
}

// Codes of one sub-block for scale d (d == 0 codes every x as the level nearest 0),
// nibble-packed as Q4_0: element j in the low nibble of qs[j], element j + 16 in the high one.
void PackLevels(const float* x, float d, uint8_t* qs) {
  const float id = d != 0 ? 1 / d : 0.f;
  uint8_t codes[kSub];
  for (int j = 0; j < kSub; ++j) codes[j] = static_cast<uint8_t>(NearestLevel(id * x[j]));
  for (int j = 0; j < 16; ++j) qs[j] = static_cast<uint8_t>(codes[j] | (codes[j + 16] << 4));
}

void QuantizeBlockIq4Xs(const float* x, BlockIq4Xs* out) {
  float sub_d[8];
  float max_d = 0, amax_d = 0;
  for (int ib = 0; ib < 8; ++ib) {
    sub_d[ib] = FitSubBlock(x + kSub * ib);
    if (std::fabs(sub_d[ib]) > amax_d) {
      amax_d = std::fabs(sub_d[ib]);
      max_d = sub_d[ib];
    }
  }
  const float d = -max_d / 32;
  out->d = F32ToF16(d);
  out->scales_h = 0;
  const float id = d != 0 ? 1 / d : 0.f;
  for (int ib = 0; ib < 8; ++ib) {
    const int l = std::clamp(QuantNearestInt(id * sub_d[ib]), -32, 31);
    // Recoded with the float block scale times the 6-bit int, not the fp16-rounded d.
    PackLevels(x + kSub * ib, d * static_cast<float>(l), out->qs + 16 * ib);
    const int stored = l + 32;
    if (ib % 2 == 0) {
      out->scales_l[ib / 2] = static_cast<uint8_t>(stored & 0x0F);
    } else {
      out->scales_l[ib / 2] |= static_cast<uint8_t>((stored & 0x0F) << 4);
    }
    out->scales_h |= static_cast<uint16_t>((stored >> 4) << (2 * ib));
  }
}

}  // namespace

void QuantizeRowIq4Nl(const float* x, int64_t n, BlockIq4Nl* out) {
  PAGELLM_CHECK(n % kSub == 0);
  for (int64_t b = 0; b < n / kSub; ++b, x += kSub) {
    const float d = FitSubBlock(x);
    out[b].d = F32ToF16(d);
    PackLevels(x, d, out[b].qs);
  }
}

void QuantizeRowIq4Xs(const float* x, int64_t n, BlockIq4Xs* out) {
  PAGELLM_CHECK(n % kQkK == 0);
  for (int64_t b = 0; b < n / kQkK; ++b) QuantizeBlockIq4Xs(x + b * kQkK, out + b);
}

}  // namespace pagellm
