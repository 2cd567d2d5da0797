#include "runner/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace pagellm {
namespace {

std::vector<float> RandomLogits(int32_t n, uint32_t seed, float stddev = 2.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, stddev);
  std::vector<float> logits(n);
  for (float& v : logits) v = dist(gen);
  return logits;
}

SamplingParams Greedy() {
  SamplingParams p;
  p.temperature = 0.0f;
  return p;
}

SamplingParams Random(float temperature) {
  SamplingParams p;
  p.temperature = temperature;
  return p;
}

// Samples one row with no history.
int32_t SampleOne(Sampler& sampler, const std::vector<float>& logits, const SamplingParams& p,
                  RngState* rng, std::span<const int32_t> output_ids = {}) {
  const SamplingRequest req{&p, {}, output_ids, rng};
  return sampler.Sample(logits.data(), static_cast<int32_t>(logits.size()), {&req, 1})[0].token;
}

TEST(SamplerTest, GreedyIsArgmaxWithLowestIdWinningTies) {
  Sampler sampler({});
  const SamplingParams p = Greedy();
  EXPECT_EQ(SampleOne(sampler, {0.1f, 2.0f, -1.0f, 2.0f}, p, nullptr), 1);
  for (uint32_t seed = 0; seed < 20; ++seed) {
    const std::vector<float> logits = RandomLogits(1000 + seed, seed);
    const int32_t expected =
        static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    EXPECT_EQ(SampleOne(sampler, logits, p, nullptr), expected);
  }
}

TEST(SamplerTest, TemperatureZeroAndTinyAreGreedyAndSmallTemperatureIsNearlyGreedy) {
  Sampler sampler({});
  const std::vector<float> logits = {1.0f, 1.2f, 1.1f, 0.0f};
  RngState rng = RngState::FromSeed(1);
  EXPECT_EQ(SampleOne(sampler, logits, Random(0.0f), &rng), 1);
  EXPECT_EQ(SampleOne(sampler, logits, Random(1e-6f), &rng), 1);  // below vLLM's 1e-5 eps
  // T = 1e-3 is sampled, but the runner-up has weight exp(-0.1 / 1e-3) = e^-100.
  for (int i = 0; i < 200; ++i) EXPECT_EQ(SampleOne(sampler, logits, Random(1e-3f), &rng), 1);
  // At T = 1 the other tokens do appear.
  int num_not_argmax = 0;
  for (int i = 0; i < 200; ++i) num_not_argmax += SampleOne(sampler, logits, Random(1.0f), &rng) != 1;
  EXPECT_GT(num_not_argmax, 50);
}

TEST(SamplerTest, TopKOneEqualsGreedy) {
  Sampler sampler({});
  SamplingParams p = Random(1.3f);
  p.top_k = 1;
  RngState rng = RngState::FromSeed(3);
  for (uint32_t seed = 0; seed < 30; ++seed) {
    const std::vector<float> logits = RandomLogits(500, seed);
    EXPECT_EQ(SampleOne(sampler, logits, p, &rng), SampleOne(sampler, logits, Greedy(), nullptr));
  }
}

// Pearson chi-square of `counts` against `probs` (expected = probs * draws).
double ChiSquare(const std::vector<int>& counts, const std::vector<double>& probs, int draws) {
  double chi2 = 0.0;
  for (size_t i = 0; i < counts.size(); ++i) {
    const double expected = probs[i] * draws;
    if (expected == 0.0) {
      EXPECT_EQ(counts[i], 0) << "token " << i << " has probability 0";
      continue;
    }
    chi2 += (counts[i] - expected) * (counts[i] - expected) / expected;
  }
  return chi2;
}

TEST(SamplerTest, EmpiricalDistributionMatchesSoftmaxOverTemperature) {
  Sampler sampler({});
  const std::vector<float> logits = {1.0f, 2.0f, 0.5f, -1.0f, 1.5f, 0.0f};
  const double temperature = 0.7;
  std::vector<double> probs(logits.size());
  double total = 0.0;
  for (size_t i = 0; i < logits.size(); ++i) total += probs[i] = std::exp(logits[i] / temperature);
  for (double& q : probs) q /= total;
  const int kDraws = 20000;
  std::vector<int> counts(logits.size(), 0);
  RngState rng = RngState::FromSeed(12345);
  const SamplingParams p = Random(static_cast<float>(temperature));
  for (int i = 0; i < kDraws; ++i) ++counts[SampleOne(sampler, logits, p, &rng)];
  // 5 degrees of freedom: P(chi2 > 20.5) = 0.001. Ignoring temperature gives ~1000.
  EXPECT_LT(ChiSquare(counts, probs, kDraws), 20.5);
}

