// A minimal streaming HTTP/1.1 client on Boost.Asio/Beast coroutines: one request per
// connection (as vLLM's client, which uses force_close), the response body handed to a
// callback piece by piece the moment each read completes, so the caller can timestamp
// SSE events. Everything runs on the caller's io_context; hundreds of these coroutines
// share one thread. No exceptions escape: every failure is reported in the result.
//
//   PAGELLM_ASSIGN_OR_RETURN(HttpTarget target, ParseBaseUrl("http://127.0.0.1:8000"));
//   HttpPost post{.host_header = target.HostHeader(), .path = "/v1/completions", .body = body};
//   HttpPostResult r = co_await StreamingPost(endpoints, post, [&](std::string_view bytes) {...});
//   // r.error.empty() <=> a complete 200 response was read
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "common/status.h"

namespace pagellm::net {

// Where the server is: parsed from --base-url (http only) or --host/--port.
struct HttpTarget {
  std::string host = "127.0.0.1";
  uint16_t port = 8000;
  std::string path_prefix;  // "" or "/prefix" (no trailing slash), put in front of --endpoint
  std::string HostHeader() const;
};

// "http://HOST[:PORT][/PREFIX]"; IPv6 hosts in brackets. https is refused (no TLS here).
StatusOr<HttpTarget> ParseBaseUrl(std::string_view url);

using Endpoints = boost::asio::ip::tcp::resolver::results_type;

struct HttpPost {
  std::string host_header;
  std::string path;
  std::string body;  // JSON
  std::vector<std::pair<std::string, std::string>> headers;
  std::chrono::seconds idle_timeout{6 * 3600};  // longest silence on the connection
  std::string method = "POST";  // or "GET" (then no body is sent)
  // Optional: polled after every read; when it turns true the request is abandoned (a
  // router whose client left stops reading the worker, which then aborts the request).
  const std::atomic<bool>* cancelled = nullptr;
  // Optional: runs once the request is written (a router times its added latency).
  std::function<void()> on_sent{};
};

struct HttpPostResult {
  int status = 0;          // HTTP status, 0 when none was received
  std::string error;       // empty when a complete 200 response was read
  std::string error_body;  // a non-200 response's body (its first 64 KiB)
  std::string retry_after; // a non-200 response's Retry-After header ("" when absent)
  bool cancelled = false;  // stopped because *HttpPost::cancelled turned true
};

// Called with each piece of a 200 response's (de-chunked) body as it arrives.
using BodyBytesFn = std::function<void(std::string_view bytes)>;

boost::asio::awaitable<HttpPostResult> StreamingPost(const boost::asio::ip::tcp::resolver::results_type& endpoints,
                                                     const HttpPost& post, BodyBytesFn on_body);

// Synchronous name resolution of the target (done once, before any request).
StatusOr<boost::asio::ip::tcp::resolver::results_type> ResolveTarget(const HttpTarget& target);

}  // namespace pagellm::net
