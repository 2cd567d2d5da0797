// The load generator: sends each request at its arrival time, never more than
// max_concurrency at once (later ones wait in FIFO order, and their clock starts when
// they are actually sent, as in vLLM), streams all responses on one io_context in the
// calling thread, and stops when every request has finished or failed.
//
//   LoadTarget target{.http = http_target, .path = "/v1/completions", .kind = ApiKind::kCompletions};
//   PAGELLM_ASSIGN_OR_RETURN(LoadResult r, RunLoad(target, specs, arrival_offsets_s, /*max_concurrency=*/64));
//   // r.outputs[i] belongs to specs[i]; r.duration_s = first arrival slot -> last completion
//
// Failures (connection refused, HTTP errors, a stream cut short) are recorded in the
// request's RequestOutput; RunLoad itself fails only if the host cannot be resolved.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "bench/openai_stream.h"
#include "net/http_client.h"
#include "net/sse_parser.h"
#include "bench/serving_metrics.h"
#include "common/status.h"

namespace pagellm::bench {

// The HTTP client lives in net/ (shared with server/ and router/).
using net::HttpPost;
using net::HttpPostResult;
using net::HttpTarget;
using net::ParseBaseUrl;
using net::ResolveTarget;
using net::SseParser;
using net::StreamingPost;

struct LoadTarget {
  HttpTarget http;
  std::string path;  // full request path, prefix included
  ApiKind kind = ApiKind::kCompletions;
  std::vector<std::pair<std::string, std::string>> headers;  // sent with every request
  std::chrono::seconds idle_timeout{6 * 3600};
};

struct LoadResult {
  std::vector<RequestOutput> outputs;  // [num_requests], in spec order
  double duration_s = 0.0;
};

// Sends one streaming request with `body` and fills *out (timings relative to the send,
// start_time_s relative to `run_start`, text, usage, success). Never throws for
// transport or server failures; they land in out->error.
boost::asio::awaitable<void> StreamOneRequest(const LoadTarget& target,
                                              const boost::asio::ip::tcp::resolver::results_type& endpoints,
                                              std::string body, std::chrono::steady_clock::time_point run_start,
                                              RequestOutput* out);

// `arrival_offsets_s` has one entry per spec (seconds after the start). max_concurrency
// <= 0 means unlimited.
StatusOr<LoadResult> RunLoad(const LoadTarget& target, std::span<const RequestSpec> specs,
                             std::span<const double> arrival_offsets_s, int64_t max_concurrency);

}  // namespace pagellm::bench
