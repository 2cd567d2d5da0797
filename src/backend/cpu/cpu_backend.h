// CpuBackend: the optimised CPU implementation of Backend (OpenMP + SIMD + oneDNN).
//
// Linear layers: bf16 weights are repacked at PrepareLinear into 16-row strips
// (bf16_packed.h) that one kernel per ISA runs for every M, at memory bandwidth for
// decode and at oneDNN's avx512_bf16 speed for prefill; oneDNN (dnnl_matmul.h) then
// keeps a copy only when it has AMX, for M > gemv_max_rows, and only with batch
// invariance off (PAGELLM_BATCH_INVARIANT=0, see batch_invariant below). f16/f32 weights (and bf16
// with repack_bf16 = false) run the hand-written GEMV (gemv.h) on the weights in place
// for M <= gemv_max_rows and oneDNN matmul on weights packed at load above. Linear and attention have AVX2 and AVX-512 kernels picked by `isa`;
// the element-wise ops (norm, RoPE, SiLU, KV writes) are AVX2 code on both paths since
// they are a small share of the time. All threading is OpenMP, the same pool oneDNN
// uses, so the two never oversubscribe the cores.
//
// Int8: kQ8_0 weights are repacked once at PrepareLinear (q8_0_packed.h: one layout for
// the GEMV and the GEMM, same bytes per weight as the file) unless repack_q8_0 is false,
// which reads them in place (int8_linear.h: llama.cpp's q8_0 x q8_0 kernels for every M);
// LinearOptions{kInt8} turns float weights into W8A8 (GEMV for M <= gemv_max_rows,
// oneDNN s8 x s8 above). The AVX-512 int8 kernels need VNNI; isa = kAvx512 on a CPU
// with BF16 but without VNNI runs the AVX2 int8 kernels.
//
//   CpuBackend cpu;                                   // DetectCpuIsa(), default split
//   CpuBackend avx2({.isa = CpuIsa::kAvx2});          // force the baseline
//   CpuBackend gemv_only({.gemv_max_rows = INT64_MAX});
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_isa.h"
#include "backend/cpu/kquant_packed.h"
#include "backend/reference/reference_backend.h"

namespace pagellm {

// False when PAGELLM_Q8_0_REPACK=0 is set, else true.
bool Q8_0RepackDefault();
// False when PAGELLM_BF16_REPACK=0 is set, else true.
bool Bf16RepackDefault();
// False when PAGELLM_BATCH_INVARIANT=0 is set, else true (vLLM's VLLM_BATCH_INVARIANT,
// on by default here: exact outputs come first).
bool BatchInvariantDefault();
// PAGELLM_STACK_LINEARS=0 prepares q/k/v and gate/up one by one (A/B runs); default on.
bool StackLinearsDefault();

struct CpuBackendOptions {
  CpuIsa isa = DetectCpuIsa();
  // The int8 kernels' own choice (DetectCpuInt8Isa): AVX-512 VNNI wherever the CPU has it,
  // also without BF16. Tests that pin `isa` pin this too.
  CpuIsa int8_isa = DetectCpuInt8Isa();
  // k-quant linears of more than 4 rows on AMX-INT8 tiles (AmxInt8Default: where the CPU
  // and OS allow it, unless PAGELLM_AMX=0); bit for bit the VNNI kernels' results. Needs
  // int8_isa == kAvx512.
  bool amx_int8 = AmxInt8Default();
  // Linear calls with at most this many rows use the GEMV kernels (or the packed bf16
  // kernel); more rows use oneDNN when it holds a copy. Measured with linear_bench (see the report in the commit history): the
  // hand-written GEMV wins up to about 4 rows on this class of machine.
  int64_t gemv_max_rows = 4;
  bool use_dnnl = true;  // false: GEMV kernels for every M
  // Q8_0 weights: repack at load (true) or read the file's blocks in place (false, the
  // path before the repacked layout; PAGELLM_Q8_0_REPACK=0 picks it for A/B runs).
  bool repack_q8_0 = Q8_0RepackDefault();
  // bf16 weights: repack at load into 16-row strips (bf16_packed.h), one kernel for every
  // M, instead of the in-place GEMV plus oneDNN's copy (false: PAGELLM_BF16_REPACK=0, for
  // A/B runs).
  bool repack_bf16 = Bf16RepackDefault();
  // bf16 weights on AMX: oneDNN's AMX matmul is 1.7-3.3x the packed kernel from M = 16
  // up (16-sequence decode, 512-token prefill of Qwen3-0.6B), but rounds differently, so
  // mixing the two by M makes a request's logits depend on how many rows share its step
  // (batching, chunked prefill, speculative verification) and greedy tokens can flip at
  // near-ties. oneDNN alone is no cure: it picks kernels by M, and rows of a tiny shape
  // differ between M = 1 and M = 5. true (default): the packed kernel, batch invariant by
  // construction, runs every M and no AMX copy is made, the numerics of a machine without
  // AMX. false (PAGELLM_BATCH_INVARIANT=0): AMX for M > 4.
  bool batch_invariant = BatchInvariantDefault();
  // PrepareStackedLinear stacks k-quant (and repacked Q8_0) weights that read the same
  // input (one call, one fork for q|k|v and gate|up); false: it declines, and they run one
  // by one.
  bool stack_linears = StackLinearsDefault();
};

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(CpuBackendOptions options = {});
  const CpuBackendOptions& options() const { return options_; }

