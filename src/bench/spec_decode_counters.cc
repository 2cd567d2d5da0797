#include "bench/spec_decode_counters.h"

#include <charconv>

#include <fmt/format.h>

namespace pagellm::bench {
namespace {

constexpr std::string_view kPrefix = "vllm:spec_decode_";

std::string Row(std::string_view label, std::string_view value) { return fmt::format("{:<40} {:<10}\n", label, value); }

}  // namespace

SpecDecodeCounters ReadSpecDecodeCounters(std::string_view metrics_text) {
  SpecDecodeCounters c;
  metrics::ForEachPrometheusSample(metrics_text, [&c](std::string_view name, std::string_view labels, double value) {
    if (name.substr(0, kPrefix.size()) != kPrefix) return;
    name.remove_prefix(kPrefix.size());
    if (name == "num_drafts_total") {
      c.num_drafts += value;
      c.found = true;
    } else if (name == "num_draft_tokens_total") {
      c.num_draft_tokens += value;
    } else if (name == "num_accepted_tokens_total") {
      c.num_accepted_tokens += value;
    } else if (name == "num_accepted_tokens_per_pos_total") {
      constexpr std::string_view kLabel = "position=\"";
      const size_t at = labels.find(kLabel);
      if (at == std::string_view::npos) return;
      size_t pos = 0;
      const char* first = labels.data() + at + kLabel.size();
      const auto [end, ec] = std::from_chars(first, labels.data() + labels.size(), pos);
      if (ec != std::errc() || *end != '"' || pos > 1024) return;
      if (c.accepted_per_pos.size() <= pos) c.accepted_per_pos.resize(pos + 1, 0.0);
      c.accepted_per_pos[pos] += value;
    }
  });
  return c;
}

std::optional<SpecDecodeDelta> DiffSpecDecodeCounters(const SpecDecodeCounters& a, const SpecDecodeCounters& b) {
  if (!b.found || b.num_drafts - a.num_drafts <= 0) return std::nullopt;
  SpecDecodeDelta d;
  d.num_drafts = b.num_drafts - a.num_drafts;
  d.num_draft_tokens = b.num_draft_tokens - a.num_draft_tokens;
  d.num_accepted_tokens = b.num_accepted_tokens - a.num_accepted_tokens;
  d.accepted_per_pos.resize(b.accepted_per_pos.size());
  for (size_t i = 0; i < b.accepted_per_pos.size(); ++i) {
    d.accepted_per_pos[i] = b.accepted_per_pos[i] - (i < a.accepted_per_pos.size() ? a.accepted_per_pos[i] : 0.0);
  }
  return d;
}

std::string FormatSpecDecodeTable(const SpecDecodeDelta& d) {
  std::string out = fmt::format("{:-^50}\n", "Speculative Decoding");
  out += Row("Acceptance rate (%):", fmt::format("{:.2f}", 100.0 * d.acceptance_rate()));
  out += Row("Acceptance length:", fmt::format("{:.2f}", d.acceptance_length()));
  out += Row("Drafts:", fmt::format("{:.0f}", d.num_drafts));
  out += Row("Draft tokens:", fmt::format("{:.0f}", d.num_draft_tokens));
  out += Row("Accepted tokens:", fmt::format("{:.0f}", d.num_accepted_tokens));
  out += "Per-position acceptance (%):\n";
  for (size_t i = 0; i < d.accepted_per_pos.size(); ++i) {
    out += Row(fmt::format("  Position {}:", i), fmt::format("{:.2f}", 100.0 * d.accepted_per_pos[i] / d.num_drafts));
  }
  out += fmt::format("{:=^50}\n", "");
  return out;
}

void AddSpecDecodeJson(const SpecDecodeDelta& d, OrderedJson* result) {
  (*result)["spec_decode_acceptance_rate"] = 100.0 * d.acceptance_rate();
  (*result)["spec_decode_acceptance_length"] = d.acceptance_length();
  (*result)["spec_decode_num_drafts"] = d.num_drafts;
  (*result)["spec_decode_draft_tokens"] = d.num_draft_tokens;
  (*result)["spec_decode_accepted_tokens"] = d.num_accepted_tokens;
  OrderedJson per_pos = OrderedJson::array();
  for (double v : d.accepted_per_pos) per_pos.push_back(100.0 * v / d.num_drafts);
  (*result)["spec_decode_per_position_acceptance_rate"] = std::move(per_pos);
}

}  // namespace pagellm::bench
