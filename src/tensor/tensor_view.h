// TensorView: a non-owning view of a dense, row-major tensor in some device's memory.
//
// Weights loaded from safetensors/GGUF are TensorViews into the mapped file (or into
// memory the backend owns after packing); activations are views into workspaces.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tensor/dtype.h"

namespace pagellm {

enum class Device : uint8_t { kCpu, kCuda };

struct TensorView {
  void* data = nullptr;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;  // outermost first, as in PyTorch
  Device device = Device::kCpu;
  // A 2-D weight [N, K] whose columns are stored in another order than the input's: stored
  // column j multiplies input column column_order[j] (a permutation of [0, K)). GPTQ's
  // act-order checkpoints are kept this way so each quantization group is a run of
  // columns; a linear then gathers x[:, column_order]. Empty: the identity.
  std::span<const int32_t> column_order = {};

  bool empty() const { return data == nullptr; }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  size_t nbytes() const { return DTypeBytes(dtype, numel()); }
  int64_t dim(int i) const { return shape[static_cast<size_t>(i < 0 ? i + static_cast<int>(shape.size()) : i)]; }
  int rank() const { return static_cast<int>(shape.size()); }
  template <typename T>
  T* as() const { return static_cast<T*>(data); }
};

// "[151936, 1024]"
std::string ShapeToString(const std::vector<int64_t>& shape);

}  // namespace pagellm
