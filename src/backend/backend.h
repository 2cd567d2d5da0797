// Backend: the device abstraction the model is written against (memory + ops).
//
// Every op is a pure function of its arguments: no hidden state, no allocation in the
// hot path, fp32 activations, weights in bf16/f16/f32 with fp32 accumulation. Each op
// has a scalar twin in backend/reference that the conformance tests compare against.
//
//   PAGELLM_ASSIGN_OR_RETURN(Backend* be, BackendRegistry::Get("cpu"));
//   PAGELLM_ASSIGN_OR_RETURN(auto wq, be->PrepareLinear(weights.q_proj, weights.q_bias));
//   be->Linear(*wq, x, num_tokens, q);   // q [T, nh*hd] = x [T, H] · Wq^T + bq
//
// Linear weights go through PrepareLinear once at load so a backend can pack/reorder
// them (oneDNN blocked layouts, int8 quantisation, device upload); the model never
// looks inside a LinearWeight.
//
// Int8: a kQ8_0 weight (GGUF) always runs as llama.cpp's q8_0 x q8_0 (activations
// quantized per 32-block); a float weight prepared with
//   be->PrepareLinear(w, b, {.quantization = LinearQuantization::kInt8});
// runs as W8A8 (per-output-channel int8 weights, dynamic per-token int8 activations).
// A kQ8_S weight (a per-channel int8 checkpoint, e.g. compressed-tensors W8A8) runs as
// W8A8 with its own codes and scales, exactly as if that float weight had been quantized here.
// The exact semantics of all three are the reference backend's (backend/int8_quant.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "backend/aligned_buffer.h"
#include "backend/paged_kv_cache.h"
#include "backend/rope_table.h"
#include "common/status.h"
#include "tensor/tensor_view.h"

namespace pagellm {

class Backend;

enum class LinearQuantization : uint8_t {
  kNone,  // compute with the weight's own dtype (bf16/f16/f32, or q8_0 as stored)
  kInt8,  // W8A8: float weights quantized per output channel at PrepareLinear
};

struct LinearOptions {
  LinearQuantization quantization = LinearQuantization::kNone;  // ignored for kQ8_0 weights
};

// "none" | "int8" (vLLM's --quantization value) -> LinearQuantization.
StatusOr<LinearQuantization> LinearQuantizationFromName(std::string_view name);

// A linear layer's weight [N, K] (+ optional bias [N]) prepared for one backend.
class LinearWeight {
 public:
  virtual ~LinearWeight() = default;
  const Backend* backend() const { return backend_; }
  int64_t out_features() const { return out_features_; }  // N
  int64_t in_features() const { return in_features_; }    // K

 protected:
  LinearWeight(const Backend* backend, int64_t out_features, int64_t in_features)
      : backend_(backend), out_features_(out_features), in_features_(in_features) {}

 private:
  const Backend* backend_;
  int64_t out_features_;
  int64_t in_features_;
};

// The mixed batch of one step as attention sees it (see model/forward_input.h).
// Sequence s owns query rows [query_start_loc[s], query_start_loc[s+1]); its new
// tokens sit at positions seq_lens[s] - num_new .. seq_lens[s] - 1.
struct AttentionBatch {
  std::span<const int32_t> query_start_loc;  // [num_seqs + 1]
  std::span<const int32_t> seq_lens;         // [num_seqs]
  std::span<const int32_t> block_tables;     // [num_seqs, max_blocks_per_seq]
  int32_t max_blocks_per_seq = 0;

  int32_t num_seqs() const { return static_cast<int32_t>(seq_lens.size()); }
};

struct AttentionDims {
  int64_t num_heads = 0;     // nh
  int64_t num_kv_heads = 0;  // nkv; query head h reads kv head h / (nh / nkv)
  int64_t head_dim = 0;      // hd
  float scale = 1.0f;        // usually 1 / sqrt(hd)
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;

  // Host-visible, page-aligned, zeroed memory for workspaces.
  virtual StatusOr<AlignedBuffer> Allocate(size_t bytes) { return AlignedBuffer::Allocate(bytes); }

  // out [T, H] = float(table [V, H])[ids] (bf16/f16/f32, or kQ8_0 dequantized exactly).
  // Precondition: 0 <= ids[t] < V.
  virtual void Embedding(const TensorView& table, std::span<const int32_t> ids, float* out) = 0;

