#include "agent/rollout.h"

#include <cmath>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "agent/fleet_http.h"
#include "agent/fleet_ops.h"
#include "agent/latency_histogram.h"
#include "common/logging.h"
#include "metrics/prometheus_text.h"

namespace pagellm::agent {
namespace {

constexpr const char* kTtft = "vllm:time_to_first_token_seconds";
constexpr const char* kItl = "vllm:inter_token_latency_seconds";
constexpr int kWarmupRequests = 5;

void Sleep(double s) { std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int64_t>(s * 1000))); }

double Round4(double v) { return std::isnan(v) ? -1.0 : std::round(v * 1e4) / 1e4; }

}  // namespace

// The workers' TTFT and ITL histograms now (summed over `urls`).
Rollout::Window Rollout::Scrape(const std::vector<std::string>& urls) const {
  Window out;
  for (const std::string& url : urls) {
    FleetReply r = FleetCall(url, "GET", "/metrics", "", options_.timeout_s);
    if (!r.ok()) continue;
    out.ttft.Add(LatencyHistogram::Parse(r.body, kTtft));
    out.itl.Add(LatencyHistogram::Parse(r.body, kItl));
  }
  return out;
}

void Rollout::Record(const std::string& worker, const std::string& action, const std::string& command,
                     OrderedJson result) {
  audit_.Write({.rule = "rollout", .worker = worker, .action = action, .command = command, .result = std::move(result)});
}

Status Rollout::WaitIdle(const std::string& url) {
  const double deadline = SteadyNowS() + options_.drain_timeout_s;
  while (SteadyNowS() < deadline) {
    FleetReply r = FleetCall(url, "GET", "/metrics", "", options_.timeout_s);
    if (!r.ok()) return OkStatus();  // gone already: nothing left to finish
    metrics::PrometheusSamples s = metrics::ParsePrometheusText(r.body);
    if (s["vllm:num_requests_running"] + s["vllm:num_requests_waiting"] == 0) return OkStatus();
    Sleep(0.2);
  }
  return UnavailableError(fmt::format("{} still had requests after {:.0f} s of draining", url, options_.drain_timeout_s));
}

Status Rollout::WaitReady(const std::string& url) {
  const double deadline = SteadyNowS() + options_.ready_timeout_s;
  while (SteadyNowS() < deadline) {
    if (ProbeWorker(url, options_.timeout_s)) return OkStatus();
    Sleep(0.3);
  }
  return UnavailableError(fmt::format("{} did not answer a 1-token generation within {:.0f} s", url,
                                      options_.ready_timeout_s));
}

// Drain, wait idle, stop, start `command`, wait ready, readmit.
Status Rollout::Replace(const std::string& url, const std::string& command, const char* what) {
  OrderedJson drain = RouterAdmin(options_.router_url, "/admin/workers/drain", url, options_.timeout_s);
  Record(url, "drain", "POST router /admin/workers/drain", drain);
  if (drain["status"] != 200) return UnavailableError(fmt::format("the router refused to drain {}", url));
  PAGELLM_RETURN_IF_ERROR(WaitIdle(url));
  const std::string stop = ForWorker(options_.stop_command, url);
  const int stopped = RunShellCommand(stop, options_.drain_timeout_s);
  // The old process may take a moment to let go of its port.
  const double deadline = SteadyNowS() + options_.drain_timeout_s;
  while (SteadyNowS() < deadline && FleetCall(url, "GET", "/health", "", 1.0).status != 0) Sleep(0.1);
  Record(url, "stop", stop, {{"exit_code", stopped}});
  const std::string start = ForWorker(command, url);
  const int started = RunShellCommand(start, options_.ready_timeout_s);
  Status ready = WaitReady(url);
  // A fresh process is slow at first (pages of weights and KV touched the first time,
  // threads spun up): warm it before it is judged, as traffic would.
  int warm = 0;
  for (int i = 0; ready.ok() && i < kWarmupRequests; ++i) warm += ProbeWorker(url, options_.timeout_s);
  Record(url, std::string("start_") + what, start, {{"exit_code", started}, {"ready", ready.ok()}, {"warmup_ok", warm}});
  PAGELLM_RETURN_IF_ERROR(ready);
  OrderedJson removed = RouterAdmin(options_.router_url, "/admin/workers/remove", url, options_.timeout_s);
  OrderedJson added = RouterAdmin(options_.router_url, "/admin/workers", url, options_.timeout_s);
  Record(url, "readmit", "POST router /admin/workers/remove; POST router /admin/workers",
         {{"remove", removed}, {"add", added}});
  return OkStatus();
}

