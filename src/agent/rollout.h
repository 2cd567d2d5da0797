// Rollout: `pagellm rollout`, a rolling restart of a router's workers with automatic
// rollback. One worker at a time: drain it in the router, wait until it is idle, stop
// it (the operator's stop command), start the new version (the operator's start
// command), wait for a real 1-token generation, let traffic back in, then compare its
// P99 TTFT and ITL over a window with the workers still on the old version over the
// same window, or, for the last worker, with the workers rolled before it (each of them
// judged against the old version; a fleet of one is held to its own window before the
// restart). Always the same window: on a shared machine a window taken at another
// time differs by whatever else ran then. The runbook's rule: more than 15 % worse is
// a regression. A regression rolls that
// worker back to the old command and stops the rollout. Every step is an audit record.
//
//   Rollout r(options, audit);
//   Status s = r.Run();   // OK: all workers run the new version; Aborted: rolled back
#pragma once

#include <string>
#include <vector>

#include "agent/audit_log.h"
#include "agent/latency_histogram.h"
#include "common/status.h"

namespace pagellm::agent {

struct RolloutOptions {
  std::string router_url;
  std::string new_command;   // starts the new version; {url} {host} {port} substituted
  std::string stop_command;  // stops whatever serves {port}
  std::string old_command;   // starts the old version again (rollback); "" = only drain
  double window_s = 60.0;          // comparison window after a worker is back
  // Seconds between the readmission and the window: while a worker was out, the others
  // carried its share and built a backlog that lands on the readmitted one first. Judged
  // inside that burst, a same-version worker looks slower than the pre-rollout baseline.
  double initial_delay_s = 5.0;
  double max_regression = 0.15;    // P99 may rise this much over the old workers'
  // ... and by more than this many seconds: P99 over tens of requests at millisecond
  // scale moves 2-3x between identical workers on a shared host (measured in the tests).
  double regression_slack_s = 0.025;
  int64_t min_requests = 20;       // requests the new worker must serve in a window
  double ready_timeout_s = 120.0;
  double drain_timeout_s = 300.0;
  double timeout_s = 5.0;          // one HTTP call
};

class Rollout {
 public:
  Rollout(RolloutOptions options, AuditLog& audit) : options_(std::move(options)), audit_(audit) {}
  Status Run();

 private:
  struct Window {
    LatencyHistogram ttft, itl;
  };
  struct Peers {
    std::vector<std::string> urls;  // compared with in the same window
    const char* what;               // named in the audit record
  };
  // When peers.urls is empty (a fleet of one) the comparison uses `baseline`.
  Status RollOne(const std::string& url, const Peers& peers, const Window& baseline);
  Window Scrape(const std::vector<std::string>& urls) const;
  Status Replace(const std::string& url, const std::string& command, const char* what);
  Status WaitIdle(const std::string& url);
  Status WaitReady(const std::string& url);
  void Record(const std::string& worker, const std::string& action, const std::string& command, OrderedJson result);

  RolloutOptions options_;
  AuditLog& audit_;
};

}  // namespace pagellm::agent