TEST(SamplerTest, FilteredDistributionMatchesRenormalisedSurvivors) {
  // softmax(logits) = {.5, .25, .125, .0625, .0625} (powers of two, exact).
  const std::vector<float> logits = {std::log(8.0f), std::log(4.0f), std::log(2.0f), 0.0f, 0.0f};
  struct Case {
    int32_t top_k;
    float top_p;
    float min_p;
    std::vector<double> probs;
  };
  const std::vector<Case> cases = {
      {0, 0.7f, 0.0f, {0.5 / 0.75, 0.25 / 0.75, 0, 0, 0}},      // nucleus {0, 1}
      {2, 1.0f, 0.0f, {2.0 / 3, 1.0 / 3, 0, 0, 0}},             // top-2
      {0, 1.0f, 0.2f, {8.0 / 14, 4.0 / 14, 2.0 / 14, 0, 0}},    // p >= 0.2 * 0.5
      {3, 0.6f, 0.0f, {8.0 / 12, 4.0 / 12, 0, 0, 0}},  // top-3 = {8,4,2}/14; 8/14 < 0.6
  };
  Sampler sampler({});
  for (const Case& c : cases) {
    SamplingParams p = Random(1.0f);
    p.top_k = c.top_k;
    p.top_p = c.top_p;
    p.min_p = c.min_p;
    RngState rng = RngState::FromSeed(99);
    const int kDraws = 6000;
    std::vector<int> counts(logits.size(), 0);
    for (int i = 0; i < kDraws; ++i) ++counts[SampleOne(sampler, logits, p, &rng)];
    // <= 2 free degrees: P(chi2 > 13.8) = 0.001.
    EXPECT_LT(ChiSquare(counts, c.probs, kDraws), 13.8) << "k=" << c.top_k << " p=" << c.top_p;
  }
}

TEST(SamplerTest, SameSeedSameTokensRegardlessOfBatchComposition) {
  const int32_t vocab = 300;
  SamplingParams target = Random(0.9f);
  target.top_p = 0.9f;
  target.seed = 2024;
  std::vector<SamplingParams> others(4, Random(1.0f));
  others[0] = Greedy();
  others[1].top_k = 5;
  others[2].seed = 2024;  // same seed, different knobs: must not disturb the target
  others[3].presence_penalty = 1.0f;
  Sampler alone_sampler({});
  Sampler batch_sampler({});
  RngState alone_rng = RngState::ForRequest(target.seed, 0, 0);
  RngState batch_rng = RngState::ForRequest(target.seed, 0, 0);
  std::vector<RngState> other_rngs;
  for (uint64_t i = 0; i < others.size(); ++i) other_rngs.push_back(RngState::FromSeed(i));
  std::vector<int32_t> alone_out, batch_out;
  for (uint32_t step = 0; step < 40; ++step) {
    std::vector<float> batch_logits;
    for (uint32_t row = 0; row < 5; ++row) {
      const std::vector<float> r = RandomLogits(vocab, step * 10 + row);
      batch_logits.insert(batch_logits.end(), r.begin(), r.end());
    }
    const std::vector<float> target_row(batch_logits.begin() + 2 * vocab,
                                        batch_logits.begin() + 3 * vocab);
    alone_out.push_back(SampleOne(alone_sampler, target_row, target, &alone_rng, alone_out));
    std::vector<SamplingRequest> reqs = {{&others[0], {}, {}, &other_rngs[0]},
                                         {&others[1], {}, {}, &other_rngs[1]},
                                         {&target, {}, batch_out, &batch_rng},
                                         {&others[2], {}, {}, &other_rngs[2]},
                                         {&others[3], {}, {}, &other_rngs[3]}};
    batch_out.push_back(batch_sampler.Sample(batch_logits.data(), vocab, reqs)[2].token);
  }
  EXPECT_EQ(alone_out, batch_out);
  // And the stream is really random: a different seed diverges.
  SamplingParams other_seed = target;
  other_seed.seed = 7;
  RngState rng7 = RngState::ForRequest(other_seed.seed, 0, 0);
  std::vector<int32_t> out7;
  for (uint32_t step = 0; step < 40; ++step) {
    const std::vector<float> r = RandomLogits(vocab, step * 10 + 2);
    out7.push_back(SampleOne(alone_sampler, r, other_seed, &rng7, out7));
  }
  EXPECT_NE(out7, alone_out);
}

