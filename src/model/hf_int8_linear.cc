#include "model/hf_int8_linear.h"

#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "model/hf_quant_tensors.h"
#include "model/tensor_source.h"
#include "tensor/element_access.h"
#include "tensor/kquant_blocks.h"

namespace pagellm {
namespace {

bool IsPerTensorShape(const std::vector<int64_t>& shape) {
  return shape.empty() || shape == std::vector<int64_t>{1} || shape == std::vector<int64_t>{1, 1};
}

}  // namespace

Status CheckQ8_SColumns(const std::string& tensor, int64_t k) {
  if (k > 0 && k % 32 == 0) return OkStatus();
  return InvalidArgumentError(fmt::format(
      "{}: in_features {} is not a multiple of 32, which the q8_s blocks need", tensor, k));
}

StatusOr<std::vector<float>> ReadRowScales(const TensorView& t, const std::string& tensor, int64_t n) {
  PAGELLM_RETURN_IF_ERROR(ExpectFloatScales(t, tensor));
  const bool per_tensor = IsPerTensorShape(t.shape);
  if (!per_tensor && t.shape != std::vector<int64_t>{n, 1} && t.shape != std::vector<int64_t>{n}) {
    return InvalidArgumentError(fmt::format(
        "{} has shape {}; expected one scale per output row ([{}, 1]) or per tensor ([1]): q8_s keeps one scale per "
        "row, so grouped or blocked int8 scales do not load", tensor, ShapeToString(t.shape), n));
  }
  std::vector<float> scales(static_cast<size_t>(n));
  for (int64_t row = 0; row < n; ++row) {
    const float s = LoadElementAsF32(t.data, t.dtype, per_tensor ? 0 : row);
    if (!std::isfinite(s)) {
      return InvalidArgumentError(fmt::format("{}: scale {} of row {} is not finite", tensor, s, row));
    }
    scales[static_cast<size_t>(row)] = s;
  }
  return scales;
}

TensorView PackQ8_S(const Int8Linear& linear, std::shared_ptr<void>& buffer) {
  const int64_t n = linear.n, k = linear.k, blocks_per_row = k / 32;
  TensorView out{nullptr, DType::kQ8_S, {n, k}};
  buffer = AllocateAligned(out.nbytes());
  out.data = buffer.get();
  auto* blocks = static_cast<BlockQ8_S*>(out.data);
  ForEachDecodedRow<int8_t>(n, k, linear.read_codes, [&](int64_t row, const int8_t* codes) {
    for (int64_t b = 0; b < blocks_per_row; ++b) {
      BlockQ8_S& block = blocks[row * blocks_per_row + b];
      block.d = linear.scales[static_cast<size_t>(row)];
      std::memcpy(block.qs, codes + 32 * b, 32);
    }
  });
  return out;
}

}  // namespace pagellm
