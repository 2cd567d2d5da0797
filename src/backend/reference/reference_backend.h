// ReferenceBackend: plain scalar C++ for every Backend op; slow and obviously correct.
//
// It is the oracle of the conformance tests (tests/conformance) and of the model tests.
// Reductions accumulate in double, softmax is the textbook two-pass form, nothing is
// threaded or vectorised on purpose.
//
//   ReferenceBackend ref;
//   ref.RmsNorm(x, w, rows, dim, 1e-6f, y);
#pragma once

#include <vector>

#include "backend/backend.h"
#include "tensor/element_access.h"  // LoadElementAsF32 / StoreElementFromF32

namespace pagellm {

class ReferenceBackend final : public Backend {
 public:
  std::string_view name() const override { return "reference"; }
  void Embedding(const TensorView& table, std::span<const int32_t> ids, float* out) override;
  void RmsNorm(const float* x, const float* weight, int64_t rows, int64_t dim, float eps, float* y) override;
  // kQ8_0 weights: x rows quantized with QuantizeRowQ8_0, y = sum over blocks of
  // int32 dot * fp16(d_w) * fp16(d_x) (llama.cpp ggml_vec_dot_q8_0_q8_0), + bias.
  // kInt8 option: W = s_w[n] * q_w[n, :] per channel (QuantizeRowInt8), x rows likewise,
  // y = s_x[m] * s_w[n] * int_dot(q_x[m], q_w[n]) + bias.
  StatusOr<std::unique_ptr<LinearWeight>> PrepareLinear(const TensorView& weight, const TensorView& bias,
                                                        const LinearOptions& options = {}) override;
  void Linear(const LinearWeight& weight, const float* x, int64_t num_rows, float* y) override;
  void Rope(const RopeTable& table, std::span<const int32_t> positions, int64_t num_heads, int64_t head_dim,
            float* x) override;
  void SiluMul(const float* gate, const float* up, int64_t n, float* out) override;
  void AddInPlace(const float* y, int64_t n, float* x) override;
  void WriteKv(const float* k, const float* v, std::span<const int64_t> slot_mapping,
               const KvLayerView& cache) override;
  void PagedAttention(const float* q, const KvLayerView& cache, const AttentionBatch& batch,
                      const AttentionDims& dims, float* out) override;
};

// Checks a linear weight/bias pair (rank, dtype, matching N, K % 32 for kQ8_0 / kQ8_S); shared
// by backends. A kQ8_S weight's scales are checked by ReadQ8_SRowScales instead.
Status ValidateLinearWeight(const TensorView& weight, const TensorView& bias);

// The scale of each row of a validated kQ8_S weight [N, K] into `scale` (resized to N), or
// InvalidArgument when some row's blocks do not share one scale (grouped int8 cannot run as
// W8A8). Both backends' PrepareLinear call it where they need the scales, so the blocks are
// scanned once.
Status ReadQ8_SRowScales(const TensorView& weight, std::vector<float>& scale);

}  // namespace pagellm
