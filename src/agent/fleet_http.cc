#include "agent/fleet_http.h"

#include <algorithm>
#include <utility>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include "net/http_client.h"

namespace pagellm::agent {

FleetReply FleetCall(const std::string& base_url, const char* method, const std::string& path,
                     const std::string& body, double timeout_s) {
  FleetReply reply;
  StatusOr<net::HttpTarget> target = net::ParseBaseUrl(base_url);
  if (!target.ok()) return reply.error = target.status().message(), reply;
  StatusOr<net::Endpoints> endpoints = net::ResolveTarget(*target);
  if (!endpoints.ok()) return reply.error = endpoints.status().message(), reply;
  net::HttpPost call;
  call.method = method;
  call.host_header = target->HostHeader();
  call.path = target->path_prefix + path;
  call.body = body;
  call.idle_timeout = std::chrono::seconds(std::max<int64_t>(1, static_cast<int64_t>(timeout_s + 0.5)));
  boost::asio::io_context io;
  boost::asio::co_spawn(io, [&]() -> boost::asio::awaitable<void> {
    net::HttpPostResult r = co_await net::StreamingPost(*endpoints, call, [&](std::string_view b) { reply.body.append(b); });
    reply.status = r.status;
    reply.error = r.error;
    if (!r.error_body.empty()) reply.body = r.error_body;
  }, boost::asio::detached);
  io.run();
  return reply;
}

}  // namespace pagellm::agent
