#include "gguf/gguf_quants.h"

#include <cmath>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "tensor/half.h"

namespace pagellm {
namespace {

uint16_t LoadU16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
float LoadF16(const uint8_t* p) { return F16ToF32(LoadU16(p)); }

// Each Dequantize*Block decodes one block starting at `b` into `y`.

void DequantizeQ8_0Block(const uint8_t* b, float* y) {
  const float d = LoadF16(b);
  const int8_t* qs = reinterpret_cast<const int8_t*>(b + 2);
  for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(qs[j]) * d;
}

// Low nibbles hold values 0..15, high nibbles 16..31; both centred on 8.
void DequantizeQ4_0Block(const uint8_t* b, float* y) {
  const float d = LoadF16(b);
  const uint8_t* qs = b + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>((qs[j] & 0x0F) - 8) * d;
    y[j + 16] = static_cast<float>((qs[j] >> 4) - 8) * d;
  }
}

// 256 values in 4 groups of 64; each group uses 32 qs bytes (low nibbles = first 32 values,
// high nibbles = next 32) and two of the 8 (scale, min) pairs.
void DequantizeQ4_KBlock(const uint8_t* b, float* y) {
  const float d = LoadF16(b);
  const float dmin = LoadF16(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* qs = b + 16;
  for (int group = 0; group < 4; ++group) {
    uint8_t sc_lo, m_lo, sc_hi, m_hi;
    GetScaleMinK4(2 * group, scales, &sc_lo, &m_lo);
    GetScaleMinK4(2 * group + 1, scales, &sc_hi, &m_hi);
    const float d_lo = d * sc_lo, min_lo = dmin * m_lo;
    const float d_hi = d * sc_hi, min_hi = dmin * m_hi;
    for (int l = 0; l < 32; ++l) y[l] = d_lo * static_cast<float>(qs[l] & 0x0F) - min_lo;
    for (int l = 0; l < 32; ++l) y[32 + l] = d_hi * static_cast<float>(qs[l] >> 4) - min_hi;
    qs += 32;
    y += 64;
  }
}

// As Q4_K plus a 5th bit per value: value (64*group + l) takes bit 2*group of qh[l],
// value (64*group + 32 + l) takes bit 2*group + 1.
void DequantizeQ5_KBlock(const uint8_t* b, float* y) {
  const float d = LoadF16(b);
  const float dmin = LoadF16(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* qh = b + 16;
  const uint8_t* qs = b + 48;
  for (int group = 0; group < 4; ++group) {
    uint8_t sc_lo, m_lo, sc_hi, m_hi;
    GetScaleMinK4(2 * group, scales, &sc_lo, &m_lo);
    GetScaleMinK4(2 * group + 1, scales, &sc_hi, &m_hi);
    const float d_lo = d * sc_lo, min_lo = dmin * m_lo;
    const float d_hi = d * sc_hi, min_hi = dmin * m_hi;
    const uint8_t bit_lo = static_cast<uint8_t>(1u << (2 * group));
    const uint8_t bit_hi = static_cast<uint8_t>(2u << (2 * group));
    for (int l = 0; l < 32; ++l) {
      int q = (qs[l] & 0x0F) + ((qh[l] & bit_lo) ? 16 : 0);
      y[l] = d_lo * static_cast<float>(q) - min_lo;
    }
    for (int l = 0; l < 32; ++l) {
      int q = (qs[l] >> 4) + ((qh[l] & bit_hi) ? 16 : 0);
      y[32 + l] = d_hi * static_cast<float>(q) - min_hi;
    }
    qs += 32;
    y += 64;
  }
}

// 256 values in 2 halves of 128. In a half, value (32*k + l), k = 0..3, takes its low 4 bits
// from ql[l + 32*(k&1)] (low nibble for k < 2, high nibble otherwise), its top 2 bits from
// qh[l] bits 2k..2k+1, and scale index (l/16) + 2k; q is centred on 32.
void DequantizeQ6_KBlock(const uint8_t* b, float* y) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
  const float d = LoadF16(b + 208);
  for (int half = 0; half < 2; ++half) {
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      for (int k = 0; k < 4; ++k) {
        const uint8_t low_byte = ql[l + 32 * (k & 1)];
        const int low = (k < 2) ? (low_byte & 0x0F) : (low_byte >> 4);
        const int high = (qh[l] >> (2 * k)) & 3;
        const int q = (low | (high << 4)) - 32;
        y[32 * k + l] = d * static_cast<float>(sc[is + 2 * k]) * static_cast<float>(q);
      }
    }
    ql += 64;
    qh += 32;
    sc += 8;
    y += 128;
  }
}

using BlockFn = void (*)(const uint8_t*, float*);

BlockFn BlockDequantizer(GgmlType type) {
  switch (type) {
    case GgmlType::kQ8_0: return DequantizeQ8_0Block;
    case GgmlType::kQ4_0: return DequantizeQ4_0Block;
    case GgmlType::kQ4_K: return DequantizeQ4_KBlock;
    case GgmlType::kQ5_K: return DequantizeQ5_KBlock;
    case GgmlType::kQ6_K: return DequantizeQ6_KBlock;
    default: return nullptr;
  }
}

Status CheckSizes(GgmlType type, std::span<const std::byte> src, int64_t num_elements) {
  if (num_elements < 0 || num_elements % GgmlBlockSize(type) != 0) {
    return InvalidArgumentError(fmt::format("{} elements is not a multiple of the {} block size {}",
                                            num_elements, GgmlTypeName(type), GgmlBlockSize(type)));
  }
  size_t expected = GgmlRowBytes(type, num_elements);
  if (src.size() != expected) {
    return InvalidArgumentError(fmt::format("{} {} elements need {} bytes, got {}", num_elements,
                                            GgmlTypeName(type), expected, src.size()));
  }
  return OkStatus();
}

}  // namespace

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

