#include "model/hf_int4_linear.h"

#include <algorithm>

#include <fmt/format.h>

#include "model/convert.h"
#include "model/tensor_source.h"
#include "tensor/element_access.h"
#include "tensor/half.h"
#include "tensor/kquant_blocks.h"

namespace pagellm {
namespace {

// Rows decoded at once per thread: their codes sit in a scratch of kTileRows * k bytes,
// and AWQ / GPTQ, which store a row's codes strided, then read whole cache lines.
constexpr int64_t kTileRows = 64;

}  // namespace

StatusOr<int64_t> ResolveQ4_ZGroup(const std::string& tensor, int64_t k, int64_t group) {
  if (k % 32 != 0) {
    return InvalidArgumentError(fmt::format(
        "{}: in_features {} is not a multiple of 32, which the q4_z blocks need", tensor, k));
  }
  const int64_t g = group < 0 ? k : group;
  if (g == 0 || k % g != 0 || (g % 32 != 0 && g != k)) {
    return InvalidArgumentError(fmt::format(
        "{}: group_size {} does not fit q4_z's 32-column blocks (it must be a multiple of 32 dividing in_features {}, "
        "or -1)", tensor, group, k));
  }
  return g;
}

StatusOr<std::vector<uint16_t>> ReadScalesAsF16(const TensorView& t, const std::string& tensor, int64_t n,
                                                int64_t groups, bool groups_first) {
  if (t.dtype != DType::kF16 && t.dtype != DType::kBF16 && t.dtype != DType::kF32) {
    return InvalidArgumentError(fmt::format("{} has dtype {}; expected f16, bf16 or f32 scales", tensor,
                                            DTypeName(t.dtype)));
  }
  std::vector<uint16_t> out(static_cast<size_t>(n * groups));
  for (int64_t row = 0; row < n; ++row) {
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t index = groups_first ? g * n + row : row * groups + g;
      const float value = LoadElementAsF32(t.data, t.dtype, index);
      const uint16_t half = F32ToF16(value);
      if (!(F16ToF32(half) == value)) {  // also refuses NaN
        return InvalidArgumentError(fmt::format(
            "{}: scale {} (element {} of {} {}) is not exactly representable in fp16, which q4_z stores", tensor,
            value, index, DTypeName(t.dtype), ShapeToString(t.shape)));
      }
      out[static_cast<size_t>(row * groups + g)] = half;
    }
  }
  return out;
}

TensorView PackQ4_Z(const Int4Linear& linear, std::shared_ptr<void>& buffer) {
  const int64_t n = linear.n, k = linear.k, blocks_per_row = k / 32, groups = linear.groups();
  TensorView out{nullptr, DType::kQ4_Z, {n, k}};
  buffer = AllocateAligned(out.nbytes());
  out.data = buffer.get();
  auto* blocks = static_cast<BlockQ4_Z*>(out.data);
  ParallelFor(n, kTileRows, [&](int64_t begin, int64_t end) {
    std::vector<uint8_t> codes(static_cast<size_t>(kTileRows * k));
    for (int64_t row0 = begin; row0 < end; row0 += kTileRows) {
      const int64_t rows = std::min(kTileRows, end - row0);
      linear.read_codes(row0, rows, codes.data());
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t row = row0 + r;
        const uint8_t* c = codes.data() + r * k;
        for (int64_t b = 0; b < blocks_per_row; ++b) {
          BlockQ4_Z& block = blocks[row * blocks_per_row + b];
          const size_t g = static_cast<size_t>(row * groups + 32 * b / linear.group);
          block.d = linear.scales[g];
          block.z = linear.zeros[g];
          block.reserved = 0;
          const uint8_t* q = c + 32 * b;
          for (int j = 0; j < 16; ++j) block.qs[j] = static_cast<uint8_t>(q[j] | (q[j + 16] << 4));
        }
      }
    }
  });
  return out;
}

}  // namespace pagellm
