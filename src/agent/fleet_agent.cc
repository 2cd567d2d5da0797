#include "agent/fleet_agent.h"

#include <chrono>
#include <cstdlib>

#include <fmt/format.h>

#include "agent/fleet_http.h"
#include "agent/fleet_ops.h"
#include "common/logging.h"
#include "metrics/prometheus_text.h"

namespace pagellm::agent {

FleetAgent::~FleetAgent() {
  stopping_ = true;
  for (std::thread& t : restarts_) t.join();
}

void FleetAgent::Run(const std::atomic<bool>& stop) {
  while (!stop) {
    const double next = SteadyNowS() + options_.interval_s;
    RunRound();
    while (!stop && SteadyNowS() < next) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

WorkerSample FleetAgent::Sample(const std::string& url) {
  WorkerSample s;
  s.url = url;
  FleetReply m = FleetCall(url, "GET", "/metrics", "", options_.timeout_s);
  s.scraped = m.ok();
  if (s.scraped) {
    metrics::PrometheusSamples samples = metrics::ParsePrometheusText(m.body);
    auto it = samples.find("vllm:kv_cache_usage_perc");
    s.kv_usage = it == samples.end() ? 0.0 : it->second;
    s.tokens_total = samples["vllm:prompt_tokens_total"] + samples["vllm:generation_tokens_total"];
  }
  s.probe_ok = s.scraped && ProbeWorker(url, options_.timeout_s);
  s.now_s = SteadyNowS();
  return s;
}

void FleetAgent::RunRound() {
  FleetReply list = FleetCall(options_.router_url, "GET", "/admin/workers", "", options_.timeout_s);
  if (!list.ok()) {
    PLOG_WARN("agent: the router at {} did not answer: {}", options_.router_url, list.error);
    return;
  }
  OrderedJson j = OrderedJson::parse(list.body, nullptr, false);
  if (!j.is_object() || !j.contains("data") || !j["data"].is_array()) return;
  for (const OrderedJson& w : j["data"]) {
    if (!w.is_object() || !w.contains("url") || !w["url"].is_string()) continue;
    WorkerSample s = Sample(w["url"].get<std::string>());
    std::vector<Decision> decisions;
    {
      std::lock_guard<std::mutex> lock(mu_);
      decisions = eval_.Observe(s);
    }
    for (const Decision& d : decisions) Execute(d);
  }
}

OrderedJson FleetAgent::RouterPost(const std::string& path, const std::string& url) {
  return RouterAdmin(options_.router_url, path, url, options_.timeout_s);
}

void FleetAgent::Execute(const Decision& d) {
  AuditRecord rec{.rule = d.rule, .worker = d.worker, .action = DecisionName(d.kind), .measurement = d.measurement};
  switch (d.kind) {
    case DecisionKind::kDrainAndReclaim:
      PLOG_WARN("agent: {}: KV usage {:.3f} above {} for {:.0f} s: draining it and reclaiming", d.worker,
                d.measurement.value("kv_cache_usage_perc", 0.0), rules_.kv_pressure.above, rules_.kv_pressure.for_s);
      Reclaim(d.worker, &rec);
      break;
    case DecisionKind::kReadmit:
      PLOG_INFO("agent: {}: KV usage back to {:.3f}: admitted again", d.worker,
                d.measurement.value("kv_cache_usage_perc", 0.0));
      rec.command = "POST router /admin/workers/remove; POST router /admin/workers";
      rec.result["remove"] = RouterPost("/admin/workers/remove", d.worker);
      rec.result["add"] = RouterPost("/admin/workers", d.worker);
      break;
    case DecisionKind::kRestart:
    case DecisionKind::kRestartDegraded:
    case DecisionKind::kAlert:
      restarts_.emplace_back([this, d] { Restart(d); });
      return;  // Restart writes its own records
  }
  audit_.Write(rec);
}

namespace {

// Resetting the prefix cache pays off only when idle cached blocks dominate the blocks
// requests hold: those idle blocks are already free in vllm:kv_cache_usage_perc's
// sense, and the reset (like vLLM's) is refused while any request holds blocks.
bool IdleCachedBlocksDominate(const OrderedJson& preempt_answer) {
  return preempt_answer.value("num_idle_cached_blocks", 0) > preempt_answer.value("num_used_blocks", 0);
}

}  // namespace

void FleetAgent::Reclaim(const std::string& worker, AuditRecord* rec) {
  rec->command = "POST router /admin/workers/drain; POST worker /preempt_requests; POST worker /reset_prefix_cache "
                 "(when idle cached blocks dominate)";
  // 1. Stop admitting: new work goes to the other workers.
  rec->result["drain"] = RouterPost("/admin/workers/drain", worker);
  // 2. Preempt the newest running requests by recompute until usage reaches preempt_to.
  const OrderedJson ask = {{"target_kv_cache_usage", rules_.kv_pressure.preempt_to}};
  FleetReply preempt = FleetCall(worker, "POST", "/preempt_requests", ask.dump(), options_.timeout_s);
  const OrderedJson answer = BodyJson(preempt.body);
  rec->result["preempt"] = {{"status", preempt.status}, {"body", answer}};
  OrderedJson freed = OrderedJson::object();
  if (preempt.ok() && answer.is_object()) {
    freed["preempt"] = {{"requests", answer.value("num_preempted_requests", 0)},
                        {"blocks", answer.value("num_freed_blocks", 0)},
                        {"cached_blocks_kept", answer.value("num_freed_cached_blocks", 0)}};
  }
  // 3. Reset the prefix cache only when it can free something (a worker without
  // /preempt_requests, e.g. plain vLLM, gets the reset tried as before).
  const bool known = preempt.ok() && answer.is_object();
  if (!known || IdleCachedBlocksDominate(answer)) {
    FleetReply reset = FleetCall(worker, "POST", "/reset_prefix_cache", "{}", options_.timeout_s);
    const OrderedJson reset_body = BodyJson(reset.body);
    rec->result["reset_prefix_cache"] = {{"status", reset.status}, {"body", reset_body}};
    const bool dropped = reset.ok() && reset_body.is_object() && reset_body.value("reset", false);
    freed["reset_prefix_cache"] = {{"cached_blocks_dropped", dropped ? answer.value("num_idle_cached_blocks", 0) : 0}};
  } else {
    rec->result["reset_prefix_cache"] = {
        {"skipped", fmt::format("idle cached blocks ({}) do not dominate the blocks requests hold ({})",
                                answer.value("num_idle_cached_blocks", 0), answer.value("num_used_blocks", 0))}};
  }
  rec->result["freed"] = freed;
  WorkerSample after = Sample(worker);
  if (after.scraped) rec->result["kv_cache_usage_perc_after"] = after.kv_usage;
}

void FleetAgent::Restart(Decision d) {
  const UnreadyRule& u = rules_.unready;
  AuditRecord rec{.rule = d.rule, .worker = d.worker, .action = DecisionName(d.kind), .measurement = d.measurement};
  rec.result["drain"] = RouterPost("/admin/workers/drain", d.worker);
  if (d.kind == DecisionKind::kRestart || d.kind == DecisionKind::kRestartDegraded) {
    const bool degraded = d.kind == DecisionKind::kRestartDegraded;
    const std::string command = ForWorker(degraded ? u.fallback_command : u.restart_command, d.worker);
    rec.command = command;
    if (degraded) {
      PLOG_ERROR("agent: ALERT {}: its restarts are failing ({} in the window, last came back: {}): restarting it in "
                 "degraded mode ({})", d.worker, d.measurement.value("restarts_in_window", 0),
                 !d.measurement.value("last_restart_failed", false), command);
    } else {
      PLOG_WARN("agent: {}: {} failed probes: restarting ({})", d.worker, u.failures, command);
    }
    rec.result["exit_code"] = RunShellCommand(command, u.restart_timeout_s);
  } else {
    PLOG_ERROR("agent: ALERT {}: {} failed probes and no restart_command: drained, waiting for it", d.worker,
               u.failures);
  }
  const double deadline = SteadyNowS() + u.restart_timeout_s;
  bool back = false;
  while (!stopping_ && SteadyNowS() < deadline && !(back = Sample(d.worker).probe_ok)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int64_t>(options_.interval_s * 1000)));
  }
  rec.result["ready_again"] = back;
  if (back) {
    rec.result["remove"] = RouterPost("/admin/workers/remove", d.worker);
    rec.result["add"] = RouterPost("/admin/workers", d.worker);
    PLOG_INFO("agent: {}: answering again, admitted", d.worker);
  }
  audit_.Write(rec);
  std::lock_guard<std::mutex> lock(mu_);
  eval_.OnRestartDone(d.worker, back, SteadyNowS());
}

}  // namespace pagellm::agent
