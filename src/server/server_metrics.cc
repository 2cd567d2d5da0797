#include "server/server_metrics.h"

#include <algorithm>

#include <fmt/format.h>

namespace pagellm::server {

using metrics::Labels;

ServerMetrics::ServerMetrics(const std::string& model_name) {
  Labels m = {{"model_name", model_name}};
  model_labels_ = m;
  auto& r = registry_;
  running_ = r.AddGauge("vllm:num_requests_running", "Number of requests in model execution batches.", m);
  waiting_ = r.AddGauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", m);
  kv_usage_ = r.AddGauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", m);
  // No vLLM twin: vLLM's prefill budget per step is fixed (--max-num-batched-tokens).
  prefill_cap_ = r.AddGauge("pagellm:prefill_token_cap",
                            "Prefill tokens the next step may schedule while requests decode, from measured step "
                            "times and --max-step-latency-ms (0: no cap besides --max-num-batched-tokens).", m);
  prompt_tokens_ = r.AddCounter("vllm:prompt_tokens_total", "Number of prefill tokens processed.", m);
  generation_tokens_ = r.AddCounter("vllm:generation_tokens_total", "Number of generation tokens processed.", m);
  preemptions_ = r.AddCounter("vllm:num_preemptions_total", "Cumulative number of preemption from the engine.", m);
  prefix_queries_ = r.AddCounter("vllm:prefix_cache_queries_total",
                                 "Prefix cache queries, in terms of number of queried tokens.", m);
  prefix_hits_ = r.AddCounter("vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens.", m);
  steps_ = r.AddCounter("pagellm:engine_steps_total", "Engine steps run.", m);
  auto phase = [&](const char* name) {
    Labels l = m;
    l.emplace_back("phase", name);
    return r.AddCounter("pagellm:engine_step_seconds_total",
                        "Engine thread time per step phase: schedule, forward, sample, output.", l);
  };
  step_schedule_ = phase("schedule");
  step_forward_ = phase("forward");
  step_sample_ = phase("sample");
  step_output_ = phase("output");
  const char* success_help = "Count of successfully processed requests.";
  auto reason = [&](const char* why) {
    Labels l = m;
    l.emplace_back("finished_reason", why);
    return r.AddCounter("vllm:request_success_total", success_help, l);
  };
  success_stop_ = reason("stop");
  success_length_ = reason("length");
  success_abort_ = reason("abort");
  success_error_ = reason("error");
  aborted_ = r.AddCounter("vllm:num_aborted_requests_total",
                          "Requests aborted before finishing (client disconnect, backlog overflow, shutdown).", m);
  ttft_ = r.AddHistogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", m,
                         metrics::TtftBuckets());
  itl_ = r.AddHistogram("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", m,
                        metrics::InterTokenLatencyBuckets());
  e2e_ = r.AddHistogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", m,
                        metrics::RequestLatencyBuckets());
  queue_ = r.AddHistogram("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.",
                          m, metrics::RequestLatencyBuckets());
  inference_ = r.AddHistogram("vllm:request_inference_time_seconds",
                              "Histogram of time spent in RUNNING phase for request.", m, metrics::RequestLatencyBuckets());
  prefill_ = r.AddHistogram("vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.",
                            m, metrics::RequestLatencyBuckets());
  decode_ = r.AddHistogram("vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.",
                           m, metrics::RequestLatencyBuckets());
  iteration_tokens_ = r.AddHistogram("vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step.", m,
                                     metrics::IterationTokensBuckets());
}

void ServerMetrics::OnDelta(const RequestOutput& d, double* prev_token_s) {
  const RequestTimes& t = d.times;
  if (!d.new_token_ids.empty() && t.last_token_s > 0.0) {
    if (*prev_token_s == 0.0) {
      ttft_->Observe(std::max(0.0, t.first_token_s - t.arrival_s));
    } else {
      itl_->Observe(std::max(0.0, t.last_token_s - *prev_token_s));
    }
    *prev_token_s = t.last_token_s;
  }
  if (!d.finished) return;
  if (!d.error.ok()) {
    success_error_->Inc();
    return;
  }
  if (d.finish_reason == "abort") {
    success_abort_->Inc();
    aborted_->Inc();
  } else if (d.finish_reason == "length") {
    success_length_->Inc();
  } else {
    success_stop_->Inc();
  }
  double end = t.finished_s > 0.0 ? t.finished_s : t.last_token_s;
  if (end <= 0.0) return;
  e2e_->Observe(std::max(0.0, end - t.arrival_s));
  if (t.first_scheduled_s > 0.0) {
    queue_->Observe(std::max(0.0, t.first_scheduled_s - t.arrival_s));
    inference_->Observe(std::max(0.0, end - t.first_scheduled_s));
    if (t.first_token_s > 0.0) {
      prefill_->Observe(std::max(0.0, t.first_token_s - t.first_scheduled_s));
      decode_->Observe(std::max(0.0, end - t.first_token_s));
    }
  }
}

