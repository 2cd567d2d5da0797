#include "bench/server_counters.h"

#include <chrono>
#include <cstdlib>
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

// Index just past the label set starting at text[open] == '{', or npos if unclosed.
// Label values are quoted and may hold escaped quotes, spaces and braces.
size_t SkipLabels(std::string_view text, size_t open) {
  bool in_quotes = false;
  for (size_t i = open + 1; i < text.size(); ++i) {
    const char c = text[i];
    if (in_quotes) {
      if (c == '\\') ++i;
      else if (c == '"') in_quotes = false;
    } else if (c == '"') {
      in_quotes = true;
    } else if (c == '}') {
      return i + 1;
    }
  }
  return std::string_view::npos;
}

bool ParseSampleLine(std::string_view line, std::string* name, double* value) {
  size_t end = line.find_first_of("{ \t");
  if (end == 0 || end == std::string_view::npos) return false;
  *name = std::string(line.substr(0, end));
  if (line[end] == '{') {
    end = SkipLabels(line, end);
    if (end == std::string_view::npos) return false;
  }
  const size_t start = line.find_first_not_of(" \t", end);
  if (start == std::string_view::npos || start == end) return false;
  const size_t stop = line.find_first_of(" \t", start);
  const std::string token(line.substr(start, stop == std::string_view::npos ? std::string_view::npos : stop - start));
  char* parsed_end = nullptr;
  *value = std::strtod(token.c_str(), &parsed_end);
  return parsed_end == token.c_str() + token.size();
}

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

PrometheusSamples ParsePrometheusText(std::string_view text) {
  PrometheusSamples samples;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos || line[first] == '#') continue;
    std::string name;
    double value = 0.0;
    if (ParseSampleLine(line.substr(first), &name, &value)) samples[name] += value;
  }
  return samples;
}

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
