// Relay: one client request carried to workers and its response carried back, as a
// coroutine on the router's client io_context (many share one thread).
//
//   auto job = std::make_shared<RelayJob>(service, exchange, path, body, chat, now);
//   co_spawn(client_io, RunRelay(job), detached);
//
// Streams are relayed event by event the moment each arrives (no buffering beyond one
// SSE event, so events of two attempts are never spliced mid-way); a non-streaming
// response is passed on whole. See router_service.h for retries and resumes.
#pragma once

#include <atomic>
#include <memory>
#include <set>
#include <string>
#include <utility>  // before Boost 1.74's awaitable.hpp, which uses std::exchange
#include <vector>

#include <boost/asio/awaitable.hpp>

#include "common/json.h"
#include "net/http_server.h"
#include "net/sse_parser.h"
#include "router/request_key.h"
#include "router/stream_resume.h"
#include "router/worker_registry.h"

namespace pagellm::router {

class RouterService;

struct RelayJob {
  RelayJob(RouterService& service, std::shared_ptr<net::HttpExchange> ex, std::string path, OrderedJson body,
           bool chat, double read_at_s);

  RouterService& service;
  std::shared_ptr<net::HttpExchange> ex;
  std::string path;
  OrderedJson body;
  bool chat;
  double read_at_s;            // when the router read the request (added-latency start)
  std::string authorization;
  std::string session;           // conversation affinity key ("" = none)
  RequestKey key;
  std::vector<uint64_t> blocks;  // prefix-index blocks of key.text
  StreamResume resume;
  std::set<std::string> tried;   // workers that failed this request (not chosen again)
  std::atomic<bool> cancelled{false};
  bool began = false;            // the client got the stream's header
  bool saw_done = false;         // [DONE] arrived from the current attempt
  bool latency_recorded = false;
};

boost::asio::awaitable<void> RunRelay(std::shared_ptr<RelayJob> job);
// GET `path` from one worker and pass the answer on (for /v1/models).
boost::asio::awaitable<void> RelayGet(std::shared_ptr<net::HttpExchange> ex, WorkerView worker, std::string path);

}  // namespace pagellm::router
