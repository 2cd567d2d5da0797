// A minimal streaming HTTP/1.1 client on Boost.Asio/Beast coroutines: one POST per
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

namespace pagellm::bench {

// Where the server is: parsed from --base-url (http only) or --host/--port.
struct HttpTarget {
  std::string host = "127.0.0.1";
  uint16_t port = 8000;
  std::string path_prefix;  // "" or "/prefix" (no trailing slash), put in front of --endpoint
  std::string HostHeader() const;
};

// "http://HOST[:PORT][/PREFIX]"; IPv6 hosts in brackets. https is refused (no TLS here).
StatusOr<HttpTarget> ParseBaseUrl(std::string_view url);

struct HttpPost {
  std::string host_header;
  std::string path;
  std::string body;  // JSON
  std::vector<std::pair<std::string, std::string>> headers;
  std::chrono::seconds idle_timeout{6 * 3600};  // longest silence on the connection
};

struct HttpPostResult {
  int status = 0;      // HTTP status, 0 when none was received
  std::string error;   // empty when a complete 200 response was read
};

// Called with each piece of a 200 response's (de-chunked) body as it arrives.
using BodyBytesFn = std::function<void(std::string_view bytes)>;

boost::asio::awaitable<HttpPostResult> StreamingPost(const boost::asio::ip::tcp::resolver::results_type& endpoints,
                                                     const HttpPost& post, BodyBytesFn on_body);

// Synchronous name resolution of the target (done once, before any request).
StatusOr<boost::asio::ip::tcp::resolver::results_type> ResolveTarget(const HttpTarget& target);

}  // namespace pagellm::bench
