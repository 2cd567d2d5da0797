// ServerMetrics' pagellm:hybrid_* families: absent for dense models, exact values for
// hybrid ones (copied from EngineStats::hybrid), and an exposition promtool accepts.
// Registered from src/metrics/CMakeLists.txt (server_metrics_test).
#include "server/server_metrics.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace pagellm::server {
namespace {

EngineStats HybridStats() {
  EngineStats s;
  s.num_running = 2;
  s.hybrid = HybridStateStats{.num_state_slots = 8, .num_state_slots_used = 2, .num_snapshots = 5,
                              .num_snapshots_used = 3, .snapshot_hits = 4, .snapshot_hit_tokens = 256,
                              .snapshot_saves = 7, .snapshot_evictions = 2};
  return s;
}

bool Has(const std::string& text, const std::string& line) { return text.find(line + "\n") != std::string::npos; }

TEST(ServerMetricsTest, DenseModelsExportNoHybridFamilies) {
  ServerMetrics metrics("m");
  const std::string text = metrics.Render(EngineStats{}, /*idle=*/false);
  EXPECT_EQ(text.find("pagellm:hybrid"), std::string::npos);
  EXPECT_TRUE(Has(text, "vllm:num_requests_running{model_name=\"m\"} 0"));
}

TEST(ServerMetricsTest, PrefillTokenCapIsExportedAndZeroWhenIdle) {
  ServerMetrics metrics("m");
  EngineStats s;
  s.prefill_token_cap = 96;
  std::string text = metrics.Render(s, /*idle=*/false);
  EXPECT_TRUE(Has(text, "# TYPE pagellm:prefill_token_cap gauge"));
  EXPECT_TRUE(Has(text, "pagellm:prefill_token_cap{model_name=\"m\"} 96"));
  text = metrics.Render(s, /*idle=*/true);
  EXPECT_TRUE(Has(text, "pagellm:prefill_token_cap{model_name=\"m\"} 0"));
}

TEST(ServerMetricsTest, WeightBytesPerGroupAndFormat) {
  ServerMetrics metrics("m");
  metrics.SetWeightFormats({{"embed", DType::kQ6_K, 1, 1000}, {"attention", DType::kQ4_K, 8, 4096},
                            {"attention", DType::kQ6_K, 2, 512}, {"other", DType::kF32, 9, 36}});
  const std::string text = metrics.Render(EngineStats{}, /*idle=*/true);
  EXPECT_TRUE(Has(text, "# TYPE pagellm:weight_bytes gauge"));
  EXPECT_TRUE(Has(text, "pagellm:weight_bytes{model_name=\"m\",group=\"embed\",format=\"q6_K\"} 1000")) << text;
  EXPECT_TRUE(Has(text, "pagellm:weight_bytes{model_name=\"m\",group=\"attention\",format=\"q4_K\"} 4096"));
  EXPECT_TRUE(Has(text, "pagellm:weight_bytes{model_name=\"m\",group=\"attention\",format=\"q6_K\"} 512"));
  EXPECT_TRUE(Has(text, "pagellm:weight_bytes{model_name=\"m\",group=\"other\",format=\"f32\"} 36"));
}

TEST(ServerMetricsTest, HybridStateCacheSeriesCarryTheEngineCounts) {
  ServerMetrics metrics("m");
  EngineStats s = HybridStats();
  std::string text = metrics.Render(s, /*idle=*/false);
  EXPECT_TRUE(Has(text, "# TYPE pagellm:hybrid_state_snapshot_hits_total counter"));
  EXPECT_TRUE(Has(text, "pagellm:hybrid_state_snapshot_hits_total{model_name=\"m\"} 4"));
  EXPECT_TRUE(Has(text, "pagellm:hybrid_state_snapshot_restored_tokens_total{model_name=\"m\"} 256"));
  EXPECT_TRUE(Has(text, "pagellm:hybrid_state_snapshot_saves_total{model_name=\"m\"} 7"));
  EXPECT_TRUE(Has(text, "pagellm:hybrid_state_snapshot_evictions_total{model_name=\"m\"} 2"));
  EXPECT_TRUE(Has(text, "# TYPE pagellm:hybrid_state_snapshots_in_use gauge"));
  EXPECT_TRUE(Has(text, "pagellm:hybrid_state_snapshots_in_use{model_name=\"m\"} 3"));
  EXPECT_TRUE(Has(text, "pagellm:hybrid_state_snapshots_capacity{model_name=\"m\"} 5"));
  EXPECT_TRUE(Has(text, "pagellm:hybrid_state_slots_in_use{model_name=\"m\"} 2"));
  EXPECT_TRUE(Has(text, "pagellm:hybrid_state_slots_capacity{model_name=\"m\"} 8"));

  // Later scrapes update the same series (one HELP/TYPE block each); idle => no slot held.
  s.hybrid.snapshot_hits = 9;
  s.hybrid.num_snapshots_used = 5;
  text = metrics.Render(s, /*idle=*/true);
  EXPECT_TRUE(Has(text, "pagellm:hybrid_state_snapshot_hits_total{model_name=\"m\"} 9"));
  EXPECT_TRUE(Has(text, "pagellm:hybrid_state_snapshots_in_use{model_name=\"m\"} 5"));
  EXPECT_TRUE(Has(text, "pagellm:hybrid_state_slots_in_use{model_name=\"m\"} 0"));
  size_t count = 0;
  for (size_t pos = 0; (pos = text.find("# TYPE pagellm:hybrid_state_snapshot_hits_total", pos)) != std::string::npos;
       ++pos) {
    ++count;
  }
  EXPECT_EQ(count, 1u);
}

// As tests/e2e/serve_test.mjs: promtool must accept the exposition, apart from its lint
// on ':' in names (vLLM's own names trip it too) and vLLM's iteration_tokens_total
// histogram name.
TEST(ServerMetricsTest, HybridExpositionPassesPromtool) {
  ASSERT_EQ(std::system("command -v promtool > /dev/null"), 0)
      << "promtool not found: install the Debian package 'prometheus' (scripts/setup.sh does)";
  ServerMetrics metrics("qwen3.5");
  const std::string path = ::testing::TempDir() + "/hybrid_metrics.txt";
  std::ofstream(path) << metrics.Render(HybridStats(), /*idle=*/false);
  FILE* pipe = popen(("promtool check metrics < " + path + " 2>&1").c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[512];
  while (fgets(buffer, sizeof(buffer), pipe) != nullptr) output += buffer;
  pclose(pipe);
  std::istringstream lines(output);
  std::vector<std::string> problems;
  for (std::string line; std::getline(lines, line);) {
    const bool colon_lint = line.find(" metric names should not contain ':'") != std::string::npos;
    const bool vllm_histogram = line.rfind("vllm:iteration_tokens_total ", 0) == 0;
    if (!line.empty() && !colon_lint && !vllm_histogram) problems.push_back(line);
  }
  EXPECT_TRUE(problems.empty()) << output;
  EXPECT_NE(output.find("pagellm:hybrid_state_snapshot_hits_total metric names should not contain ':'"),
            std::string::npos)
      << "promtool did not see the hybrid families: " << output;
}

}  // namespace
}  // namespace pagellm::server
