// Compiled with -ffp-contract=off (see gguf_quantize_math.h for why). Every float expression
// keeps llama.cpp's evaluation order: sums accumulate left to right in float, products such
// as w * l * l group as (w * l) * l, and divisions stay divisions.
#include "gguf/gguf_quantize_kquants.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "common/status.h"
#include "gguf/gguf_quantize_math.h"
#include "gguf/gguf_types.h"
#include "tensor/half.h"

namespace pagellm {
namespace {

constexpr int kSub = 32;  // Q4_K / Q5_K sub-block

// The trial grids of make_qkx2_quants: codes 0..max_code, iscale = (rmin + rdelta * step +
// max_code) / (max - min) for step 0..num_steps.
struct AffineGrid {
  int max_code;
  float rmin;
  float rdelta;
  int num_steps;
};
constexpr AffineGrid kQ4_KGrid{15, -1.0f, 0.1f, 20};
constexpr AffineGrid kQ5_KGrid{31, -0.5f, 0.1f, 15};

// make_qkx2_quants for the 8 sub-blocks of a block side by side: lane j of every F8 / I8 value
// is sub-block j, and each lane runs llama.cpp's loop for one sub-block with the same operations
// in the same order (sums left to right over i, each trial's grid from the lane's current min),
// so its results are those of the scalar loop bit for bit. The trials of one sub-block depend on
// each other (a better trial moves min, which the next trial's grid uses), but the sub-blocks do
// not, so they share SIMD registers; the scalar loop (21 trials of three sequential sums and an
// error sum over 32 values) made Q4_K / Q5_K the slowest types to convert.
// F8 / I8: GCC / Clang vector extensions, element-wise IEEE operations (no contraction here).
typedef float F8 __attribute__((vector_size(32)));
typedef int32_t I8 __attribute__((vector_size(32)));
constexpr int kLanes = 8;

// QuantNearestInt of each lane.
inline I8 NearestInt8(F8 v) {
  const F8 biased = v + 12582912.0f;
  I8 bits;
  std::memcpy(&bits, &biased, sizeof(bits));
  return (bits & 0x007fffff) - 0x00400000;
}

// Each lane's codes for its iscale and min: std::clamp(QuantNearestInt(iscale * (x - min)), 0, max_code).
inline void AffineCodes8(const F8* xt, F8 iscale, F8 min, int max_code, I8* codes) {
  const I8 lo = I8{} + 0, hi = I8{} + max_code;
  for (int i = 0; i < kSub; ++i) {
    const I8 q = NearestInt8(iscale * (xt[i] - min));
    codes[i] = q < lo ? lo : (hi < q ? hi : q);
  }
}

// Per lane: sum_i w_i * (scale * code_i + min - x_i)^2
inline F8 AffineError8(const F8* xt, const F8* wt, const I8* codes, F8 scale, F8 min) {
  F8 error = {};
  for (int i = 0; i < kSub; ++i) {
    F8 diff = scale * __builtin_convertvector(codes[i], F8) + min - xt[i];
    diff = diff * diff;
    error += wt[i] * diff;
  }
  return error;
}

// x ~ scale * code + min with min <= 0 (llama.cpp's make_qkx2_quants, squared error) for each
// sub-block j of x[256] with weights w[256]: start from the min/max grid, then for each trial
// grid solve the weighted least-squares scale and min of its codes and keep the best.
// scale[j], neg_min[j] = -min; codes[256] in element order.
void FitAffine8(const float* x, const float* w, const AffineGrid& grid, uint8_t* codes, float* scale_out,
                float* neg_min_out) {
  F8 xt[kSub], wt[kSub];  // element i of every sub-block
  for (int i = 0; i < kSub; ++i) {
    for (int j = 0; j < kLanes; ++j) {
      xt[i][j] = x[kSub * j + i];
      wt[i][j] = w[kSub * j + i];
    }
  }
  const F8 zero = {};
  F8 min = xt[0], max = xt[0], sum_w = wt[0], sum_x = sum_w * xt[0];
  for (int i = 1; i < kSub; ++i) {
    min = xt[i] < min ? xt[i] : min;
    max = xt[i] > max ? xt[i] : max;
    sum_w += wt[i];
    sum_x += wt[i] * xt[i];
  }
  min = min > zero ? zero : min;
  const I8 flat = max == min;  // all codes 0, scale 0 (llama.cpp returns early)
  F8 iscale = static_cast<float>(grid.max_code) / (max - min);
  F8 scale = 1 / iscale;
  I8 best_codes[kSub], trial[kSub];
  AffineCodes8(xt, iscale, min, grid.max_code, best_codes);
  F8 best_error = AffineError8(xt, wt, best_codes, scale, min);
  for (int step = 0; step <= grid.num_steps; ++step) {
    iscale = (grid.rmin + grid.rdelta * static_cast<float>(step) + static_cast<float>(grid.max_code)) / (max - min);
    AffineCodes8(xt, iscale, min, grid.max_code, trial);
    F8 sum_l = {}, sum_l2 = {}, sum_xl = {};
    for (int i = 0; i < kSub; ++i) {
      const F8 l = __builtin_convertvector(trial[i], F8);
      sum_l += wt[i] * l;
      sum_l2 += wt[i] * l * l;
      sum_xl += wt[i] * l * xt[i];
    }
    const F8 det = sum_w * sum_l2 - sum_l * sum_l;
    F8 trial_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
    F8 trial_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
    const I8 positive_min = trial_min > zero;
    trial_scale = positive_min ? sum_xl / sum_l2 : trial_scale;
    trial_min = positive_min ? zero : trial_min;
    const F8 error = AffineError8(xt, wt, trial, trial_scale, trial_min);
    // llama.cpp skips a trial unless det > 0; a flat lane keeps its min.
    const I8 better = ~flat & (det > zero) & (error < best_error);
    best_error = better ? error : best_error;
    scale = better ? trial_scale : scale;
    min = better ? trial_min : min;
    for (int i = 0; i < kSub; ++i) best_codes[i] = better ? trial[i] : best_codes[i];
  }
  for (int j = 0; j < kLanes; ++j) {
    scale_out[j] = flat[j] ? 0.0f : scale[j];
    neg_min_out[j] = -min[j];
    for (int i = 0; i < kSub; ++i) codes[kSub * j + i] = flat[j] ? 0 : static_cast<uint8_t>(best_codes[i][j]);
  }
}

// The 12 scale bytes of Q4_K / Q5_K from 8 6-bit (scale, min) pairs (GetScaleMinK4's inverse).
void PackScaleMinK4(const uint8_t* ls, const uint8_t* lm, uint8_t* scales) {
  for (int j = 0; j < 4; ++j) {
    scales[j] = static_cast<uint8_t>(ls[j] | ((ls[j + 4] >> 4) << 6));
    scales[j + 4] = static_cast<uint8_t>(lm[j] | ((lm[j + 4] >> 4) << 6));
    scales[j + 8] = static_cast<uint8_t>((ls[j + 4] & 0x0F) | ((lm[j + 4] & 0x0F) << 4));
  }
}

// One 256-value Q4_K / Q5_K block up to the codes: fits the 8 sub-blocks, codes their scales
// and mins in 6 bits against the largest (d = max_scale / 63, dmin = max_min / 63 in fp16),
// then re-derives each code from the coded scale and min; a sub-block whose coded scale is 0
// keeps its fitted codes. codes[256] in element order.
void FitScaleMinBlock(const float* x, const AffineGrid& grid, uint16_t* d, uint16_t* dmin, uint8_t* scales,
                      uint8_t* codes) {
  float sub_scale[8], sub_min[8], w[kQkK];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    const float* xs = x + kSub * j;
    float sum_x2 = 0;
    for (int l = 0; l < kSub; ++l) sum_x2 += xs[l] * xs[l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < kSub; ++l) w[kSub * j + l] = av_x + std::fabs(xs[l]);
  }
  FitAffine8(x, w, grid, codes, sub_scale, sub_min);
  for (int j = 0; j < 8; ++j) {
    if (sub_scale[j] > max_scale) max_scale = sub_scale[j];
    if (sub_min[j] > max_min) max_min = sub_min[j];
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  uint8_t ls[8], lm[8];
  for (int j = 0; j < 8; ++j) {
    // As llama.cpp: the int goes through uint8_t before the clamp (a negative scale wraps).
    ls[j] = std::min<uint8_t>(63, static_cast<uint8_t>(QuantNearestInt(inv_scale * sub_scale[j])));
    lm[j] = std::min<uint8_t>(63, static_cast<uint8_t>(QuantNearestInt(inv_min * sub_min[j])));
  }
  PackScaleMinK4(ls, lm, scales);
  *d = F32ToF16(max_scale / 63.f);
  *dmin = F32ToF16(max_min / 63.f);
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    GetScaleMinK4(j, scales, &sc, &m);
    const float dj = F16ToF32(*d) * static_cast<float>(sc);
    if (dj == 0) continue;
    const float mj = F16ToF32(*dmin) * static_cast<float>(m);
    for (int i = 0; i < kSub; ++i) {
      codes[kSub * j + i] = static_cast<uint8_t>(std::clamp(QuantNearestInt((x[kSub * j + i] + mj) / dj), 0, grid.max_code));
    }
  }
}

// ---- Q6_K ----

constexpr int kSub6 = 16;
constexpr int kQ6Half = 32;  // codes -32..31, stored + 32

void SymmetricCodes(const float* x, float iscale, int8_t* codes) {
  for (int i = 0; i < kSub6; ++i) {
    codes[i] = static_cast<int8_t>(std::clamp(QuantNearestInt(iscale * x[i]), -kQ6Half, kQ6Half - 1) + kQ6Half);
  }
}

// The first fit and the 18 trials of FitSymmetric16 in the lanes of three F8: lane 0 is the
// first fit's iscale numerator -32, lane s = 1..18 trial is = s - 10 (s <= 9) or s - 9, whose
// numerator is -(32 + 0.1 is) (the same float expression, evaluated at compile time); the last
// 5 lanes are unused.
constexpr int kQ6Trials = 19;
constexpr int kQ6Vectors = 3;
constexpr std::array<float, kQ6Vectors * 8> kQ6Numerators = [] {
  std::array<float, kQ6Vectors * 8> n{};
  n.fill(static_cast<float>(-kQ6Half));
  for (int s = 1; s < kQ6Trials; ++s) {
    const int is = s <= 9 ? s - 10 : s - 9;
    n[static_cast<size_t>(s)] = -(static_cast<float>(kQ6Half) + 0.1f * static_cast<float>(is));
  }
  return n;
}();

// For each lane s: sum x^2 * x * l and sum x^2 * l * l over the sub-block for the codes l of
// iscale[s], each summed over i in order as llama.cpp's loop for one iscale; the trials side by
// side in SIMD registers where the scalar loop ran them one after another.
void SymmetricSums(const float* x, const F8* iscale, F8* sum_lx, F8* sum_l2) {
  const I8 lo = I8{} - kQ6Half, hi = I8{} + (kQ6Half - 1);
  for (int k = 0; k < kQ6Vectors; ++k) sum_lx[k] = sum_l2[k] = F8{};
  for (int i = 0; i < kSub6; ++i) {
    const float w = x[i] * x[i];
    for (int k = 0; k < kQ6Vectors; ++k) {
      I8 q = NearestInt8(iscale[k] * x[i]);
      q = q < lo ? lo : (hi < q ? hi : q);
      const F8 l = __builtin_convertvector(q, F8);
      sum_lx[k] += w * x[i] * l;
      sum_l2[k] += w * l * l;
    }
  }
}

// x ~ scale * (code - 32), weighted by x^2 (llama.cpp's make_qx_quants, rmse_type 1): the
// value of largest magnitude sets iscale = -32 / max, then 18 more trials at -(32 + 0.1 is) /
// max keep the best least-squares scale. Returns scale (0 for an all-zero sub-block).
float FitSymmetric16(const float* x, int8_t* codes) {
  float max = 0, amax = 0;
  for (int i = 0; i < kSub6; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < kQuantGroupMaxEps) {
    std::memset(codes, 0, kSub6);
    return 0.f;
  }
  // The trials do not depend on one another (only the choice among them is sequential).
  F8 iscale[kQ6Vectors], sum_lx[kQ6Vectors], sum_l2[kQ6Vectors];
  for (int k = 0; k < kQ6Vectors; ++k) {
    F8 numerator;
    std::memcpy(&numerator, kQ6Numerators.data() + kLanes * k, sizeof(numerator));
    iscale[k] = numerator / max;
  }
  SymmetricSums(x, iscale, sum_lx, sum_l2);
  float scale = sum_l2[0][0] != 0 ? sum_lx[0][0] / sum_l2[0][0] : 0.0f;
  float best = scale * sum_lx[0][0];
  int chosen = 0;
  for (int s = 1; s < kQ6Trials; ++s) {
    const float lx = sum_lx[s / kLanes][s % kLanes], l2 = sum_l2[s / kLanes][s % kLanes];
    if (l2 > 0 && lx * lx > best * l2) {
      chosen = s;
      scale = lx / l2;
      best = scale * lx;
    }
  }
  SymmetricCodes(x, iscale[chosen / kLanes][chosen % kLanes], codes);
  return scale;
}

void QuantizeBlockQ6_K(const float* x, BlockQ6_K* out) {
  int8_t codes[kQkK];
  float sub_scale[16];
  float max_scale = 0, max_abs_scale = 0;
  for (int ib = 0; ib < 16; ++ib) {
    sub_scale[ib] = FitSymmetric16(x + kSub6 * ib, codes + kSub6 * ib);
    const float abs_scale = std::fabs(sub_scale[ib]);
    if (abs_scale > max_abs_scale) {
      max_abs_scale = abs_scale;
      max_scale = sub_scale[ib];
    }
  }
  if (max_abs_scale < kQuantGroupMaxEps) {
    std::memset(out, 0, sizeof(*out));
    return;
  }
  const float iscale = -128.f / max_scale;
  out->d = F32ToF16(1 / iscale);
  for (int ib = 0; ib < 16; ++ib) {
    out->scales[ib] = static_cast<int8_t>(std::min(127, QuantNearestInt(iscale * sub_scale[ib])));
  }
  for (int j = 0; j < 16; ++j) {
    const float dj = F16ToF32(out->d) * static_cast<float>(out->scales[j]);
    if (dj == 0) continue;  // keeps the sub-block's fitted codes
    for (int i = 0; i < kSub6; ++i) {
      codes[kSub6 * j + i] = static_cast<int8_t>(
          std::clamp(QuantNearestInt(x[kSub6 * j + i] / dj), -kQ6Half, kQ6Half - 1) + kQ6Half);
    }
  }
  // Each half of 128: element 32k + l keeps its low 4 bits in ql[l + 32 (k & 1)] (high nibble
  // for k >= 2) and its top 2 bits in bits 2k..2k+1 of qh[l] (kquant_blocks.h's Q6_KCode).
  for (int half = 0; half < 2; ++half) {
    const int8_t* c = codes + 128 * half;
    uint8_t* ql = out->ql + 64 * half;
    uint8_t* qh = out->qh + 32 * half;
    for (int l = 0; l < 32; ++l) {
      ql[l] = static_cast<uint8_t>((c[l] & 0x0F) | ((c[l + 64] & 0x0F) << 4));
      ql[l + 32] = static_cast<uint8_t>((c[l + 32] & 0x0F) | ((c[l + 96] & 0x0F) << 4));
      qh[l] = static_cast<uint8_t>((c[l] >> 4) | ((c[l + 32] >> 4) << 2) | ((c[l + 64] >> 4) << 4) |
                                   ((c[l + 96] >> 4) << 6));
    }
  }
}

}  // namespace

