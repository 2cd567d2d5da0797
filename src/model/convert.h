// Dtype conversion of host weights (bf16 / f16 / f32), used for `--dtype` and when a
// checkpoint mixes dtypes, plus the small parallel-for the loaders share.
//
//   TensorView& dst = store.Allocate(name, DType::kF32, src.shape);
//   ConvertTensor(src, dst);  // rounds to nearest even, as torch's .to()
#pragma once

#include <cstdint>
#include <functional>

#include "tensor/tensor_view.h"

namespace pagellm {

// Runs fn(begin, end) over [0, n) split into contiguous chunks on up to
// hardware_concurrency threads. Chunks are whole multiples of `grain` (except the last)
// so callers may rely on fixed chunk boundaries.
void ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

// Copies `src` into `dst` converting the element type. Precondition: same numel,
// both dtypes in {f32, f16, bf16}.
void ConvertTensor(const TensorView& src, const TensorView& dst);

// Element `i` of a bf16/f16/f32 tensor as float (for tests and checks; slow).
float ReadElementAsFloat(const TensorView& view, int64_t i);

}  // namespace pagellm