Status Dequantize(GgmlType type, std::span<const std::byte> src, int64_t num_elements, float* dst) {
  PAGELLM_RETURN_IF_ERROR(CheckSizes(type, src, num_elements));
  const auto* p = reinterpret_cast<const uint8_t*>(src.data());
  const size_t n = static_cast<size_t>(num_elements);
  switch (type) {
    case GgmlType::kF32: std::memcpy(dst, p, n * sizeof(float)); return OkStatus();
    case GgmlType::kF16:
      for (size_t i = 0; i < n; ++i) dst[i] = F16ToF32(LoadU16(p + 2 * i));
      return OkStatus();
    case GgmlType::kBF16:
      for (size_t i = 0; i < n; ++i) dst[i] = Bf16ToF32(LoadU16(p + 2 * i));
      return OkStatus();
    default: break;
  }
  BlockFn fn = BlockDequantizer(type);
  PAGELLM_CHECK(fn != nullptr);
  const int64_t block = GgmlBlockSize(type);
  const size_t block_bytes = GgmlTypeSize(type);
  for (int64_t b = 0; b < num_elements / block; ++b) fn(p + b * block_bytes, dst + b * block);
  return OkStatus();
}

Status DequantizeToBf16(GgmlType type, std::span<const std::byte> src, int64_t num_elements, uint16_t* dst) {
  PAGELLM_RETURN_IF_ERROR(CheckSizes(type, src, num_elements));
  if (type == GgmlType::kBF16) {
    std::memcpy(dst, src.data(), src.size());
    return OkStatus();
  }
  // Chunked so a large tensor needs only a small float scratch buffer.
  const int64_t chunk = 64 * kQkK;
  std::vector<float> scratch(static_cast<size_t>(std::min<int64_t>(chunk, num_elements)));
  const size_t bytes_per_chunk = GgmlRowBytes(type, chunk);
  for (int64_t start = 0; start < num_elements; start += chunk) {
    int64_t count = std::min(chunk, num_elements - start);
    size_t offset = static_cast<size_t>(start / chunk) * bytes_per_chunk;
    PAGELLM_RETURN_IF_ERROR(
        Dequantize(type, src.subspan(offset, GgmlRowBytes(type, count)), count, scratch.data()));
    for (int64_t i = 0; i < count; ++i) dst[start + i] = F32ToBf16(scratch[static_cast<size_t>(i)]);
  }
  return OkStatus();
}

void QuantizeQ8_0(const float* src, int64_t num_elements, std::byte* dst) {
  PAGELLM_CHECK(num_elements % 32 == 0);
  auto* out = reinterpret_cast<uint8_t*>(dst);
  for (int64_t b = 0; b < num_elements / 32; ++b) {
    const float* x = src + b * 32;
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) {
      const float a = std::fabs(x[j]);
      amax = amax > a ? amax : a;  // ggml MAX(): NaN propagates like llama.cpp
    }
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const uint16_t d16 = F32ToF16(d);
    std::memcpy(out, &d16, sizeof(d16));
    for (int j = 0; j < 32; ++j) {
      out[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(std::roundf(x[j] * id)));
    }
    out += 34;
  }
}

}  // namespace pagellm