void QuantizeRowQ4_K(const float* x, int64_t n, BlockQ4_K* out) {
  PAGELLM_CHECK(n % kQkK == 0);
  for (int64_t b = 0; b < n / kQkK; ++b, x += kQkK) {
    uint8_t codes[kQkK];
    FitScaleMinBlock(x, kQ4_KGrid, &out[b].d, &out[b].dmin, out[b].scales, codes);
    // Chunk c of 32 bytes: elements 64c + l (low nibble) and 64c + 32 + l (high nibble).
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l) {
        out[b].qs[32 * c + l] = static_cast<uint8_t>(codes[64 * c + l] | (codes[64 * c + 32 + l] << 4));
      }
    }
  }
}

void QuantizeRowQ5_K(const float* x, int64_t n, BlockQ5_K* out) {
  PAGELLM_CHECK(n % kQkK == 0);
  for (int64_t b = 0; b < n / kQkK; ++b, x += kQkK) {
    uint8_t codes[kQkK];
    FitScaleMinBlock(x, kQ5_KGrid, &out[b].d, &out[b].dmin, out[b].scales, codes);
    // Q4_K's nibbles of the low 4 bits; bit 4 of element 64c + l goes to bit 2c of qh[l],
    // of element 64c + 32 + l to bit 2c + 1.
    std::memset(out[b].qh, 0, sizeof(out[b].qh));
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l) {
        const uint8_t lo = codes[64 * c + l], hi = codes[64 * c + 32 + l];
        out[b].qs[32 * c + l] = static_cast<uint8_t>((lo & 0x0F) | ((hi & 0x0F) << 4));
        out[b].qh[l] |= static_cast<uint8_t>(((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
      }
    }
  }
}

void QuantizeRowQ6_K(const float* x, int64_t n, BlockQ6_K* out) {
  PAGELLM_CHECK(n % kQkK == 0);
  for (int64_t b = 0; b < n / kQkK; ++b) QuantizeBlockQ6_K(x + b * kQkK, out + b);
}

}  // namespace pagellm