  // y[r] = weight * (x[r] * rsqrt(mean(x[r]^2) + eps)) for r < rows.
  // x, y [rows, dim] (may alias); weight [dim] fp32. Per-head q/k norm: rows = T * heads, dim = hd.
  virtual void RmsNorm(const float* x, const float* weight, int64_t rows, int64_t dim, float eps,
                       float* y) = 0;

  // weight [N, K] bf16/f16/f32 (PyTorch layout) or kQ8_0 (K % 32 == 0); bias [N] (any
  // float dtype) or empty. The views must outlive the returned object (a backend may
  // keep pointing at them). options.quantization = kInt8 asks for W8A8 (see above).
  virtual StatusOr<std::unique_ptr<LinearWeight>> PrepareLinear(const TensorView& weight, const TensorView& bias,
                                                                const LinearOptions& options = {}) = 0;

  // Bytes this backend holds right now for the LinearWeights it prepared that are still
  // alive: packed, widened or quantized copies (oneDNN layouts, W8A8, repacked Q8_0),
  // not the borrowed views. The memory plan counts them with the weights.
  virtual int64_t prepared_weight_bytes() const { return 0; }

  // The weight views (data, bytes) that LinearWeights prepared since the last call hold a
  // complete copy of and never read again (a backend may already have dropped their file
  // pages, MappedFile::ReleasePages). Taking the list clears it.
  virtual std::vector<std::span<const std::byte>> TakeCopiedSources() { return {}; }

  // Whether Embedding reads `table`'s rows from a copy a live LinearWeight prepared from
  // that same view (a tied lm_head), so the view's own pages are never read again.
  virtual bool EmbeddingReadsPreparedCopy(const TensorView& table) const { return false; }

  // y [M, N] = x [M, K] · W^T (+ bias). Precondition: `weight` was prepared by this backend.
  virtual void Linear(const LinearWeight& weight, const float* x, int64_t num_rows, float* y) = 0;

  // One LinearWeight for weights that read the same input (q|k|v, gate|up): weights[i]
  // [N_i, K], all of one dtype, biases[i] [N_i] or every one empty. Null when this backend
  // has no stacked form for them (then prepare them one by one). A decode step makes one
  // call of it instead of several: one wake-up of the threads, one quantized activation.
  virtual StatusOr<std::unique_ptr<LinearWeight>> PrepareStackedLinear(std::span<const TensorView> weights,
                                                                       std::span<const TensorView> biases,
                                                                       const LinearOptions& options = {}) {
    (void)weights, (void)biases, (void)options;
    return std::unique_ptr<LinearWeight>();
  }
  // ys[i] [M, N_i] = x [M, K] · W_i^T (+ bias_i), bit for bit what Linear gives on each part
  // prepared alone. Precondition: `weight` came from this backend's PrepareStackedLinear.
  virtual void LinearStacked(const LinearWeight& weight, const float* x, int64_t num_rows,
                             std::span<float* const> ys) {
    (void)weight, (void)x, (void)num_rows, (void)ys;
    PAGELLM_CHECK(false);
  }

  // NeoX rotate-half RoPE in place over the first table.rotary_dim dims of every head.
  // x [T, num_heads, head_dim]; positions [T], each < table.max_positions.
  virtual void Rope(const RopeTable& table, std::span<const int32_t> positions, int64_t num_heads,
                    int64_t head_dim, float* x) = 0;

  // out[i] = silu(gate[i]) * up[i] for i < n (SwiGLU); out may alias gate.
  virtual void SiluMul(const float* gate, const float* up, int64_t n, float* out) = 0;

  // x[i] += y[i] for i < n (residual add).
  virtual void AddInPlace(const float* y, int64_t n, float* x) = 0;

  // cache.k/v[slot_mapping[t]] = k/v [T, nkv, hd] row t, converted to cache.dtype.
  // Slots < 0 are skipped (padding). Precondition: slots < cache.num_slots().
  virtual void WriteKv(const float* k, const float* v, std::span<const int64_t> slot_mapping,
                       const KvLayerView& cache) = 0;

  // out [T, nh, hd]: causal attention of q [T, nh, hd] over each sequence's cached
  // context (which must already include this step's keys/values), fp32 softmax.
  virtual void PagedAttention(const float* q, const KvLayerView& cache, const AttentionBatch& batch,
                              const AttentionDims& dims, float* out) = 0;
};

}  // namespace pagellm
