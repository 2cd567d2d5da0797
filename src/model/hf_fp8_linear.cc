#include "model/hf_fp8_linear.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "model/convert.h"
#include "tensor/element_access.h"
#include "tensor/half.h"

namespace pagellm {
namespace {

// Rows per ParallelFor chunk: a 128-row block shares its scale row.
constexpr int64_t kRowsPerChunk = 16;

const std::array<float, 256>& E4M3Table() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int b = 0; b < 256; ++b) t[static_cast<size_t>(b)] = E4M3ToF32(static_cast<uint8_t>(b));
    return t;
  }();
  return table;
}

struct TargetFormat {
  int mantissa_bits, min_exponent;
  double max_finite;
};

StatusOr<TargetFormat> FormatOf(DType dtype) {
  switch (dtype) {
    case DType::kBF16: return TargetFormat{7, -126, static_cast<double>(Bf16ToF32(0x7F7F))};
    case DType::kF16: return TargetFormat{10, -14, 65504.0};
    case DType::kF32: return TargetFormat{23, -126, static_cast<double>(std::numeric_limits<float>::max())};
    default: break;
  }
  return InvalidArgumentError(fmt::format("fp8 weights convert to bf16, f16 or f32, not {}", DTypeName(dtype)));
}

// The scale of every (row block, column block) as a double; NaN or infinite ones refused.
StatusOr<std::vector<double>> ReadBlockScales(const TensorView& t, const std::string& name, int64_t row_blocks,
                                              int64_t col_blocks, bool per_tensor) {
  PAGELLM_RETURN_IF_ERROR(ExpectFloatScales(t, name));
  const bool shape_ok = per_tensor ? t.numel() == 1 && t.rank() <= 1
                                   : t.shape == std::vector<int64_t>{row_blocks, col_blocks};
  if (!shape_ok) {
    return InvalidArgumentError(fmt::format("tensor '{}' has shape {}; expected {}", name, ShapeToString(t.shape),
                                            per_tensor ? std::string("[] or [1]")
                                                       : ShapeToString({row_blocks, col_blocks})));
  }
  std::vector<double> scales(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < scales.size(); ++i) {
    scales[i] = LoadElementAsF32(t.data, t.dtype, static_cast<int64_t>(i));
    if (!std::isfinite(scales[i])) {
      return InvalidArgumentError(fmt::format("tensor '{}': scale {} (element {}) is not finite", name, scales[i], i));
    }
  }
  return scales;
}

void StoreRounded(void* out, DType dtype, int64_t i, double value) {
  const auto f = static_cast<float>(value);  // exact: `value` is already a `dtype` value
  switch (dtype) {
    case DType::kBF16: static_cast<uint16_t*>(out)[i] = F32ToBf16(f); return;
    case DType::kF16: static_cast<uint16_t*>(out)[i] = F32ToF16(f); return;
    default: static_cast<float*>(out)[i] = f; return;
  }
}

}  // namespace

float E4M3ToF32(uint8_t bits) {
  const int exponent = (bits >> 3) & 15, mantissa = bits & 7;
  if (exponent == 15 && mantissa == 7) return std::numeric_limits<float>::quiet_NaN();
  // Bias 7: normal (1 + m / 8) * 2^(e - 7), subnormal (m / 8) * 2^-6.
  const float magnitude = exponent == 0 ? std::ldexp(static_cast<float>(mantissa), -9)
                                        : std::ldexp(static_cast<float>(8 + mantissa), exponent - 10);
  return (bits & 0x80) != 0 ? -magnitude : magnitude;
}

double RoundToBinaryFormat(double x, int mantissa_bits, int min_exponent) {
  if (std::fabs(x) >= std::ldexp(1.0, min_exponent)) {
    // Normal in the target: round the double's 52 fraction bits to `mantissa_bits`, ties to
    // even; a carry out of the fraction bumps the exponent, as it should.
    const int drop = 52 - mantissa_bits;
    uint64_t u;
    std::memcpy(&u, &x, sizeof(u));
    u += (uint64_t{1} << (drop - 1)) - 1 + ((u >> drop) & 1);
    u &= ~((uint64_t{1} << drop) - 1);
    std::memcpy(&x, &u, sizeof(u));
    return x;
  }
  // Subnormal: multiples of 2^(min_exponent - mantissa_bits) (nearbyint: ties to even).
  const int quantum = min_exponent - mantissa_bits;
  return std::ldexp(std::nearbyint(std::ldexp(x, -quantum)), quantum);
}