TEST(SamplerTest, RepetitionPenaltyFlipsArgmaxExactlyAtHandComputedThreshold) {
  Sampler sampler({});
  const std::vector<int32_t> prompt = {0, 2};
  auto run = [&](const std::vector<float>& logits, float penalty) {
    SamplingParams p = Greedy();
    p.repetition_penalty = penalty;
    const SamplingRequest req{&p, prompt, {}, nullptr};
    return sampler.Sample(logits.data(), static_cast<int32_t>(logits.size()), {&req, 1})[0].token;
  };
  // Positive: 3.0 / 1.03 = 2.913 > 2.9 keeps token 0; 3.0 / 1.04 = 2.885 < 2.9 flips.
  EXPECT_EQ(run({3.0f, 2.9f, -5.0f}, 1.03f), 0);
  EXPECT_EQ(run({3.0f, 2.9f, -5.0f}, 1.04f), 1);
  // Negative: all logits < 0; -1.0 * 1.04 = -1.04 > -1.05 keeps 0; * 1.06 flips to 1.
  EXPECT_EQ(run({-1.0f, -1.05f, -9.0f}, 1.04f), 0);
  EXPECT_EQ(run({-1.0f, -1.05f, -9.0f}, 1.06f), 1);
}

TEST(SamplerTest, PresenceAndFrequencyPenaltiesUseGeneratedTokensOnly) {
  Sampler sampler({});
  const std::vector<float> logits = {1.0f, 0.5f, 0.0f};
  const std::vector<int32_t> prompt = {1, 1, 1, 1};
  const std::vector<int32_t> output = {0, 0};
  auto run = [&](float presence, float frequency) {
    SamplingParams p = Greedy();
    p.presence_penalty = presence;
    p.frequency_penalty = frequency;
    const SamplingRequest req{&p, prompt, output, nullptr};
    return sampler.Sample(logits.data(), 3, {&req, 1})[0].token;
  };
  EXPECT_EQ(run(0.2f, 0.1f), 0);   // 1 - 0.2 - 2 * 0.1 = 0.6 > 0.5
  EXPECT_EQ(run(0.2f, 0.2f), 1);   // 1 - 0.2 - 2 * 0.2 = 0.4 < 0.5
  EXPECT_EQ(run(0.45f, 0.0f), 0);  // 0.55 > 0.5: presence counts once, not per occurrence
  EXPECT_EQ(run(0.55f, 0.0f), 1);
}

TEST(SamplerTest, LogitBiasSteersGreedy) {
  Sampler sampler({});
  const std::vector<float> logits = {2.0f, 1.0f, 0.0f};
  SamplingParams p = Greedy();
  p.logit_bias = {{2, 2.5f}};
  EXPECT_EQ(SampleOne(sampler, logits, p, nullptr), 2);
  p.logit_bias = {{0, -100.0f}};
  EXPECT_EQ(SampleOne(sampler, logits, p, nullptr), 1);
}

TEST(SamplerTest, LogprobsAreRawLogSoftmaxInDoublePrecision) {
  Sampler sampler({});
  const std::vector<float> logits = RandomLogits(1000, 5, 3.0f);
  double max_logit = *std::max_element(logits.begin(), logits.end());
  double sum = 0.0;
  for (float v : logits) sum += std::exp(static_cast<double>(v) - max_logit);
  const double lse = max_logit + std::log(sum);
  std::vector<int32_t> order(logits.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });

  SamplingParams p = Random(0.5f);  // knobs that must NOT change the reported logprobs
  p.logprobs = 5;
  p.repetition_penalty = 1.5f;
  p.logit_bias = {{order[7], 30.0f}};
  RngState rng = RngState::FromSeed(4);
  const SamplingRequest req{&p, {}, {}, &rng};
  const SampleResult r = sampler.Sample(logits.data(), 1000, {&req, 1})[0];
  EXPECT_EQ(r.token, order[7]);  // the bias made it dominant
  EXPECT_NEAR(r.logprob, logits[r.token] - lse, 1e-5);
  ASSERT_EQ(r.top_logprobs.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(r.top_logprobs[i].first, order[i]);
    EXPECT_NEAR(r.top_logprobs[i].second, logits[order[i]] - lse, 1e-5);
  }
}