void ServerMetrics::SyncEngine(const EngineStats& s, bool idle) {
  running_->Set(idle ? 0 : s.num_running);
  waiting_->Set(idle ? 0 : s.num_waiting);
  kv_usage_->Set(idle ? 0.0 : s.kv_cache_usage);
  prefill_cap_->Set(idle ? 0 : s.prefill_token_cap);
  prompt_tokens_->SetCumulative(static_cast<double>(s.prompt_tokens_total));
  generation_tokens_->SetCumulative(static_cast<double>(s.generation_tokens_total));
  preemptions_->SetCumulative(static_cast<double>(s.num_preemptions_total));
  prefix_queries_->SetCumulative(static_cast<double>(s.prefix_cache_queries));
  prefix_hits_->SetCumulative(static_cast<double>(s.prefix_cache_hits));
  steps_->SetCumulative(static_cast<double>(s.num_steps));
  step_schedule_->SetCumulative(s.step_schedule_s);
  step_forward_->SetCumulative(s.step_forward_s);
  step_sample_->SetCumulative(s.step_sample_s);
  step_output_->SetCumulative(s.step_output_s);
  std::lock_guard<std::mutex> lock(mu_);
  // NOTE: EngineStats exposes only the last step's token count, so steps between two
  // samples are attributed to the last one's bucket (exact when sampled every step).
  int64_t new_steps = s.num_steps - last_num_steps_;
  if (new_steps > 0 && s.last_step_tokens > 0) {
    const std::vector<double>& bounds = iteration_tokens_->upper_bounds();
    size_t idx = static_cast<size_t>(std::lower_bound(bounds.begin(), bounds.end(), double(s.last_step_tokens)) -
                                     bounds.begin());
    iteration_tokens_->AddToBucket(idx, new_steps, static_cast<double>(new_steps * s.last_step_tokens));
  }
  if (new_steps > 0) last_num_steps_ = s.num_steps;
  if (s.hybrid.num_state_slots > 0) SyncHybrid(s.hybrid, idle);
  if (s.spec_decode_enabled) SyncSpecDecode(s.spec);
}

void ServerMetrics::SyncSpecDecode(const SpecDecodeStats& st) {
  if (spec_ == nullptr) {
    const Labels& m = model_labels_;
    auto& r = registry_;
    spec_ = std::make_unique<SpecDecodeMetrics>();
    spec_->drafts = r.AddCounter("vllm:spec_decode_num_drafts_total", "Number of spec decoding drafts.", m);
    spec_->draft_tokens = r.AddCounter("vllm:spec_decode_num_draft_tokens_total", "Number of draft tokens.", m);
    spec_->accepted_tokens = r.AddCounter("vllm:spec_decode_num_accepted_tokens_total", "Number of accepted tokens.", m);
  }
  while (spec_->accepted_per_pos.size() < st.accepted_per_pos.size()) {
    Labels l = model_labels_;
    l.emplace_back("position", std::to_string(spec_->accepted_per_pos.size()));
    spec_->accepted_per_pos.push_back(registry_.AddCounter("vllm:spec_decode_num_accepted_tokens_per_pos_total",
                                                           "Accepted tokens per draft position.", l));
  }
  spec_->drafts->SetCumulative(static_cast<double>(st.num_drafts));
  spec_->draft_tokens->SetCumulative(static_cast<double>(st.num_draft_tokens));
  spec_->accepted_tokens->SetCumulative(static_cast<double>(st.num_accepted_tokens));
  for (size_t i = 0; i < st.accepted_per_pos.size(); ++i) {
    spec_->accepted_per_pos[i]->SetCumulative(static_cast<double>(st.accepted_per_pos[i]));
  }
}