HfModuleLayout Fp8Layout(const HfQuantConfig& config) {
  const std::string scale = config.block_n > 0 ? "weight_scale_inv" : "weight_scale";
  return {scale, {"weight", scale, "input_scale"}};
}

StatusOr<TensorView> DequantizeFp8Linear(const TensorSource& source, const std::string& prefix,
                                         const HfQuantConfig& config, DType dtype, std::shared_ptr<void>& buffer) {
  PAGELLM_ASSIGN_OR_RETURN(TargetFormat format, FormatOf(dtype));
  const std::string weight_name = prefix + ".weight";
  PAGELLM_ASSIGN_OR_RETURN(const TensorView* weight, RequireTensor(source, weight_name));
  if (weight->dtype != DType::kU8 || weight->rank() != 2) {
    return InvalidArgumentError(fmt::format("tensor '{}' is {} {}; expected an F8_E4M3 matrix [out, in]", weight_name,
                                            DTypeName(weight->dtype), ShapeToString(weight->shape)));
  }
  const int64_t n = weight->dim(0), k = weight->dim(1);
  const bool per_tensor = config.block_n <= 0;
  const int64_t bn = per_tensor ? std::max<int64_t>(n, 1) : config.block_n;
  const int64_t bk = per_tensor ? std::max<int64_t>(k, 1) : config.block_k;
  const int64_t row_blocks = (n + bn - 1) / bn, col_blocks = (k + bk - 1) / bk;
  const std::string scale_name = prefix + "." + Fp8Layout(config).marker;
  PAGELLM_ASSIGN_OR_RETURN(const TensorView* scale, RequireTensor(source, scale_name));
  PAGELLM_ASSIGN_OR_RETURN(std::vector<double> scales,
                           ReadBlockScales(*scale, scale_name, row_blocks, col_blocks, per_tensor));
  TensorView out{nullptr, dtype, {n, k}};
  buffer = AllocateAligned(out.nbytes());
  out.data = buffer.get();
  const auto* codes = weight->as<const uint8_t>();
  const std::array<float, 256>& table = E4M3Table();
  std::atomic<bool> bad{false};
  ParallelFor(n, kRowsPerChunk, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const double* scale_row = scales.data() + (row / bn) * col_blocks;
      for (int64_t col = 0; col < k; ++col) {
        const double product = static_cast<double>(table[codes[row * k + col]]) * scale_row[col / bk];
        const double rounded = RoundToBinaryFormat(product, format.mantissa_bits, format.min_exponent);
        if (!(std::fabs(rounded) <= format.max_finite)) bad.store(true, std::memory_order_relaxed);  // NaN too
        StoreRounded(out.data, dtype, row * k + col, rounded);
      }
    }
  });
  if (!bad.load()) return out;
  for (int64_t i = 0; i < n * k; ++i) {  // the error path: find the first offender for the message
    const size_t block = static_cast<size_t>((i / k / bn) * col_blocks + (i % k) / bk);
    const double product = static_cast<double>(table[codes[i]]) * scales[block];
    if (std::isnan(product)) {
      return InvalidArgumentError(fmt::format("tensor '{}': element {} is an e4m3 NaN (byte 0x{:02x})", weight_name, i,
                                              codes[i]));
    }
    if (std::fabs(RoundToBinaryFormat(product, format.mantissa_bits, format.min_exponent)) > format.max_finite) {
      return InvalidArgumentError(fmt::format("tensor '{}': element {} = {} times its scale is {}, beyond {}'s range",
                                              weight_name, i, table[codes[i]], product, DTypeName(dtype)));
    }
  }
  return out;
}

}  // namespace pagellm
