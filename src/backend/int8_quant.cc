#include "backend/int8_quant.h"

#include <cmath>

#include "common/status.h"
#include "tensor/half.h"

namespace pagellm {
namespace {

// amax over x[0, k), the multiplier 127 / amax (0 when amax == 0), and the rounding.
// std::nearbyint rounds half to even in the default FP environment, like
// _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT); v * id is one fp32 rounding in both.
float AbsMax(const float* x, int64_t k) {
  float amax = 0.0f;
  for (int64_t i = 0; i < k; ++i) amax = std::fmax(amax, std::fabs(x[i]));
  return amax;
}

inline int8_t RoundToInt8(float v) { return static_cast<int8_t>(static_cast<int>(std::nearbyint(v))); }

}  // namespace

void QuantizeRowQ8_0(const float* x, int64_t k, BlockQ8_0* out) {
  PAGELLM_CHECK(k % kQ8_0BlockElements == 0);
  for (int64_t b = 0; b < k / kQ8_0BlockElements; ++b) {
    const float* xb = x + b * kQ8_0BlockElements;
    const float amax = AbsMax(xb, kQ8_0BlockElements);
    out[b].d = F32ToF16(amax / 127.0f);
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    for (int64_t i = 0; i < kQ8_0BlockElements; ++i) out[b].qs[i] = RoundToInt8(xb[i] * id);
  }
}

void DequantizeRowQ8_0(const BlockQ8_0* in, int64_t k, float* out) {
  PAGELLM_CHECK(k % kQ8_0BlockElements == 0);
  for (int64_t b = 0; b < k / kQ8_0BlockElements; ++b) {
    const float d = F16ToF32(in[b].d);
    for (int64_t i = 0; i < kQ8_0BlockElements; ++i) out[b * kQ8_0BlockElements + i] = d * in[b].qs[i];
  }
}

float QuantizeRowInt8(const float* x, int64_t k, int8_t* q) {
  const float amax = AbsMax(x, k);
  const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
  for (int64_t i = 0; i < k; ++i) q[i] = RoundToInt8(x[i] * id);
  return amax / 127.0f;
}

}  // namespace pagellm