  std::string_view name() const override { return "cpu"; }
  void Embedding(const TensorView& table, std::span<const int32_t> ids, float* out) override;
  void RmsNorm(const float* x, const float* weight, int64_t rows, int64_t dim, float eps, float* y) override;
  StatusOr<std::unique_ptr<LinearWeight>> PrepareLinear(const TensorView& weight, const TensorView& bias,
                                                        const LinearOptions& options = {}) override;
  int64_t prepared_weight_bytes() const override { return prepared_bytes_.load(); }
  std::vector<std::span<const std::byte>> TakeCopiedSources() override;
  bool EmbeddingReadsPreparedCopy(const TensorView& table) const override;
  void Linear(const LinearWeight& weight, const float* x, int64_t num_rows, float* y) override;
  StatusOr<std::unique_ptr<LinearWeight>> PrepareStackedLinear(std::span<const TensorView> weights,
                                                               std::span<const TensorView> biases,
                                                               const LinearOptions& options = {}) override;
  void LinearStacked(const LinearWeight& weight, const float* x, int64_t num_rows, std::span<float* const> ys) override;
  void Rope(const RopeTable& table, std::span<const int32_t> positions, int64_t num_heads, int64_t head_dim,
            float* x) override;
  void SiluMul(const float* gate, const float* up, int64_t n, float* out) override;
  void AddInPlace(const float* y, int64_t n, float* x) override;
  void WriteKv(const float* k, const float* v, std::span<const int64_t> slot_mapping,
               const KvLayerView& cache) override;
  void PagedAttention(const float* q, const KvLayerView& cache, const AttentionBatch& batch,
                      const AttentionDims& dims, float* out) override;

 private:
  CpuBackendOptions options_;
  bool int8_avx512_ = false;  // isa == kAvx512 and the CPU has AVX-512 VNNI
  KQuantKernels kquant_kernels_ = KQuantKernels::kAvx2;  // from int8_avx512_ and amx_int8
  std::atomic<int64_t> prepared_bytes_{0};  // see prepared_weight_bytes()
  std::mutex copied_mu_;
  std::vector<std::span<const std::byte>> copied_sources_;  // see TakeCopiedSources(); guarded by copied_mu_
  // Prepared weights that can hand back their rows (packed copies), by their view's data
  // pointer: Embedding reads a tied lm_head's table there (backend/cpu/packed_rows.h).
  mutable std::mutex row_sources_mu_;
  std::unordered_map<const void*, const LinearWeight*> row_sources_;  // guarded by row_sources_mu_
  const LinearWeight* RowSourceFor(const TensorView& table) const;
  ReferenceBackend fallback_;  // for shapes the SIMD kernels do not cover (head_dim % 16 != 0)
};

}  // namespace pagellm