Status Rollout::RollOne(const std::string& url, const Peers& peers, const Window& baseline) {
  const std::vector<std::string>& peer_urls = peers.urls;
  PLOG_INFO("rollout: {}: replacing it with the new version", url);
  PAGELLM_RETURN_IF_ERROR(Replace(url, options_.new_command, "new"));
  Sleep(options_.initial_delay_s);  // let the restart's backlog settle first
  // Compare over the same window: the new worker against the old ones beside it.
  Window new0 = Scrape({url}), old0 = Scrape(peer_urls);
  Window new1, old1;
  double waited = 0;
  for (int w = 0; w < 3; ++w) {  // up to three windows until the new worker served enough
    Sleep(options_.window_s);
    waited += options_.window_s;
    new1 = Scrape({url});
    old1 = Scrape(peer_urls);
    if (new1.ttft.Minus(new0.ttft).count() >= static_cast<double>(options_.min_requests)) break;
  }
  const LatencyHistogram new_ttft = new1.ttft.Minus(new0.ttft), new_itl = new1.itl.Minus(new0.itl);
  const bool vs_baseline = peer_urls.empty();
  const LatencyHistogram old_ttft = vs_baseline ? baseline.ttft : old1.ttft.Minus(old0.ttft);
  const LatencyHistogram old_itl = vs_baseline ? baseline.itl : old1.itl.Minus(old0.itl);
  const double n_ttft = new_ttft.Quantile(0.99), o_ttft = old_ttft.Quantile(0.99);
  const double n_itl = new_itl.Quantile(0.99), o_itl = old_itl.Quantile(0.99);
  const double limit = 1.0 + options_.max_regression;
  const bool enough = new_ttft.count() >= static_cast<double>(options_.min_requests) && old_ttft.count() > 0;
  const double slack = options_.regression_slack_s;
  const bool worse = enough && ((n_ttft > limit * o_ttft + slack) ||
                                (!std::isnan(n_itl) && !std::isnan(o_itl) && n_itl > limit * o_itl + slack));
  Record(url, "compare", "",
         {{"window_s", waited}, {"initial_delay_s", options_.initial_delay_s}, {"compared_with", vs_baseline ? "the worker before the rollout" : peers.what},
          {"requests_new", new_ttft.count()}, {"requests_old", old_ttft.count()},
          {"p99_ttft_new_s", Round4(n_ttft)}, {"p99_ttft_old_s", Round4(o_ttft)}, {"p99_itl_new_s", Round4(n_itl)},
          {"p99_itl_old_s", Round4(o_itl)}, {"max_regression", options_.max_regression}, {"regression_slack_s", options_.regression_slack_s},
          {"verdict", !enough ? "not enough requests to judge: kept" : worse ? "regression" : "ok"}});
  if (!worse) return OkStatus();
  PLOG_WARN("rollout: {}: P99 TTFT {:.4f} s / ITL {:.4f} s vs {} {:.4f} / {:.4f}: rolling back", url,
            n_ttft, n_itl, vs_baseline ? "before" : peers.what, o_ttft, o_itl);
  if (options_.old_command.empty()) {
    RouterAdmin(options_.router_url, "/admin/workers/drain", url, options_.timeout_s);
    Record(url, "rollback", "", {{"done", false}, {"why", "no --old command: the new worker is left drained"}});
    return AbortedError(fmt::format("{} regressed and there is no --old command to roll back with", url));
  }
  Status back = Replace(url, options_.old_command, "old");
  Record(url, "rollback", "", {{"done", back.ok()}});
  PAGELLM_RETURN_IF_ERROR(back);
  return AbortedError(fmt::format("{} regressed (P99 TTFT {:.4f} s vs {:.4f}, ITL {:.4f} vs {:.4f}); rolled back, "
                                  "rollout stopped", url, n_ttft, o_ttft, n_itl, o_itl));
}

Status Rollout::Run() {
  FleetReply list = FleetCall(options_.router_url, "GET", "/admin/workers", "", options_.timeout_s);
  if (!list.ok()) return UnavailableError(fmt::format("the router at {} did not answer: {}", options_.router_url, list.error));
  OrderedJson j = OrderedJson::parse(list.body, nullptr, false);
  std::vector<std::string> urls;
  if (j.is_object() && j.contains("data") && j["data"].is_array()) {
    for (const OrderedJson& w : j["data"]) {
      if (w.is_object() && w.value("health", "") == "ready") urls.push_back(w.value("url", ""));
    }
  }
  if (urls.empty()) return FailedPreconditionError("the router has no ready worker to roll");
  Window baseline;
  if (urls.size() == 1) {
    PLOG_WARN("rollout: one worker only: nothing serves while it restarts");
    // No peer to compare with: the worker before the restart is what it is held to.
    PLOG_INFO("rollout: measuring the worker's latencies for {:.0f} s before the restart", options_.window_s);
    Window b0 = Scrape(urls);
    Sleep(options_.window_s);
    Window b1 = Scrape(urls);
    baseline = {b1.ttft.Minus(b0.ttft), b1.itl.Minus(b0.itl)};
  }
  for (size_t i = 0; i < urls.size(); ++i) {
    const auto at = urls.begin() + static_cast<std::ptrdiff_t>(i);
    // Peers in the same window: the workers still on the old version; for the last one,
    // the workers rolled before it (each judged against the old version already). A
    // window taken at another time would carry whatever else the machine did then.
    const bool last = i + 1 == urls.size();
    const Peers peers = !last ? Peers{{at + 1, urls.end()}, "old workers"}
                              : Peers{{urls.begin(), at}, "the workers rolled before it"};
    PAGELLM_RETURN_IF_ERROR(RollOne(urls[i], peers, baseline));
  }
  PLOG_INFO("rollout: all {} workers run the new version", urls.size());
  return OkStatus();
}

}  // namespace pagellm::agent
