#include "backend/kquant_gemm.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "backend/int8_quant.h"
#include "tensor/half.h"
#include "tensor/kquant_blocks.h"

namespace pagellm {
namespace {

// Activations of one row, as QuantizeRowQ8_K leaves them.
struct RowActs {
  std::vector<int8_t> q;
  std::vector<float> d;
  std::vector<int32_t> bsum16;
};

inline int Code(const BlockQ4_K& b, int i) { return Q4_KCode(b, i); }
inline int Code(const BlockQ5_K& b, int i) { return Q5_KCode(b, i); }

// One output of row `a` and weight row `w` (k / 256 blocks) of Q4_K or Q5_K.
template <typename Block>
float DotQ4_K(const Block* w, const RowActs& a, int64_t nsb) {
  float acc = 0.0f;
  for (int64_t b = 0; b < nsb; ++b) {
    int32_t isum = 0, imin = 0;
    for (int j = 0; j < 8; ++j) {
      uint8_t sc, mn;
      GetScaleMinK4(j, w[b].scales, &sc, &mn);
      int32_t dot = 0;
      for (int i = 32 * j; i < 32 * j + 32; ++i) dot += Code(w[b], i) * a.q[static_cast<size_t>(b * 256 + i)];
      isum += sc * dot;
      imin += mn * (a.bsum16[static_cast<size_t>(b * 16 + 2 * j)] + a.bsum16[static_cast<size_t>(b * 16 + 2 * j + 1)]);
    }
    const float dx = a.d[static_cast<size_t>(b)];
    acc = std::fma(static_cast<float>(isum), F16ToF32(w[b].d) * dx, acc);
    acc = std::fma(-static_cast<float>(imin), F16ToF32(w[b].dmin) * dx, acc);
  }
  return acc;
}

float DotQ6_K(const BlockQ6_K* w, const RowActs& a, int64_t nsb) {
  float acc = 0.0f;
  for (int64_t b = 0; b < nsb; ++b) {
    int32_t isum = 0;
    for (int j = 0; j < 16; ++j) {
      int32_t dot = -32 * a.bsum16[static_cast<size_t>(b * 16 + j)];
      for (int i = 16 * j; i < 16 * j + 16; ++i) dot += Q6_KCode(w[b], i) * a.q[static_cast<size_t>(b * 256 + i)];
      isum += w[b].scales[j] * dot;
    }
    acc = std::fma(static_cast<float>(isum), F16ToF32(w[b].d) * a.d[static_cast<size_t>(b)], acc);
  }
  return acc;
}

float DotIq4Xs(const BlockIq4Xs* w, const RowActs& a, int64_t nsb) {
  float acc = 0.0f;
  for (int64_t b = 0; b < nsb; ++b) {
    int32_t isum = 0;
    for (int j = 0; j < 8; ++j) {
      int32_t dot = 0;
      for (int i = 32 * j; i < 32 * j + 32; ++i) {
        dot += kIq4NlValues[Iq4XsCode(w[b], i)] * a.q[static_cast<size_t>(b * 256 + i)];
      }
      isum += Iq4XsScale(w[b], j) * dot;
    }
    acc = std::fma(static_cast<float>(isum), F16ToF32(w[b].d) * a.d[static_cast<size_t>(b)], acc);
  }
  return acc;
}

// The centred value of element i of a 32-value block.
inline int Value(const BlockQ4_0& b, int i, DType dtype) {
  return dtype == DType::kIQ4_NL ? kIq4NlValues[Q4_0Code(b, i)] : Q4_0Code(b, i) - 8;
}
inline int Value(const BlockQ5_0& b, int i, DType) { return Q5_0Code(b, i) - 16; }
inline int Value(const BlockQ4_Z& b, int i, DType) { return Q4_ZCode(b, i) - b.z; }
// Q4_1 / Q5_1: the uncentred code; the offset m enters through the activations' block sum.
inline int Value(const BlockQ4_1& b, int i, DType) { return Q4_1Code(b, i); }
inline int Value(const BlockQ5_1& b, int i, DType) { return Q5_1Code(b, i); }

// Q4_0 / Q5_0 / IQ4_NL / Q4_Z / Q4_1 / Q5_1 rows x q8_0 activations: GemmQ8_0Reference's
// arithmetic, plus for the affine blocks (those with m) the min term as Q4_K's.
template <typename Block>
void Gemm32(DType dtype, const Block* w, int64_t n, int64_t k, const float* x, int64_t m, const float* bias,
            float* y) {
  const int64_t nb = k / 32;
  std::vector<BlockQ8_0> xq(static_cast<size_t>(nb));
  for (int64_t r = 0; r < m; ++r) {
    QuantizeRowQ8_0(x + r * k, k, xq.data());
    for (int64_t c = 0; c < n; ++c) {
      float acc = 0.0f;
      for (int64_t b = 0; b < nb; ++b) {
        const Block& wb = w[c * nb + b];
        const BlockQ8_0& xb = xq[static_cast<size_t>(b)];
        int32_t dot = 0;
        for (int i = 0; i < 32; ++i) dot += Value(wb, i, dtype) * int32_t{xb.qs[i]};
        acc = std::fma(static_cast<float>(dot), F16ToF32(wb.d) * F16ToF32(xb.d), acc);
        if constexpr (requires { wb.m; }) {
          int32_t sum = 0;
          for (int i = 0; i < 32; ++i) sum += xb.qs[i];
          acc = std::fma(static_cast<float>(sum), F16ToF32(wb.m) * F16ToF32(xb.d), acc);
        }
      }
      y[r * n + c] = acc + (bias != nullptr ? bias[c] : 0.0f);
    }
  }
}

}  // namespace

void QuantizeRowQ8_K(const float* x, int64_t k, int8_t* q, float* d, int32_t* bsum16) {
  PAGELLM_CHECK(k % kKQuantBlockElements == 0);
  for (int64_t b = 0; b < k / kKQuantBlockElements; ++b) {
    const float* xb = x + b * 256;
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 256; ++j) {
      const float ax = std::fabs(xb[j]);
      if (ax > amax) {
        amax = ax;
        max = xb[j];
      }
    }
    int8_t* qb = q + b * 256;
    if (amax == 0.0f) {
      d[b] = 0.0f;
      std::memset(qb, 0, 256);
      for (int j = 0; j < 16; ++j) bsum16[b * 16 + j] = 0;
      continue;
    }
    const float iscale = -127.0f / max;
    for (int j = 0; j < 256; ++j) {
      // Round half to even; for a normal max |iscale * x| <= 127. The clamps only define what
      // a max so tiny that iscale overflows gives (llama.cpp's int conversion is undefined there).
      const float r = std::nearbyint(iscale * xb[j]);
      qb[j] = static_cast<int8_t>(r >= 127.0f ? 127 : r <= -128.0f ? -128 : r == r ? static_cast<int>(r) : 0);
    }
    for (int j = 0; j < 16; ++j) {
      int32_t s = 0;
      for (int i = 0; i < 16; ++i) s += qb[16 * j + i];
      bsum16[b * 16 + j] = s;
    }
    d[b] = 1.0f / iscale;
  }
}

