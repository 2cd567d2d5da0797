// Micro-benchmark: Sampler time per row at Qwen's vocabulary (151,936).
//
//   build-samp/src/runner/sampler_benchmark [num_iters]
// Prints the mean time per row for greedy and for temperature 0.7 / top_k 20 /
// top_p 0.95, one row at a time and in a batch of 8 rows.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "runner/sampler.h"

namespace pagellm {
namespace {

constexpr int32_t kVocab = 151936;

double MicrosPerRow(Sampler& sampler, const std::vector<float>& logits, int32_t num_rows,
                    const SamplingParams& params, int num_iters) {
  std::vector<RngState> rngs(num_rows, RngState::FromSeed(1));
  std::vector<SamplingRequest> reqs;
  for (int32_t r = 0; r < num_rows; ++r) reqs.push_back({&params, {}, {}, &rngs[r]});
  sampler.Sample(logits.data(), kVocab, reqs);  // warm-up: sizes the scratch
  const auto start = std::chrono::steady_clock::now();
  int64_t checksum = 0;
  for (int i = 0; i < num_iters; ++i) checksum += sampler.Sample(logits.data(), kVocab, reqs)[0].token;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (checksum < 0) std::printf("impossible\n");
  return seconds * 1e6 / (static_cast<double>(num_iters) * num_rows);
}

void Run(int num_iters) {
  std::mt19937 gen(0);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  std::vector<float> logits(static_cast<size_t>(kVocab) * 8);
  for (float& v : logits) v = dist(gen);
  SamplingParams greedy;
  greedy.temperature = 0.0f;
  SamplingParams nucleus;
  nucleus.temperature = 0.7f;
  nucleus.top_k = 20;
  nucleus.top_p = 0.95f;
  SamplingParams top_p_only;
  top_p_only.temperature = 0.7f;
  top_p_only.top_p = 0.95f;
  SamplingParams with_logprobs = greedy;
  with_logprobs.logprobs = 5;
  Sampler sampler({.num_valid_tokens = 151669, .eos_token_ids = {}});
  struct Row { const char* name; const SamplingParams* params; };
  for (const Row& row : {Row{"greedy", &greedy}, Row{"T0.7 top_k20 top_p0.95", &nucleus},
                         Row{"T0.7 top_p0.95 (no top_k)", &top_p_only},
                         Row{"greedy + logprobs 5", &with_logprobs}}) {
    for (int32_t num_rows : {1, 8}) {
      std::printf("%-28s rows=%d  %8.1f us/row\n", row.name, num_rows,
                  MicrosPerRow(sampler, logits, num_rows, *row.params, num_iters));
    }
  }
}

}  // namespace
}  // namespace pagellm

int main(int argc, char** argv) {
  pagellm::Run(argc > 1 ? std::atoi(argv[1]) : 200);
  return 0;
}
