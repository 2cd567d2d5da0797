#include "tensor/kquant_blocks.h"

#include <cstring>

#include "tensor/half.h"

namespace pagellm {

void GetScaleMinK4(int j, const uint8_t* q, uint8_t* scale, uint8_t* min) {
  // Pairs 0..3: low 6 bits of bytes j (scale) and j+4 (min). Pairs 4..7: low/high nibble of
  // byte j+4 plus the top 2 bits of bytes j-4 (scale) and j (min) as bits 4..5.
  if (j < 4) {
    *scale = q[j] & 63;
    *min = q[j + 4] & 63;
  } else {
    *scale = static_cast<uint8_t>((q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4));
    *min = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

// 256 values in 4 groups of 64; each group uses 32 qs bytes (low nibbles = first 32 values,
// high nibbles = next 32) and two of the 8 (scale, min) pairs.
void DequantizeRowQ4_K(const BlockQ4_K* in, int64_t k, float* y) {
  PAGELLM_CHECK(k % kKQuantBlockElements == 0);
  for (int64_t b = 0; b < k / kKQuantBlockElements; ++b) {
    const float d = F16ToF32(in[b].d), dmin = F16ToF32(in[b].dmin);
    const uint8_t* qs = in[b].qs;
    for (int group = 0; group < 4; ++group) {
      uint8_t sc_lo, m_lo, sc_hi, m_hi;
      GetScaleMinK4(2 * group, in[b].scales, &sc_lo, &m_lo);
      GetScaleMinK4(2 * group + 1, in[b].scales, &sc_hi, &m_hi);
      const float d_lo = d * sc_lo, min_lo = dmin * m_lo;
      const float d_hi = d * sc_hi, min_hi = dmin * m_hi;
      for (int l = 0; l < 32; ++l) y[l] = d_lo * static_cast<float>(qs[l] & 0x0F) - min_lo;
      for (int l = 0; l < 32; ++l) y[32 + l] = d_hi * static_cast<float>(qs[l] >> 4) - min_hi;
      qs += 32;
      y += 64;
    }
  }
}

// As Q4_K with 5-bit codes (llama.cpp: d1 * (low + 16 * bit) - m1).
void DequantizeRowQ5_K(const BlockQ5_K* in, int64_t k, float* y) {
  PAGELLM_CHECK(k % kKQuantBlockElements == 0);
  for (int64_t b = 0; b < k / kKQuantBlockElements; ++b) {
    const float d = F16ToF32(in[b].d), dmin = F16ToF32(in[b].dmin);
    for (int sub = 0; sub < 8; ++sub) {
      uint8_t sc, mn;
      GetScaleMinK4(sub, in[b].scales, &sc, &mn);
      const float d1 = d * sc, m1 = dmin * mn;
      for (int l = 0; l < 32; ++l) y[32 * sub + l] = d1 * static_cast<float>(Q5_KCode(in[b], 32 * sub + l)) - m1;
    }
    y += 256;
  }
}

// llama.cpp computes d * sc first, then times (q - 32), in float.
void DequantizeRowQ6_K(const BlockQ6_K* in, int64_t k, float* y) {
  PAGELLM_CHECK(k % kKQuantBlockElements == 0);
  for (int64_t b = 0; b < k / kKQuantBlockElements; ++b) {
    const float d = F16ToF32(in[b].d);
    for (int i = 0; i < 256; ++i) {
      const int code = Q6_KCode(in[b], i);
      y[i] = d * static_cast<float>(in[b].scales[i / 16]) * static_cast<float>(code - 32);
    }
    y += 256;
  }
}

// llama.cpp: x0 * d with x0 the centred integer code.
void DequantizeRowQ4_0(const BlockQ4_0* in, int64_t k, float* y) {
  PAGELLM_CHECK(k % 32 == 0);
  for (int64_t b = 0; b < k / 32; ++b) {
    const float d = F16ToF32(in[b].d);
    for (int i = 0; i < 32; ++i) y[32 * b + i] = static_cast<float>(Q4_0Code(in[b], i) - 8) * d;
  }
}

void DequantizeRowQ5_0(const BlockQ5_0* in, int64_t k, float* y) {
  PAGELLM_CHECK(k % 32 == 0);
  for (int64_t b = 0; b < k / 32; ++b) {
    const float d = F16ToF32(in[b].d);
    for (int i = 0; i < 32; ++i) y[32 * b + i] = static_cast<float>(Q5_0Code(in[b], i) - 16) * d;
  }
}

// llama.cpp: code * d + m. d is an fp16 value and code < 32, so the product is exact and
// FMA contraction cannot change the result.
template <typename Block, int (*Code)(const Block&, int)>
void DequantizeRowAffine32(const Block* in, int64_t k, float* y) {
  PAGELLM_CHECK(k % 32 == 0);
  for (int64_t b = 0; b < k / 32; ++b) {
    const float d = F16ToF32(in[b].d), m = F16ToF32(in[b].m);
    for (int i = 0; i < 32; ++i) y[32 * b + i] = static_cast<float>(Code(in[b], i)) * d + m;
  }
}

void DequantizeRowQ4_1(const BlockQ4_1* in, int64_t k, float* y) { DequantizeRowAffine32<BlockQ4_1, Q4_1Code>(in, k, y); }
void DequantizeRowQ5_1(const BlockQ5_1* in, int64_t k, float* y) { DequantizeRowAffine32<BlockQ5_1, Q5_1Code>(in, k, y); }

// llama.cpp: d * kvalues_iq4nl[code].
void DequantizeRowIq4Nl(const BlockIq4Nl* in, int64_t k, float* y) {
  PAGELLM_CHECK(k % 32 == 0);
  for (int64_t b = 0; b < k / 32; ++b) {
    const float d = F16ToF32(in[b].d);
    for (int i = 0; i < 32; ++i) y[32 * b + i] = d * static_cast<float>(kIq4NlValues[Q4_0Code(in[b], i)]);
  }
}

// (code - z) * d, as Q4_0's (code - 8) * d.
void DequantizeRowQ4_Z(const BlockQ4_Z* in, int64_t k, float* y) {
  PAGELLM_CHECK(k % 32 == 0);
  for (int64_t b = 0; b < k / 32; ++b) {
    const float d = F16ToF32(in[b].d);
    const int z = in[b].z;
    for (int i = 0; i < 32; ++i) y[32 * b + i] = static_cast<float>(Q4_ZCode(in[b], i) - z) * d;
  }
}

bool Q8_SRowScales(const BlockQ8_S* w, int64_t n, int64_t k, float* scale) {
  const int64_t nb = k / 32;
  for (int64_t row = 0; row < n; ++row) {
    const BlockQ8_S* r = w + row * nb;
    for (int64_t b = 1; b < nb; ++b) {
      if (std::memcmp(&r[b].d, &r[0].d, sizeof(float)) != 0) return false;
    }
    scale[row] = nb > 0 ? r[0].d : 0.0f;
  }
  return true;
}

void DequantizeRowQ8_S(const BlockQ8_S* in, int64_t k, float* y) {
  PAGELLM_CHECK(k % 32 == 0);
  for (int64_t b = 0; b < k / 32; ++b) {
    for (int i = 0; i < 32; ++i) y[32 * b + i] = in[b].d * static_cast<float>(in[b].qs[i]);
  }
}

// llama.cpp: dl = d * (ls - 32), then dl * kvalues_iq4nl[code].
void DequantizeRowIq4Xs(const BlockIq4Xs* in, int64_t k, float* y) {
  PAGELLM_CHECK(k % kKQuantBlockElements == 0);
  for (int64_t b = 0; b < k / kKQuantBlockElements; ++b) {
    const float d = F16ToF32(in[b].d);
    for (int j = 0; j < 8; ++j) {
      const float dl = d * static_cast<float>(Iq4XsScale(in[b], j));
      for (int l = 0; l < 32; ++l) y[32 * j + l] = dl * static_cast<float>(kIq4NlValues[Iq4XsCode(in[b], 32 * j + l)]);
    }
    y += 256;
  }
}

void DequantizeRowKQuant(DType dtype, const void* in, int64_t k, float* out) {
  PAGELLM_CHECK(IsPackedQuant(dtype));
  if (dtype == DType::kQ4_0) return DequantizeRowQ4_0(static_cast<const BlockQ4_0*>(in), k, out);
  if (dtype == DType::kQ5_0) return DequantizeRowQ5_0(static_cast<const BlockQ5_0*>(in), k, out);
  if (dtype == DType::kQ4_1) return DequantizeRowQ4_1(static_cast<const BlockQ4_1*>(in), k, out);
  if (dtype == DType::kQ5_1) return DequantizeRowQ5_1(static_cast<const BlockQ5_1*>(in), k, out);
  if (dtype == DType::kIQ4_NL) return DequantizeRowIq4Nl(static_cast<const BlockIq4Nl*>(in), k, out);
  if (dtype == DType::kQ4_Z) return DequantizeRowQ4_Z(static_cast<const BlockQ4_Z*>(in), k, out);
  if (dtype == DType::kIQ4_XS) return DequantizeRowIq4Xs(static_cast<const BlockIq4Xs*>(in), k, out);
  if (dtype == DType::kQ4_K) return DequantizeRowQ4_K(static_cast<const BlockQ4_K*>(in), k, out);
  if (dtype == DType::kQ5_K) return DequantizeRowQ5_K(static_cast<const BlockQ5_K*>(in), k, out);
  DequantizeRowQ6_K(static_cast<const BlockQ6_K*>(in), k, out);
}

}  // namespace pagellm
