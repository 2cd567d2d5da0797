// Compiled with -ffp-contract=off (see gguf_quantize_math.h for why).
#include "gguf/gguf_quantize_blocks32.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "common/status.h"
#include "tensor/half.h"

namespace pagellm {
namespace {

constexpr int kBlock = 32;

// C's (int8_t)f as llama.cpp's code writes it: truncation toward zero, keeping the low byte.
int TruncToInt8(float f) { return static_cast<int8_t>(static_cast<int32_t>(f)); }

// The symmetric 32-value fit shared by Q4_0 and Q5_0: the signed value of largest magnitude
// (the first one on ties) gets code 0, d = max / -half_levels; codes[j] =
// min(max_code, trunc(x * (1/d) + half_levels + 0.5)). Returns d (float, before fp16 rounding).
float FitSymmetric(const float* x, int half_levels, int max_code, uint8_t* codes) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < kBlock; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  const float d = max / static_cast<float>(-half_levels);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  const float offset = static_cast<float>(half_levels) + 0.5f;
  for (int j = 0; j < kBlock; ++j) {
    codes[j] = static_cast<uint8_t>(std::min(max_code, TruncToInt8(x[j] * id + offset)));
  }
  return d;
}

// Codes 0..15 as the low nibbles of block.qs, codes 16..31 as the high ones; for the 5-bit
// blocks (those with qh) bit 4 of code j also goes to bit j of qh (little-endian u32).
template <typename Block>
void PackCodes(const uint8_t* codes, Block& block) {
  for (int j = 0; j < kBlock / 2; ++j) {
    block.qs[j] = static_cast<uint8_t>((codes[j] & 0x0F) | ((codes[j + 16] & 0x0F) << 4));
  }
  if constexpr (requires { block.qh; }) {
    uint32_t qh = 0;
    for (int j = 0; j < kBlock; ++j) qh |= static_cast<uint32_t>((codes[j] >> 4) & 1) << j;
    std::memcpy(block.qh, &qh, sizeof(qh));
  }
}

// Q4_0 (half_levels 8) and Q5_0 (16).
template <typename Block>
void QuantizeSymmetricRow(const float* x, int64_t n, int half_levels, Block* out) {
  PAGELLM_CHECK(n % kBlock == 0);
  for (int64_t b = 0; b < n / kBlock; ++b, x += kBlock) {
    uint8_t codes[kBlock];
    out[b].d = F32ToF16(FitSymmetric(x, half_levels, 2 * half_levels - 1, codes));
    PackCodes(codes, out[b]);
  }
}

// Q4_1 (max_code 15) and Q5_1 (31): d = (max - min) / max_code, m = min. (x - min) * id lies
// in [0, max_code] up to rounding; llama.cpp clamps Q4_1's truncated code with MIN(15, (int8_t)v)
// and takes Q5_1's as (int)v, and so do we.
template <typename Block>
void QuantizeAffineRow(const float* x, int64_t n, int max_code, Block* out) {
  PAGELLM_CHECK(n % kBlock == 0);
  for (int64_t b = 0; b < n / kBlock; ++b, x += kBlock) {
    float min = FLT_MAX, max = -FLT_MAX;
    for (int j = 0; j < kBlock; ++j) {
      if (x[j] < min) min = x[j];
      if (x[j] > max) max = x[j];
    }
    const float d = (max - min) / static_cast<float>(max_code);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    out[b].d = F32ToF16(d);
    out[b].m = F32ToF16(min);
    uint8_t codes[kBlock];
    for (int j = 0; j < kBlock; ++j) {
      const float v = (x[j] - min) * id + 0.5f;
      if constexpr (requires { out[b].qh; }) {
        codes[j] = static_cast<uint8_t>(static_cast<int32_t>(v));
      } else {
        codes[j] = static_cast<uint8_t>(std::min(max_code, TruncToInt8(v)));
      }
    }
    PackCodes(codes, out[b]);
  }
}

}  // namespace

void QuantizeRowQ4_0(const float* x, int64_t n, BlockQ4_0* out) { QuantizeSymmetricRow(x, n, 8, out); }

void QuantizeRowQ5_0(const float* x, int64_t n, BlockQ5_0* out) { QuantizeSymmetricRow(x, n, 16, out); }

void QuantizeRowQ4_1(const float* x, int64_t n, BlockQ4_1* out) { QuantizeAffineRow(x, n, 15, out); }

void QuantizeRowQ5_1(const float* x, int64_t n, BlockQ5_1* out) { QuantizeAffineRow(x, n, 31, out); }

}  // namespace pagellm