TEST(SamplerTest, PaddingIdsAreNeverSampledNorCountedInLogprobs) {
  std::vector<float> logits = RandomLogits(16, 8, 1.0f);
  for (int32_t i = 10; i < 16; ++i) logits[i] = 50.0f;  // padding rows of the lm_head
  Sampler sampler({.num_valid_tokens = 10, .eos_token_ids = {}});
  EXPECT_LT(SampleOne(sampler, logits, Greedy(), nullptr), 10);
  SamplingParams p = Random(2.0f);
  p.logprobs = 3;
  RngState rng = RngState::FromSeed(11);
  double sum = 0.0;
  for (float v : std::vector<float>(logits.begin(), logits.begin() + 10)) sum += std::exp(v);
  for (int i = 0; i < 1000; ++i) {
    const SamplingRequest req{&p, {}, {}, &rng};
    const SampleResult r = sampler.Sample(logits.data(), 16, {&req, 1})[0];
    ASSERT_LT(r.token, 10);
    ASSERT_NEAR(r.logprob, logits[r.token] - std::log(sum), 1e-5);
    for (const auto& [token, logprob] : r.top_logprobs) ASSERT_LT(token, 10);
  }
}

TEST(SamplerTest, MinTokensMasksEosAndStopTokenIds) {
  Sampler sampler({.eos_token_ids = {3}});
  const std::vector<float> logits = {0.0f, 1.0f, 5.0f, 9.0f};  // EOS (3) is the argmax
  SamplingParams p = Greedy();
  p.min_tokens = 2;
  p.stop_token_ids = {2};
  const std::vector<int32_t> one = {1};
  const std::vector<int32_t> two = {1, 1};
  EXPECT_EQ(SampleOne(sampler, logits, p, nullptr, one), 1);  // 3 and 2 masked
  EXPECT_EQ(SampleOne(sampler, logits, p, nullptr, two), 3);  // min_tokens reached
}

}  // namespace
}  // namespace pagellm

namespace pagellm {
namespace {

// Structured outputs: a grammar mask restricts one row without touching its neighbours.
TEST(SamplerTest, TokenMaskRestrictsOnlyItsOwnRow) {
  Sampler sampler({});
  const int32_t vocab = 300;
  std::vector<float> logits = RandomLogits(vocab, 5);
  std::vector<float> batch(logits);
  batch.insert(batch.end(), logits.begin(), logits.end());
  std::vector<uint32_t> mask((vocab + 31) / 32, 0);
  for (int32_t id : {7, 40, 299}) mask[id >> 5] |= 1u << (id & 31);
  const SamplingParams greedy = Greedy(), hot = Random(5.0f);
  const int32_t best = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  int32_t best_allowed = 7;
  for (int32_t id : {40, 299}) if (logits[id] > logits[best_allowed]) best_allowed = id;
  RngState rng = RngState::FromSeed(3);
  for (int i = 0; i < 100; ++i) {
    std::vector<SamplingRequest> reqs = {{&hot, {}, {}, &rng, mask}, {&greedy, {}, {}, nullptr, {}}};
    auto out = sampler.Sample(batch.data(), vocab, reqs);
    EXPECT_TRUE(out[0].token == 7 || out[0].token == 40 || out[0].token == 299) << out[0].token;
    EXPECT_EQ(out[1].token, best);
  }
  std::vector<SamplingRequest> reqs = {{&greedy, {}, {}, nullptr, mask}};
  EXPECT_EQ(sampler.Sample(logits.data(), vocab, reqs)[0].token, best_allowed);
}

TEST(SamplerTest, TokenMaskWinsOverMinTokens) {
  // Only EOS (id 2) is allowed while min_tokens forbids it: the allowed id is taken.
  Sampler sampler(SamplerConfig{.num_valid_tokens = 0, .eos_token_ids = {2}});
  std::vector<float> logits = {0.0f, 1.0f, 0.5f, 2.0f};
  std::vector<uint32_t> mask = {1u << 2};
  SamplingParams p = Greedy();
  p.min_tokens = 5;
  std::vector<SamplingRequest> reqs = {{&p, {}, {}, nullptr, mask}};
  EXPECT_EQ(sampler.Sample(logits.data(), 4, reqs)[0].token, 2);
}

}  // namespace
}  // namespace pagellm
