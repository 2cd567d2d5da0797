#include "backend/profiling_backend.h"

#include <fmt/format.h>

#include <utility>

#include "common/steady_clock.h"

namespace pagellm {

template <typename Call>
void ProfilingBackend::Timed(const Key& key, Call&& call) {
  const double start = SteadySeconds();
  std::forward<Call>(call)();
  const double seconds = SteadySeconds() - start;
  std::lock_guard<std::mutex> lock(mu_);
  Total& total = totals_[key];
  ++total.calls;
  total.seconds += seconds;
}

void ProfilingBackend::Reset() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [key, total] : totals_) total = Total{};  // keys stay: the next calls insert nothing
}

std::vector<OpTime> ProfilingBackend::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<OpTime> out;
  out.reserve(totals_.size());
  for (const auto& [key, total] : totals_) {
    if (total.calls == 0) continue;
    const auto& [op, dim0, dim1, rows] = key;
    std::string name(op);
    if (dim0 > 0) name += dim1 > 0 ? fmt::format(" {}x{}", dim0, dim1) : fmt::format(" {}", dim0);
    out.push_back({.op = std::move(name), .rows = rows, .calls = total.calls, .seconds = total.seconds});
  }
  return out;
}

void ProfilingBackend::Embedding(const TensorView& table, std::span<const int32_t> ids, float* out) {
  Timed({"embedding", 0, 0, static_cast<int64_t>(ids.size())}, [&] { inner_.Embedding(table, ids, out); });
}

void ProfilingBackend::RmsNorm(const float* x, const float* weight, int64_t rows, int64_t dim, float eps, float* y) {
  Timed({"rms_norm", dim, 0, rows}, [&] { inner_.RmsNorm(x, weight, rows, dim, eps, y); });
}

void ProfilingBackend::Linear(const LinearWeight& weight, const float* x, int64_t num_rows, float* y) {
  Timed({"linear", weight.out_features(), weight.in_features(), num_rows},
        [&] { inner_.Linear(weight, x, num_rows, y); });
}

void ProfilingBackend::LinearStacked(const LinearWeight& weight, const float* x, int64_t num_rows,
                                     std::span<float* const> ys) {
  Timed({"linear_stacked", weight.out_features(), weight.in_features(), num_rows},
        [&] { inner_.LinearStacked(weight, x, num_rows, ys); });
}

void ProfilingBackend::Rope(const RopeTable& table, std::span<const int32_t> positions, int64_t num_heads,
                            int64_t head_dim, float* x) {
  Timed({"rope", num_heads, head_dim, static_cast<int64_t>(positions.size())},
        [&] { inner_.Rope(table, positions, num_heads, head_dim, x); });
}

void ProfilingBackend::SiluMul(const float* gate, const float* up, int64_t n, float* out) {
  Timed({"silu_mul", 0, 0, n}, [&] { inner_.SiluMul(gate, up, n, out); });
}

void ProfilingBackend::AddInPlace(const float* y, int64_t n, float* x) {
  Timed({"add_in_place", 0, 0, n}, [&] { inner_.AddInPlace(y, n, x); });
}

void ProfilingBackend::WriteKv(const float* k, const float* v, std::span<const int64_t> slot_mapping,
                               const KvLayerView& cache) {
  Timed({"write_kv", 0, 0, static_cast<int64_t>(slot_mapping.size())},
        [&] { inner_.WriteKv(k, v, slot_mapping, cache); });
}

void ProfilingBackend::PagedAttention(const float* q, const KvLayerView& cache, const AttentionBatch& batch,
                                      const AttentionDims& dims, float* out) {
  const int64_t rows = batch.query_start_loc.empty() ? 0 : batch.query_start_loc.back();
  Timed({"paged_attention", dims.num_heads, dims.head_dim, rows},
        [&] { inner_.PagedAttention(q, cache, batch, dims, out); });
}

}  // namespace pagellm
