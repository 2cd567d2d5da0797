// ServerMetrics: vLLM's Prometheus metrics (names, `model_name` label, buckets) fed from
// the engine's per-request outputs and its EngineStats, plus vLLM's periodic log line.
//
//   ServerMetrics metrics("Qwen/Qwen3-0.6B");
//   metrics.OnDelta(delta, &prev_token_s);     // every RequestOutput (I/O thread)
//   std::string text = metrics.Render(engine.stats(), engine.has_work());  // GET /metrics
//
// Per-request latencies come from RequestTimes (engine clock): TTFT = first token -
// arrival, queue = first scheduled - arrival, prefill = first token - first scheduled,
// decode = finished - first token, e2e = finished - arrival. Counters mirrored from
// EngineStats are cumulative there and copied at scrape time.
// Hybrid models (EngineStats::hybrid.num_state_slots > 0) also get pagellm:hybrid_*
// families for the GDN state cache (vLLM has none): snapshot hits / restored tokens /
// saves / evictions counters, and slots and snapshots in use / capacity gauges. They
// are registered at the first scrape whose stats show a hybrid model, so dense models'
// /metrics is exactly vLLM's.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "engine/engine_stats.h"
#include "engine/request_output.h"
#include "metrics/metrics_registry.h"
#include "model/weight_binding.h"

namespace pagellm::server {

class ServerMetrics {
 public:
  explicit ServerMetrics(const std::string& model_name);

  // One delta of one sample. `prev_token_s`: this sample's previous last_token_s
  // (0 before its first token); updated here. Thread-safe.
  void OnDelta(const RequestOutput& delta, double* prev_token_s);
  // The exposition, after copying engine gauges and counters. `idle`: no request is in
  // flight (then running/waiting/KV usage are 0 even if the engine's last stats snapshot
  // predates the final step).
  std::string Render(const EngineStats& stats, bool idle);
  // vLLM-style "Avg prompt throughput ... Prefix cache hit rate" line since the last
  // call; "" when nothing happened in the interval.
  std::string LogLine(const EngineStats& stats, bool idle, double now_s);
  int64_t num_aborted() const { return static_cast<int64_t>(aborted_->value()); }
  // pagellm:weight_bytes{group, format}: the served weights per tensor group and storage
  // format (q4_K, q8_0, bf16, ...). Called once after the model is loaded.
  void SetWeightFormats(const std::vector<WeightFormat>& formats);

 private:
  void SyncEngine(const EngineStats& stats, bool idle);
  // Registers (once) and sets the pagellm:hybrid_* series. Caller holds mu_.
  void SyncHybrid(const HybridStateStats& stats, bool idle);
  // Registers (once) and sets vLLM's vllm:spec_decode_* counters. Caller holds mu_.
  void SyncSpecDecode(const SpecDecodeStats& stats);

  struct HybridMetrics {
    metrics::Gauge *slots_used, *slots_capacity, *snapshots_used, *snapshots_capacity;
    metrics::Counter *hits, *restored_tokens, *saves, *evictions;
  };

  metrics::MetricsRegistry registry_;
  metrics::Labels model_labels_;
  metrics::Gauge *running_, *waiting_, *kv_usage_, *prefill_cap_;
  metrics::Counter *prompt_tokens_, *generation_tokens_, *preemptions_, *prefix_queries_, *prefix_hits_;
  metrics::Counter *steps_, *step_schedule_, *step_forward_, *step_sample_, *step_output_;
  metrics::Counter *success_stop_, *success_length_, *success_abort_, *success_error_, *aborted_;
  metrics::Histogram *ttft_, *itl_, *e2e_, *queue_, *prefill_, *decode_, *inference_, *iteration_tokens_;
  std::mutex mu_;  // guards the sampling state below
  struct SpecDecodeMetrics {
    metrics::Counter* drafts = nullptr;
    metrics::Counter* draft_tokens = nullptr;
    metrics::Counter* accepted_tokens = nullptr;
    std::vector<metrics::Counter*> accepted_per_pos;
  };
  std::unique_ptr<SpecDecodeMetrics> spec_;  // null unless --speculative-config is set
  std::unique_ptr<HybridMetrics> hybrid_;  // null until a hybrid model's stats are seen
  int64_t last_num_steps_ = 0;
  // LogLine's previous snapshot.
  double log_last_s_ = 0.0;
  int64_t log_prompt_ = 0, log_generation_ = 0, log_queries_ = 0, log_hits_ = 0;
};

}  // namespace pagellm::server
