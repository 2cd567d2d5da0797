// Randomized stress test: many requests, random lengths, shared prefixes, random
// aborts, a tiny KV pool. Every step checks the scheduler's invariants against an
// independent record kept by the test; at the end no block may be leaked.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "sched/scheduler.h"
#include "sched/scheduler_test_util.h"

namespace pagellm {
namespace {

using testing_util::FakeNextToken;

struct StressCase {
  uint32_t seed;
  bool caching;
  bool chunked;
};

class SchedulerStressTest : public ::testing::TestWithParam<StressCase> {};

constexpr int32_t kBlockSize = 4;
constexpr int32_t kMaxModelLen = 48;

// Checks block ownership: every block's ref count equals the number of running
// requests whose table holds it, and free + in-use blocks add up to the pool.
void CheckBlockAccounting(const Scheduler& sched) {
  const KvCacheManager& kv = sched.kv_cache();
  std::map<int32_t, int32_t> refs;
  for (const Request* req : sched.running()) {
    for (int32_t block_id : kv.GetBlockIds(req->request_id())) ++refs[block_id];
  }
  EXPECT_EQ(kv.num_requests(), sched.num_running());
  for (int32_t block_id = 1; block_id < kv.pool().num_blocks(); ++block_id) {
    const auto it = refs.find(block_id);
    ASSERT_EQ(kv.pool().ref_count(block_id), it == refs.end() ? 0 : it->second) << block_id;
  }
  EXPECT_EQ(kv.num_free_blocks() + static_cast<int32_t>(refs.size()),
            kv.pool().num_usable_blocks());
}

TEST_P(SchedulerStressTest, InvariantsHoldEveryStep) {
  const StressCase c = GetParam();
  std::mt19937 rng(c.seed);
  auto uniform = [&](int32_t lo, int32_t hi) {
    return std::uniform_int_distribution<int32_t>(lo, hi)(rng);
  };
  SchedulerConfig config;
  config.batch = {.max_num_batched_tokens = c.chunked ? uniform(6, 40) : kMaxModelLen + 8,
                  .max_num_seqs = uniform(2, 6), .enable_chunked_prefill = c.chunked,
                  .long_prefill_token_threshold = c.chunked ? uniform(0, 12) : 0};
  config.kv_cache = {.num_blocks = kMaxModelLen / kBlockSize + 1 + uniform(0, 3),
                     .block_size = kBlockSize, .enable_prefix_caching = c.caching};
  config.max_model_len = kMaxModelLen;
  auto sched = Scheduler::Create(config).value();

  // Prompts draw from a few shared prefixes so the prefix cache gets hits.
  std::vector<std::vector<int32_t>> prefixes(3);
  for (auto& p : prefixes) for (int i = 0; i < 12; ++i) p.push_back(uniform(1, 50));
  std::map<std::string, std::vector<int32_t>> expected_tokens;  // the test's own record
  std::set<std::string> live;
  int32_t num_added = 0, num_finished = 0, num_preemptions = 0;
  const int32_t kNumRequests = 200;

  for (int32_t step = 0; step < 5000 && (num_added < kNumRequests || !live.empty()); ++step) {
    for (int k = uniform(0, 2); k > 0 && num_added < kNumRequests; --k) {
      std::vector<int32_t> prompt = prefixes[uniform(0, 2)];
      prompt.resize(uniform(1, 12));
      for (int i = uniform(0, 24); i > 0; --i) prompt.push_back(uniform(1, 50));
      const std::string id = "q" + std::to_string(num_added++);
      ASSERT_TRUE(sched->AddRequest(testing_util::MakeRequest(id, prompt, uniform(1, 24))).ok());
      expected_tokens[id] = prompt;
      live.insert(id);
    }
    if (!live.empty() && uniform(0, 9) == 0) {  // random abort
      auto it = live.begin();
      std::advance(it, uniform(0, static_cast<int32_t>(live.size()) - 1));
      ASSERT_TRUE(sched->AbortRequest(*it).ok());
      live.erase(it);
      ++num_finished;
    }

    SchedulerOutput out = sched->Schedule();
    num_preemptions += static_cast<int32_t>(out.preempted_ids.size());
    int32_t total = 0;
    std::set<std::string> seen;
    std::vector<int32_t> sampled;
    for (const ScheduledRequest& s : out.scheduled) {
      ASSERT_TRUE(seen.insert(s.request_id).second);
      const std::vector<int32_t>& tokens = expected_tokens.at(s.request_id);
      ASSERT_GE(s.num_new_tokens, 1);
      ASSERT_LE(s.num_computed_tokens + s.num_new_tokens, static_cast<int32_t>(tokens.size()));
      ASSERT_TRUE(std::equal(s.new_token_ids.begin(), s.new_token_ids.end(),
                             tokens.begin() + s.num_computed_tokens));
      ASSERT_GE(static_cast<int32_t>(s.block_ids.size()) * kBlockSize,
                s.num_computed_tokens + s.num_new_tokens);
      ASSERT_EQ(s.samples, s.num_computed_tokens + s.num_new_tokens ==
                               static_cast<int32_t>(tokens.size()));
      total += s.num_new_tokens;
      sampled.push_back(s.samples ? FakeNextToken(tokens) : -1);
    }
    ASSERT_EQ(total, out.total_num_new_tokens);
    ASSERT_LE(total, config.batch.max_num_batched_tokens);
    ASSERT_LE(sched->num_running(), config.batch.max_num_seqs);
    CheckBlockAccounting(*sched);

    for (const FinishedRequest& f : sched->UpdateFromOutput(out, sampled)) {
      EXPECT_NE(f.status, RequestStatus::kFinishedAborted);
      live.erase(f.request_id);
      ++num_finished;
    }
    for (size_t i = 0; i < out.scheduled.size(); ++i) {
      if (sampled[i] >= 0) expected_tokens[out.scheduled[i].request_id].push_back(sampled[i]);
    }
    CheckBlockAccounting(*sched);
  }
  sched->Schedule();  // applies the last aborts
  EXPECT_EQ(num_finished, kNumRequests);
  EXPECT_FALSE(sched->HasUnfinishedRequests());
  EXPECT_EQ(sched->kv_cache().num_free_blocks(), sched->kv_cache().pool().num_usable_blocks());
  EXPECT_EQ(sched->kv_cache().num_requests(), 0);
  RecordProperty("preemptions", num_preemptions);
  RecordProperty("prefix_hits", static_cast<int>(sched->kv_cache().prefix_cache_hits()));
  EXPECT_GT(num_preemptions, 0) << "the pool is meant to be tight enough to preempt";
}

std::vector<StressCase> AllCases() {
  std::vector<StressCase> cases;
  for (uint32_t seed = 1; seed <= 24; ++seed) cases.push_back({seed, seed % 3 != 0, seed % 4 != 0});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Seeds, SchedulerStressTest, ::testing::ValuesIn(AllCases()));

}  // namespace
}  // namespace pagellm
