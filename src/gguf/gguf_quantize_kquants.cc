// Compiled with -ffp-contract=off (see gguf_quantize_math.h for why). Every float expression
// keeps llama.cpp's evaluation order: sums accumulate left to right in float, products such
// as w * l * l group as (w * l) * l, and divisions stay divisions.
#include "gguf/gguf_quantize_kquants.h"

#include <algorithm>
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

void AffineCodes(const float* x, float iscale, float min, int max_code, uint8_t* codes) {
  for (int i = 0; i < kSub; ++i) {
    codes[i] = static_cast<uint8_t>(std::clamp(QuantNearestInt(iscale * (x[i] - min)), 0, max_code));
  }
}

// sum_i w_i * (scale * code_i + min - x_i)^2
float AffineError(const float* x, const float* w, const uint8_t* codes, float scale, float min) {
  float error = 0.0f;
  for (int i = 0; i < kSub; ++i) {
    float diff = scale * static_cast<float>(codes[i]) + min - x[i];
    diff = diff * diff;
    error += w[i] * diff;
  }
  return error;
}

// x ~ scale * code + min with min <= 0 (llama.cpp's make_qkx2_quants, squared error): start
// from the min/max grid, then for each trial grid solve the weighted least-squares scale and
// min of its codes and keep the best. Returns scale; *neg_min = -min.
float FitAffine(const float* x, const float* w, const AffineGrid& grid, uint8_t* codes, float* neg_min) {
  float min = x[0], max = x[0];
  float sum_w = w[0], sum_x = sum_w * x[0];
  for (int i = 1; i < kSub; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    std::memset(codes, 0, kSub);
    *neg_min = -min;
    return 0.0f;
  }
  float iscale = static_cast<float>(grid.max_code) / (max - min);
  float scale = 1 / iscale;
  AffineCodes(x, iscale, min, grid.max_code, codes);
  float best_error = AffineError(x, w, codes, scale, min);
  uint8_t trial[kSub];
  for (int step = 0; step <= grid.num_steps; ++step) {
    iscale = (grid.rmin + grid.rdelta * static_cast<float>(step) + static_cast<float>(grid.max_code)) / (max - min);
    AffineCodes(x, iscale, min, grid.max_code, trial);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < kSub; ++i) {
      const float l = trial[i];
      sum_l += w[i] * l;
      sum_l2 += w[i] * l * l;
      sum_xl += w[i] * l * x[i];
    }
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (!(det > 0)) continue;
    float trial_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
    float trial_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
    if (trial_min > 0) {
      trial_min = 0;
      trial_scale = sum_xl / sum_l2;
    }
    const float error = AffineError(x, w, trial, trial_scale, trial_min);
    if (error < best_error) {
      std::memcpy(codes, trial, kSub);
      best_error = error;
      scale = trial_scale;
      min = trial_min;
    }
  }
  *neg_min = -min;
  return scale;
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
  float sub_scale[8], sub_min[8], w[kSub];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    const float* xs = x + kSub * j;
    float sum_x2 = 0;
    for (int l = 0; l < kSub; ++l) sum_x2 += xs[l] * xs[l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < kSub; ++l) w[l] = av_x + std::fabs(xs[l]);
    sub_scale[j] = FitAffine(xs, w, grid, codes + kSub * j, &sub_min[j]);
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

// sum x^2 * x * l and sum x^2 * l * l over the sub-block for the codes l of `iscale`.
void SymmetricSums(const float* x, float iscale, float* sum_lx, float* sum_l2) {
  *sum_lx = 0;
  *sum_l2 = 0;
  for (int i = 0; i < kSub6; ++i) {
    const float l = static_cast<float>(std::clamp(QuantNearestInt(iscale * x[i]), -kQ6Half, kQ6Half - 1));
    const float w = x[i] * x[i];
    *sum_lx += w * x[i] * l;
    *sum_l2 += w * l * l;
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
  float iscale = static_cast<float>(-kQ6Half) / max;
  SymmetricCodes(x, iscale, codes);
  float sum_lx, sum_l2;
  SymmetricSums(x, iscale, &sum_lx, &sum_l2);
  float scale = sum_l2 != 0 ? sum_lx / sum_l2 : 0.0f;
  float best = scale * sum_lx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(static_cast<float>(kQ6Half) + 0.1f * static_cast<float>(is)) / max;
    SymmetricSums(x, iscale, &sum_lx, &sum_l2);
    if (sum_l2 > 0 && sum_lx * sum_lx > best * sum_l2) {
      SymmetricCodes(x, iscale, codes);
      scale = sum_lx / sum_l2;
      best = scale * sum_lx;
    }
  }
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
