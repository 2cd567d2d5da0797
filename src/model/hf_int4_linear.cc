#include "model/hf_int4_linear.h"

#include <cstring>
#include <span>

#include <fmt/format.h>

#include "model/convert.h"
#include "model/hf_quant_tensors.h"
#include "model/tensor_source.h"
#include "tensor/element_access.h"
#include "tensor/half.h"
#include "tensor/kquant_blocks.h"

namespace pagellm {

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
  PAGELLM_RETURN_IF_ERROR(ExpectFloatScales(t, tensor));
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

Status ReadActOrder(const TensorSource& source, const std::string& name, Int4Linear& linear) {
  const TensorView* g_idx = source.Find(name);
  if (g_idx == nullptr) return OkStatus();
  const int64_t k = linear.k, groups = linear.groups();
  PAGELLM_RETURN_IF_ERROR(ExpectTensor(*g_idx, name, DType::kI32, {k}));
  const auto* idx = g_idx->as<const int32_t>();
  // A stable counting sort by group: offsets[g] is where group g's run starts.
  std::vector<int64_t> offsets(static_cast<size_t>(groups + 1), 0);
  for (int64_t c = 0; c < k; ++c) {
    if (idx[c] < 0 || idx[c] >= groups) {
      return InvalidArgumentError(fmt::format("tensor '{}': g_idx[{}] = {} is not one of the {} groups of the scales",
                                              name, c, idx[c], groups));
    }
    ++offsets[static_cast<size_t>(idx[c]) + 1];
  }
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t members = offsets[static_cast<size_t>(g) + 1];
    if (members % 32 != 0) {
      return InvalidArgumentError(fmt::format(
          "tensor '{}': act-order group {} has {} input columns; q4_z needs every group to fill whole 32-column "
          "blocks (group_size {} each, as GPTQ writes them)", name, g, members, linear.group));
    }
    offsets[static_cast<size_t>(g) + 1] += offsets[static_cast<size_t>(g)];
  }
  std::vector<int32_t> order(static_cast<size_t>(k));
  for (int64_t c = 0; c < k; ++c) order[static_cast<size_t>(offsets[static_cast<size_t>(idx[c])]++)] = static_cast<int32_t>(c);
  linear.block_groups.resize(static_cast<size_t>(k / 32));
  for (int64_t b = 0; b < k / 32; ++b) linear.block_groups[static_cast<size_t>(b)] = idx[order[static_cast<size_t>(32 * b)]];
  bool identity = true;
  for (int64_t j = 0; j < k && identity; ++j) identity = order[static_cast<size_t>(j)] == j;
  if (!identity) linear.column_order = std::move(order);
  return OkStatus();
}

TensorView PackQ4_Z(const Int4Linear& linear, std::shared_ptr<void>& buffer) {
  const int64_t n = linear.n, k = linear.k, blocks_per_row = k / 32, groups = linear.groups();
  TensorView out{nullptr, DType::kQ4_Z, {n, k}};
  // The blocks (20 bytes each, so the order after them is int32-aligned), then the order.
  const size_t order_bytes = linear.column_order.size() * sizeof(int32_t);
  buffer = AllocateAligned(out.nbytes() + order_bytes);
  out.data = buffer.get();
  if (order_bytes != 0) {
    auto* order = reinterpret_cast<int32_t*>(static_cast<std::byte*>(buffer.get()) + out.nbytes());
    std::memcpy(order, linear.column_order.data(), order_bytes);
    out.column_order = std::span<const int32_t>(order, linear.column_order.size());
  }
  auto* blocks = static_cast<BlockQ4_Z*>(out.data);
  ForEachDecodedRow<uint8_t>(n, k, linear.read_codes, [&](int64_t row, const uint8_t* c) {
    thread_local std::vector<uint8_t> stored;
    if (!linear.column_order.empty()) {  // act-order: the row's codes in the stored column order
      stored.resize(static_cast<size_t>(k));
      for (int64_t j = 0; j < k; ++j) stored[static_cast<size_t>(j)] = c[linear.column_order[static_cast<size_t>(j)]];
      c = stored.data();
    }
    for (int64_t b = 0; b < blocks_per_row; ++b) {
      BlockQ4_Z& block = blocks[row * blocks_per_row + b];
      const int64_t group = linear.block_groups.empty() ? 32 * b / linear.group
                                                        : linear.block_groups[static_cast<size_t>(b)];
      const size_t g = static_cast<size_t>(row * groups + group);
      block.d = linear.scales[g];
      block.z = linear.zeros[g];
      block.reserved = 0;
      const uint8_t* q = c + 32 * b;
      for (int j = 0; j < 16; ++j) block.qs[j] = static_cast<uint8_t>(q[j] | (q[j + 16] << 4));
    }
  });
  return out;
}

}  // namespace pagellm
