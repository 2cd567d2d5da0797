#include "metrics/prometheus_text.h"

#include <cstdlib>

namespace pagellm::metrics {
namespace {

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

bool ParseSampleLine(std::string_view line, std::string_view* name, std::string_view* labels, double* value) {
  size_t end = line.find_first_of("{ \t");
  if (end == 0 || end == std::string_view::npos) return false;
  *name = line.substr(0, end);
  *labels = {};
  if (line[end] == '{') {
    const size_t open = end;
    end = SkipLabels(line, end);
    if (end == std::string_view::npos) return false;
    *labels = line.substr(open + 1, end - open - 2);
  }
  const size_t start = line.find_first_not_of(" \t", end);
  if (start == std::string_view::npos || start == end) return false;
  const size_t stop = line.find_first_of(" \t", start);
  const std::string token(line.substr(start, stop == std::string_view::npos ? std::string_view::npos : stop - start));
  char* parsed_end = nullptr;
  *value = std::strtod(token.c_str(), &parsed_end);
  return parsed_end == token.c_str() + token.size();
}

}  // namespace

void ForEachPrometheusSample(std::string_view text,
                             const std::function<void(std::string_view, std::string_view, double)>& fn) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos || line[first] == '#') continue;
    std::string_view name, labels;
    double value = 0.0;
    if (ParseSampleLine(line.substr(first), &name, &labels, &value)) fn(name, labels, value);
  }
}

PrometheusSamples ParsePrometheusText(std::string_view text) {
  PrometheusSamples samples;
  ForEachPrometheusSample(text, [&](std::string_view name, std::string_view, double value) {
    samples[std::string(name)] += value;
  });
  return samples;
}

}  // namespace pagellm::metrics
