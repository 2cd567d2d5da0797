// Compiled with -ffp-contract=off, as llama.cpp's FMA-free libggml-base (gguf_quantize_math.h).
#include "gguf/gguf_quants.h"

#include <cmath>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "tensor/half.h"
#include "tensor/kquant_blocks.h"

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

void DequantizeQ4_0Block(const uint8_t* b, float* y) {
  DequantizeRowQ4_0(reinterpret_cast<const BlockQ4_0*>(b), 32, y);
}

void DequantizeQ4_KBlock(const uint8_t* b, float* y) {
  DequantizeRowQ4_K(reinterpret_cast<const BlockQ4_K*>(b), kQkK, y);
}

void DequantizeQ5_KBlock(const uint8_t* b, float* y) {
  DequantizeRowQ5_K(reinterpret_cast<const BlockQ5_K*>(b), kQkK, y);
}

void DequantizeQ6_KBlock(const uint8_t* b, float* y) {
  DequantizeRowQ6_K(reinterpret_cast<const BlockQ6_K*>(b), kQkK, y);
}

void DequantizeQ5_0Block(const uint8_t* b, float* y) {
  DequantizeRowQ5_0(reinterpret_cast<const BlockQ5_0*>(b), 32, y);
}

void DequantizeQ4_1Block(const uint8_t* b, float* y) {
  DequantizeRowQ4_1(reinterpret_cast<const BlockQ4_1*>(b), 32, y);
}

void DequantizeQ5_1Block(const uint8_t* b, float* y) {
  DequantizeRowQ5_1(reinterpret_cast<const BlockQ5_1*>(b), 32, y);
}

void DequantizeIq4NlBlock(const uint8_t* b, float* y) {
  DequantizeRowIq4Nl(reinterpret_cast<const BlockIq4Nl*>(b), 32, y);
}

void DequantizeIq4XsBlock(const uint8_t* b, float* y) {
  DequantizeRowIq4Xs(reinterpret_cast<const BlockIq4Xs*>(b), kQkK, y);
}

using BlockFn = void (*)(const uint8_t*, float*);

BlockFn BlockDequantizer(GgmlType type) {
  switch (type) {
    case GgmlType::kQ8_0: return DequantizeQ8_0Block;
    case GgmlType::kQ4_0: return DequantizeQ4_0Block;
    case GgmlType::kQ4_K: return DequantizeQ4_KBlock;
    case GgmlType::kQ5_K: return DequantizeQ5_KBlock;
    case GgmlType::kQ6_K: return DequantizeQ6_KBlock;
    case GgmlType::kQ5_0: return DequantizeQ5_0Block;
    case GgmlType::kQ4_1: return DequantizeQ4_1Block;
    case GgmlType::kQ5_1: return DequantizeQ5_1Block;
    case GgmlType::kIQ4_NL: return DequantizeIq4NlBlock;
    case GgmlType::kIQ4_XS: return DequantizeIq4XsBlock;
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