void GemmKQuantReference(DType dtype, const void* w, int64_t n, int64_t k, const float* x, int64_t m,
                         const float* bias, float* y) {
  PAGELLM_CHECK(IsPackedQuant(dtype) && k % DTypeBlockSize(dtype) == 0);
  if (dtype == DType::kQ4_0 || dtype == DType::kIQ4_NL) {
    return Gemm32(dtype, static_cast<const BlockQ4_0*>(w), n, k, x, m, bias, y);
  }
  if (dtype == DType::kQ5_0) return Gemm32(dtype, static_cast<const BlockQ5_0*>(w), n, k, x, m, bias, y);
  if (dtype == DType::kQ4_1) return Gemm32(dtype, static_cast<const BlockQ4_1*>(w), n, k, x, m, bias, y);
  if (dtype == DType::kQ5_1) return Gemm32(dtype, static_cast<const BlockQ5_1*>(w), n, k, x, m, bias, y);
  if (dtype == DType::kQ4_Z) return Gemm32(dtype, static_cast<const BlockQ4_Z*>(w), n, k, x, m, bias, y);
  const int64_t nsb = k / kKQuantBlockElements;
  RowActs a{std::vector<int8_t>(static_cast<size_t>(k)), std::vector<float>(static_cast<size_t>(nsb)),
            std::vector<int32_t>(static_cast<size_t>(k / 16))};
  for (int64_t r = 0; r < m; ++r) {
    QuantizeRowQ8_K(x + r * k, k, a.q.data(), a.d.data(), a.bsum16.data());
    for (int64_t c = 0; c < n; ++c) {
      const float acc = dtype == DType::kQ4_K   ? DotQ4_K(static_cast<const BlockQ4_K*>(w) + c * nsb, a, nsb)
                        : dtype == DType::kQ5_K ? DotQ4_K(static_cast<const BlockQ5_K*>(w) + c * nsb, a, nsb)
                        : dtype == DType::kIQ4_XS ? DotIq4Xs(static_cast<const BlockIq4Xs*>(w) + c * nsb, a, nsb)
                                                : DotQ6_K(static_cast<const BlockQ6_K*>(w) + c * nsb, a, nsb);
      y[r * n + c] = acc + (bias != nullptr ? bias[c] : 0.0f);
    }
  }
}

}  // namespace pagellm
