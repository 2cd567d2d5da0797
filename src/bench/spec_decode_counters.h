// What a serving benchmark reports about speculative decoding: the run's deltas of the
// server's vllm:spec_decode_* counters (scraped from /metrics before and after, as
// server_counters.h does for the prefix cache), as vLLM's `bench serve` prints them.
//
//   std::optional<SpecDecodeDelta> d =
//       DiffSpecDecodeCounters(ReadSpecDecodeCounters(before_text), ReadSpecDecodeCounters(after_text));
//   if (d) std::fputs(FormatSpecDecodeTable(*d).c_str(), stdout);   // nullopt: no drafts
//
// Acceptance rate = accepted / draft tokens; acceptance length = 1 + accepted / drafts
// (the bonus token included); position i's rate = accepted at i / drafts.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/json.h"
#include "metrics/prometheus_text.h"

namespace pagellm::bench {

struct SpecDecodeDelta {
  double num_drafts = 0.0;
  double num_draft_tokens = 0.0;
  double num_accepted_tokens = 0.0;
  std::vector<double> accepted_per_pos;  // [position]
  double acceptance_rate() const { return num_draft_tokens > 0 ? num_accepted_tokens / num_draft_tokens : 0.0; }
  double acceptance_length() const { return num_drafts > 0 ? 1.0 + num_accepted_tokens / num_drafts : 1.0; }
};

// The counters in a /metrics page, summed over label sets but kept per `position`.
struct SpecDecodeCounters {
  bool found = false;  // vllm:spec_decode_num_drafts_total is exposed
  double num_drafts = 0.0, num_draft_tokens = 0.0, num_accepted_tokens = 0.0;
  std::vector<double> accepted_per_pos;
};
SpecDecodeCounters ReadSpecDecodeCounters(std::string_view metrics_text);

// nullopt when the server exposes no spec-decode counters or drafted nothing in the run.
std::optional<SpecDecodeDelta> DiffSpecDecodeCounters(const SpecDecodeCounters& before, const SpecDecodeCounters& after);
std::string FormatSpecDecodeTable(const SpecDecodeDelta& d);
// spec_decode_acceptance_rate (%), _acceptance_length, _num_drafts, _draft_tokens,
// _accepted_tokens, _per_position_acceptance_rate (%) into a result JSON.
void AddSpecDecodeJson(const SpecDecodeDelta& d, OrderedJson* result);

}  // namespace pagellm::bench
