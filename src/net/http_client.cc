#include "net/http_client.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <fmt/format.h>

namespace pagellm::net {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

constexpr size_t kReadChunkBytes = 16 * 1024;
constexpr size_t kErrorBodyBytes = 64 * 1024;
constexpr size_t kErrorMessageBytes = 512;

// Reads the rest of a non-200 response so its message can be reported.
asio::awaitable<std::string> ReadErrorBody(beast::tcp_stream& stream, beast::flat_buffer& buffer,
                                           http::response_parser<http::buffer_body>& parser) {
  std::string body;
  char buf[kReadChunkBytes];
  beast::error_code ec;
  while (!parser.is_done() && body.size() < kErrorBodyBytes) {
    parser.get().body().data = buf;
    parser.get().body().size = sizeof(buf);
    co_await http::async_read_some(stream, buffer, parser, asio::redirect_error(asio::use_awaitable, ec));
    if (ec && ec != http::error::need_buffer) break;
    body.append(buf, sizeof(buf) - parser.get().body().size);
  }
  if (body.size() > kErrorBodyBytes) body.resize(kErrorBodyBytes);
  co_return body;
}

}  // namespace

std::string HttpTarget::HostHeader() const {
  const bool ipv6 = host.find(':') != std::string::npos;
  return ipv6 ? fmt::format("[{}]:{}", host, port) : fmt::format("{}:{}", host, port);
}

StatusOr<HttpTarget> ParseBaseUrl(std::string_view url) {
  constexpr std::string_view kScheme = "http://";
  if (url.substr(0, 8) == "https://")
    return InvalidArgumentError(fmt::format("--base-url {}: https is not supported (no TLS in pagellm bench)", url));
  if (url.substr(0, kScheme.size()) != kScheme)
    return InvalidArgumentError(fmt::format("--base-url {}: expected http://HOST[:PORT][/PREFIX]", url));
  std::string_view rest = url.substr(kScheme.size());
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  HttpTarget target;
  target.path_prefix = slash == std::string_view::npos ? "" : std::string(rest.substr(slash));
  while (!target.path_prefix.empty() && target.path_prefix.back() == '/') target.path_prefix.pop_back();
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return InvalidArgumentError(fmt::format("--base-url {}: unclosed [", url));
    target.host = std::string(authority.substr(1, close - 1));
    if (close + 1 < authority.size() && authority[close + 1] == ':') port_text = authority.substr(close + 2);
  } else {
    const size_t colon = authority.rfind(':');
    target.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port_text = authority.substr(colon + 1);
  }
  if (target.host.empty()) return InvalidArgumentError(fmt::format("--base-url {}: no host", url));
  target.port = 80;
  if (!port_text.empty()) {
    int port = 0;
    for (char c : port_text) {
      if (c < '0' || c > '9' || port > 65535) return InvalidArgumentError(fmt::format("--base-url {}: bad port", url));
      port = port * 10 + (c - '0');
    }
    if (port < 1 || port > 65535) return InvalidArgumentError(fmt::format("--base-url {}: bad port", url));
    target.port = static_cast<uint16_t>(port);
  }
  return target;
}

StatusOr<tcp::resolver::results_type> ResolveTarget(const HttpTarget& target) {
  asio::io_context io;
  tcp::resolver resolver(io);
  beast::error_code ec;
  auto results = resolver.resolve(target.host, std::to_string(target.port), ec);
  if (ec) return UnavailableError(fmt::format("cannot resolve {}: {}", target.host, ec.message()));
  return results;
}

asio::awaitable<HttpPostResult> StreamingPost(const tcp::resolver::results_type& endpoints, const HttpPost& post,
                                              BodyBytesFn on_body) {
  HttpPostResult result;
  beast::tcp_stream stream(co_await asio::this_coro::executor);
  beast::error_code ec;
  auto token = asio::redirect_error(asio::use_awaitable, ec);
  stream.expires_after(post.idle_timeout);
  co_await stream.async_connect(endpoints, token);
  if (ec) {
    result.error = fmt::format("connect failed: {}", ec.message());
    co_return result;
  }
  stream.socket().set_option(tcp::no_delay(true), ec);

  http::request<http::string_body> req{http::string_to_verb(post.method), post.path, 11};
  req.set(http::field::host, post.host_header);
  req.set(http::field::user_agent, "pagellm-bench");
  if (post.method != "GET") req.set(http::field::content_type, "application/json");
  req.set(http::field::accept, post.method == "GET" ? "*/*" : "text/event-stream");
  for (const auto& [name, value] : post.headers) req.set(name, value);
  req.body() = post.body;
  if (post.method != "GET") req.prepare_payload();
  co_await http::async_write(stream, req, token);
  if (ec) {
    result.error = fmt::format("sending the request failed: {}", ec.message());
    co_return result;
  }
  if (post.on_sent) post.on_sent();

  beast::flat_buffer buffer;
  http::response_parser<http::buffer_body> parser;
  // Not boost::none: Boost 1.74 compares lengths against an empty optional as "exceeded".
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  stream.expires_after(post.idle_timeout);
  co_await http::async_read_header(stream, buffer, parser, token);
  if (ec) {
    result.error = fmt::format("reading the response header failed: {}", ec.message());
    co_return result;
  }
  result.status = static_cast<int>(parser.get().result_int());
  if (result.status != 200) {
    const std::string reason(parser.get().reason());
    if (auto it = parser.get().find(http::field::retry_after); it != parser.get().end()) {
      result.retry_after = std::string(it->value());
    }
    result.error_body = co_await ReadErrorBody(stream, buffer, parser);
    result.error = fmt::format("HTTP {} {}: {}", result.status, reason,
                               result.error_body.substr(0, kErrorMessageBytes));
    co_return result;
  }
  char buf[kReadChunkBytes];
  while (!parser.is_done()) {
    parser.get().body().data = buf;
    parser.get().body().size = sizeof(buf);
    stream.expires_after(post.idle_timeout);
    co_await http::async_read_some(stream, buffer, parser, token);
    if (ec == http::error::need_buffer) ec = {};
    const size_t num_bytes = sizeof(buf) - parser.get().body().size;
    if (num_bytes > 0) on_body(std::string_view(buf, num_bytes));
    if (post.cancelled != nullptr && post.cancelled->load()) {
      result.cancelled = true;
      result.error = "cancelled";
      co_return result;
    }
    if (ec) {
      result.error = fmt::format("the response stream broke: {}", ec.message());
      co_return result;
    }
  }
  stream.socket().shutdown(tcp::socket::shutdown_both, ec);
  co_return result;
}

}  // namespace pagellm::net
