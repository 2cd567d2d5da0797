// ProfilingBackend: a Backend that forwards every call to another one and adds up the
// wall time of each op, per (op, rows), so a benchmark can see where a forward pass
// spends its time (bench/spec/verify_bench.cc).
//
//   PAGELLM_ASSIGN_OR_RETURN(Backend* cpu, BackendRegistry::Get("cpu"));
//   ProfilingBackend prof(*cpu);
//   ... build the model on `prof`, run forwards ...
//   prof.Reset();                       // drop warm-up
//   ... run forwards ...
//   for (const OpTime& t : prof.Snapshot()) ...
//
// A wrapper rather than timers inside the backends: the model and the backends stay
// unchanged, and any backend can be profiled. Ops are synchronous on the CPU (their
// OpenMP regions end before they return), so wall time around the call is the op's
// cost; on an asynchronous device this would measure launch time only.
//
// LinearWeights are the inner backend's own (PrepareLinear hands the inner's object
// back, Linear passes it on unchanged), so the inner's `weight.backend() == this`
// checks still hold. Recording takes a mutex and, once an (op, rows) key has been seen,
// allocates nothing.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "backend/backend.h"

namespace pagellm {

struct OpTime {
  // The op and the shape that does not vary with the batch: "linear 2048x1024" (out x in),
  // "rms_norm 128" (dim), "rope 16x128" (heads x head_dim), "embedding", "silu_mul", ...
  std::string op;
  // The op's leading extent: rows (tokens, or tokens * heads for a per-head RmsNorm) for
  // most ops, elements for the element-wise SiluMul and AddInPlace.
  int64_t rows = 0;
  int64_t calls = 0;
  double seconds = 0.0;  // summed wall time of those calls
};

class ProfilingBackend final : public Backend {
 public:
  // `inner` is borrowed and must outlive this object.
  explicit ProfilingBackend(Backend& inner) : inner_(inner) {}

  // Zeroes all times (e.g. after warm-up, or between the forwards of a benchmark); cheap
  // and allocation-free, so it may sit between timed calls.
  void Reset();
  // The (op, rows) seen since the last Reset, ordered by op then rows.
  std::vector<OpTime> Snapshot() const;

  std::string_view name() const override { return inner_.name(); }
  StatusOr<AlignedBuffer> Allocate(size_t bytes) override { return inner_.Allocate(bytes); }
  StatusOr<std::unique_ptr<LinearWeight>> PrepareLinear(const TensorView& weight, const TensorView& bias,
                                                        const LinearOptions& options = {}) override {
    return inner_.PrepareLinear(weight, bias, options);
  }
  int64_t prepared_weight_bytes() const override { return inner_.prepared_weight_bytes(); }
  std::vector<std::span<const std::byte>> TakeCopiedSources() override { return inner_.TakeCopiedSources(); }
  bool EmbeddingReadsPreparedCopy(const TensorView& table) const override {
    return inner_.EmbeddingReadsPreparedCopy(table);
  }
  StatusOr<std::unique_ptr<LinearWeight>> PrepareStackedLinear(std::span<const TensorView> weights,
                                                               std::span<const TensorView> biases,
                                                               const LinearOptions& options = {}) override {
    return inner_.PrepareStackedLinear(weights, biases, options);
  }
  void LinearStacked(const LinearWeight& weight, const float* x, int64_t num_rows, std::span<float* const> ys) override;

  void Embedding(const TensorView& table, std::span<const int32_t> ids, float* out) override;
  void RmsNorm(const float* x, const float* weight, int64_t rows, int64_t dim, float eps, float* y) override;
  void Linear(const LinearWeight& weight, const float* x, int64_t num_rows, float* y) override;
  void Rope(const RopeTable& table, std::span<const int32_t> positions, int64_t num_heads, int64_t head_dim,
            float* x) override;
  void SiluMul(const float* gate, const float* up, int64_t n, float* out) override;
  void AddInPlace(const float* y, int64_t n, float* x) override;
  void WriteKv(const float* k, const float* v, std::span<const int64_t> slot_mapping,
               const KvLayerView& cache) override;
  void PagedAttention(const float* q, const KvLayerView& cache, const AttentionBatch& batch,
                      const AttentionDims& dims, float* out) override;

 private:
  // (op, shape dim 0, shape dim 1, rows); the op is a string literal and the shape is
  // turned into text only in Snapshot, so the hot path never formats or allocates.
  using Key = std::tuple<std::string_view, int64_t, int64_t, int64_t>;
  struct Total {
    int64_t calls = 0;
    double seconds = 0.0;
  };

  // Runs `call` and adds its wall time to `key`.
  template <typename Call>
  void Timed(const Key& key, Call&& call);

  Backend& inner_;
  mutable std::mutex mu_;
  std::map<Key, Total> totals_;
};

}  // namespace pagellm
