#include "bench/server_counters.h"

#include <chrono>
#include <limits>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <fmt/format.h>

namespace pagellm::bench {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

// A counter under its exposition name (name_total) or the bare name older servers use.
std::optional<double> FindCounter(const PrometheusSamples& samples, const std::string& name) {
  if (auto it = samples.find(name + "_total"); it != samples.end()) return it->second;
  if (auto it = samples.find(name); it != samples.end()) return it->second;
  return std::nullopt;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

CacheCounterDelta DiffCacheCounters(const PrometheusSamples& before, const PrometheusSamples& after) {
  CacheCounterDelta d;
  const auto q0 = FindCounter(before, "vllm:prefix_cache_queries"), q1 = FindCounter(after, "vllm:prefix_cache_queries");
  const auto h0 = FindCounter(before, "vllm:prefix_cache_hits"), h1 = FindCounter(after, "vllm:prefix_cache_hits");
  if (q0 && q1 && h0 && h1) {
    d.prefix_counters_found = true;
    d.prefix_queries = *q1 - *q0;
    d.prefix_hits = *h1 - *h0;
    if (d.prefix_queries > 0) d.hit_rate = d.prefix_hits / d.prefix_queries;
  }
  for (const auto& [name, value] : after) {
    if (name.compare(0, kHybridStateMetricPrefix.size(), kHybridStateMetricPrefix) != 0) continue;
    if (EndsWith(name, "_created")) continue;  // prometheus_client's creation timestamps
    const auto it = before.find(name);
    const bool is_counter = EndsWith(name, "_total");
    d.hybrid_state[name] = is_counter ? value - (it == before.end() ? 0.0 : it->second) : value;
  }
  return d;
}

StatusOr<std::string> FetchHttpText(const HttpTarget& target, const std::string& path) {
  PAGELLM_ASSIGN_OR_RETURN(auto endpoints, ResolveTarget(target));
  asio::io_context io;
  beast::tcp_stream stream(io);
  beast::error_code ec;
  stream.expires_after(std::chrono::seconds(30));
  stream.connect(endpoints, ec);
  if (ec) return UnavailableError(fmt::format("GET {}: connect failed: {}", path, ec.message()));
  http::request<http::empty_body> req{http::verb::get, path, 11};
  req.set(http::field::host, target.HostHeader());
  req.set(http::field::user_agent, "pagellm-bench");
  http::write(stream, req, ec);
  if (ec) return UnavailableError(fmt::format("GET {}: sending failed: {}", path, ec.message()));
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  http::read(stream, buffer, parser, ec);
  if (ec) return UnavailableError(fmt::format("GET {}: reading failed: {}", path, ec.message()));
  if (parser.get().result_int() != 200)
    return UnavailableError(fmt::format("GET {}: HTTP {}", path, parser.get().result_int()));
  stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  return parser.get().body();
}

}  // namespace pagellm::bench