void ServerMetrics::SetWeightFormats(const std::vector<WeightFormat>& formats) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const WeightFormat& f : formats) {
    Labels l = model_labels_;
    l.emplace_back("group", f.group);
    l.emplace_back("format", std::string(DTypeName(f.dtype)));
    registry_
        .AddGauge("pagellm:weight_bytes",
                  "Bytes of the served model's weights by tensor group (embed, lm_head, attention, mlp, other) and "
                  "storage format, as loaded (this rank's shard under tensor parallelism).", l)
        ->Set(static_cast<double>(f.bytes));
  }
}

void ServerMetrics::SyncHybrid(const HybridStateStats& h, bool idle) {
  if (hybrid_ == nullptr) {
    const Labels& m = model_labels_;
    auto& r = registry_;
    hybrid_ = std::make_unique<HybridMetrics>();
    hybrid_->slots_used = r.AddGauge("pagellm:hybrid_state_slots_in_use",
                                     "GDN state slots held by running requests (hybrid models).", m);
    hybrid_->slots_capacity = r.AddGauge("pagellm:hybrid_state_slots_capacity",
                                         "GDN state slots planned; at most this many requests run at once.", m);
    hybrid_->snapshots_used = r.AddGauge("pagellm:hybrid_state_snapshots_in_use",
                                         "GDN state snapshots held by the hybrid prefix cache.", m);
    hybrid_->snapshots_capacity = r.AddGauge("pagellm:hybrid_state_snapshots_capacity",
                                             "GDN state snapshots the hybrid prefix cache can hold.", m);
    hybrid_->hits = r.AddCounter("pagellm:hybrid_state_snapshot_hits_total",
                                 "Prefix-cache hits that restored a GDN state snapshot (one per resumed request).", m);
    hybrid_->restored_tokens = r.AddCounter("pagellm:hybrid_state_snapshot_restored_tokens_total",
                                            "Prompt tokens skipped by restoring GDN state snapshots.", m);
    hybrid_->saves = r.AddCounter("pagellm:hybrid_state_snapshot_saves_total",
                                  "GDN state snapshots saved at snapshot-interval block boundaries.", m);
    hybrid_->evictions = r.AddCounter("pagellm:hybrid_state_snapshot_evictions_total",
                                      "GDN state snapshots evicted (least recently used) to make room.", m);
  }
  hybrid_->slots_used->Set(idle ? 0 : h.num_state_slots_used);
  hybrid_->slots_capacity->Set(h.num_state_slots);
  hybrid_->snapshots_used->Set(h.num_snapshots_used);
  hybrid_->snapshots_capacity->Set(h.num_snapshots);
  hybrid_->hits->SetCumulative(static_cast<double>(h.snapshot_hits));
  hybrid_->restored_tokens->SetCumulative(static_cast<double>(h.snapshot_hit_tokens));
  hybrid_->saves->SetCumulative(static_cast<double>(h.snapshot_saves));
  hybrid_->evictions->SetCumulative(static_cast<double>(h.snapshot_evictions));
}

std::string ServerMetrics::Render(const EngineStats& stats, bool idle) {
  SyncEngine(stats, idle);
  return registry_.Render();
}

std::string ServerMetrics::LogLine(const EngineStats& s, bool idle, double now_s) {
  SyncEngine(s, idle);
  std::lock_guard<std::mutex> lock(mu_);
  double dt = now_s - log_last_s_;
  int64_t prompt = s.prompt_tokens_total - log_prompt_, gen = s.generation_tokens_total - log_generation_;
  int64_t queries = s.prefix_cache_queries - log_queries_, hits = s.prefix_cache_hits - log_hits_;
  bool first = log_last_s_ == 0.0;
  log_last_s_ = now_s;
  log_prompt_ = s.prompt_tokens_total;
  log_generation_ = s.generation_tokens_total;
  log_queries_ = s.prefix_cache_queries;
  log_hits_ = s.prefix_cache_hits;
  if (first || dt <= 0.0 || (idle && prompt == 0 && gen == 0)) return "";
  return fmt::format(
      "Avg prompt throughput: {:.1f} tokens/s, Avg generation throughput: {:.1f} tokens/s, Running: {} reqs, "
      "Waiting: {} reqs, KV cache usage: {:.1f}%, Prefix cache hit rate: {:.1f}%",
      prompt / dt, gen / dt, idle ? 0 : s.num_running, idle ? 0 : s.num_waiting, idle ? 0.0 : s.kv_cache_usage * 100.0,
      queries > 0 ? 100.0 * static_cast<double>(hits) / static_cast<double>(queries) : 0.0);
}

}  // namespace pagellm::server
