// `pagellm router --worker URL ...`: the OpenAI-compatible gateway over many serving
// instances (src/router). SIGINT/SIGTERM stop it.
#include <pthread.h>
#include <signal.h>

#include <cctype>
#include <memory>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <fmt/format.h>

#include "cli/commands.h"
#include "common/logging.h"
#include "net/http_server.h"
#include "router/health_checker.h"
#include "router/router_service.h"

namespace pagellm::cli {
namespace {

struct RouterFlags {
  std::vector<std::string> workers;
  std::string worker_file;
  std::string policy = "default";
  std::string host = "127.0.0.1";
  int port = 8000;
  int http_threads = 2;
  double health_interval_s = 0.5;
  double metrics_stale_s = 2.0;
  int max_attempts = 3;
  int max_resumes = 3;
  std::string session_header = "x-session-id";
  size_t max_sessions = 100000;
  router::CacheAwareOptions cache_aware;
};

sigset_t StopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

void WaitForStopSignal() {
  sigset_t set = StopSignals();
  int sig = 0;
  sigwait(&set, &sig);
  PLOG_INFO("router: received {}, stopping", sig == SIGINT ? "SIGINT" : "SIGTERM");
}

Status RunRouter(const RouterFlags& f) {
  PAGELLM_ASSIGN_OR_RETURN(router::PolicyKind policy, router::ParsePolicyKind(f.policy));
  if (f.workers.empty() && f.worker_file.empty()) {
    return InvalidArgumentError("give at least one --worker URL or a --worker-file");
  }
  // Taken by the main thread only: blocked before any thread exists, so all inherit it.
  sigset_t set = StopSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);

  router::WorkerRegistry registry(f.metrics_stale_s);
  for (const std::string& url : f.workers) PAGELLM_RETURN_IF_ERROR(registry.Add(url));
  router::RouterMetrics metrics(router::PolicyName(policy));
  router::RouterOptions options;
  options.policy = policy;
  options.cache_aware = f.cache_aware;
  options.max_attempts = f.max_attempts;
  options.max_resumes = f.max_resumes;
  std::string header = f.session_header;
  for (char& c : header) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  options.session_header = header;
  options.max_sessions = f.max_sessions;
  boost::asio::io_context client_io;
  auto work = boost::asio::make_work_guard(client_io);
  std::thread client_thread([&client_io] { client_io.run(); });
  router::RouterService service(registry, metrics, options, client_io);

  router::HealthCheckerOptions health;
  health.interval = std::chrono::milliseconds(static_cast<int64_t>(f.health_interval_s * 1000));
  health.worker_file = f.worker_file;
  router::HealthChecker checker(registry, health);
  checker.RunRound();  // workers that answer at once are ready before the first request
  checker.Start();

  net::HttpServerOptions http_options;
  http_options.host = f.host;
  http_options.port = f.port;
  http_options.num_threads = f.http_threads;
  net::HttpServer http(http_options, [&service](std::shared_ptr<net::HttpExchange> ex) { service.Handle(std::move(ex)); });
  Status started = http.Start();
  if (started.ok()) {
    PLOG_INFO("router ({} policy, {} workers) ready on http://{}:{}", f.policy, registry.Snapshot(0).size(), f.host,
              http.port());
    WaitForStopSignal();
  }
  checker.Stop();
  http.Stop();
  work.reset();
  client_io.stop();
  client_thread.join();
  return started;
}

}  // namespace

void RegisterRouterCommand(CLI::App& app) {
  auto f = std::make_shared<RouterFlags>();
  CLI::App* cmd = app.add_subcommand("router", "route OpenAI requests over several serving instances");
  cmd->add_option("--worker", f->workers, "a worker's base URL, http://HOST:PORT (repeatable)");
  cmd->add_option("--worker-file", f->worker_file, "a file of worker URLs, one per line, re-read while running");
  cmd->add_option("--policy", f->policy, "round_robin | least_kv | cache_aware | default (prefix 3 : queue 1 : KV 1)")
      ->capture_default_str();
  cmd->add_option("--host", f->host, "address to listen on")->capture_default_str();
  cmd->add_option("--port", f->port, "port to listen on (0: any free port)")->capture_default_str();
  cmd->add_option("--http-threads", f->http_threads, "I/O threads of the front")->capture_default_str();
  cmd->add_option("--health-interval", f->health_interval_s, "seconds between health rounds")->capture_default_str();
  cmd->add_option("--metrics-stale", f->metrics_stale_s, "seconds after which a worker's scraped metrics count as "
                                                         "saturated")->capture_default_str();
  cmd->add_option("--max-attempts", f->max_attempts, "workers tried per request before its first byte")
      ->capture_default_str();
  cmd->add_option("--max-resumes", f->max_resumes, "resumes of one stream cut after its first byte (0: off)")
      ->capture_default_str();
  cmd->add_option("--session-header", f->session_header,
                  "header naming a request's session, kept on one worker (\"\": only OpenAI's `user` field)")
      ->capture_default_str();
  cmd->add_option("--max-sessions", f->max_sessions, "sessions remembered (least recently used forgotten)")
      ->capture_default_str();
  cmd->add_option("--cache-threshold", f->cache_aware.cache_threshold, "cache_aware: prefix share that wins")
      ->capture_default_str();
  cmd->add_option("--balance-abs-threshold", f->cache_aware.balance_abs, "cache_aware: in-flight gap that is imbalance")
      ->capture_default_str();
  cmd->add_option("--balance-rel-threshold", f->cache_aware.balance_rel, "cache_aware: in-flight ratio that is imbalance")
      ->capture_default_str();
  cmd->callback([f] { ReportStatus(RunRouter(*f)); });
}

}  // namespace pagellm::cli
