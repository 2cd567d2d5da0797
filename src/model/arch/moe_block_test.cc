// MoeBlock against a per-token double-precision evaluation of docs/qwen-architectures.md
// §2.5 written in this test (router softmax, top-k, renormalisation, SwiGLU experts,
// sigmoid-gated shared expert). f32 weights on the reference backend: max abs 1e-5.
#include "model/arch/moe_block.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <set>

#include "backend/reference/reference_backend.h"

namespace pagellm {
namespace {

constexpr int64_t kH = 32, kE = 6, kK = 2, kIe = 16, kIs = 24, kT = 7;

struct Fixture {
  ModelConfig config;
  LayerWeights weights;
  std::vector<std::vector<float>> blobs;
  std::mt19937 rng{42};

  TensorView Make(std::vector<int64_t> shape, float scale) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    blobs.emplace_back(static_cast<size_t>(n));
    std::normal_distribution<float> dist(0.0f, scale);
    for (float& v : blobs.back()) v = dist(rng);
    return TensorView{blobs.back().data(), DType::kF32, std::move(shape)};
  }
};

std::unique_ptr<Fixture> Build(bool fused, bool shared, bool norm_topk) {
  auto f = std::make_unique<Fixture>();
  ModelConfig& c = f->config;
  c.hidden_size = kH;
  c.num_experts = kE;
  c.num_experts_per_tok = kK;
  c.moe_intermediate_size = kIe;
  c.shared_expert_intermediate_size = shared ? kIs : 0;
  c.norm_topk_prob = norm_topk;
  c.fused_experts = fused;
  LayerWeights& w = f->weights;
  w.moe_router = f->Make({kE, kH}, 1.0f);
  if (fused) {
    w.experts_gate_up = f->Make({kE, 2 * kIe, kH}, 0.3f);
    w.experts_down = f->Make({kE, kH, kIe}, 0.3f);
  } else {
    for (int64_t e = 0; e < kE; ++e) {
      w.expert_gate_proj.push_back(f->Make({kIe, kH}, 0.3f));
      w.expert_up_proj.push_back(f->Make({kIe, kH}, 0.3f));
      w.expert_down_proj.push_back(f->Make({kH, kIe}, 0.3f));
    }
  }
  if (shared) {
    w.shared_gate_proj = f->Make({kIs, kH}, 0.3f);
    w.shared_up_proj = f->Make({kIs, kH}, 0.3f);
    w.shared_down_proj = f->Make({kH, kIs}, 0.3f);
    w.shared_expert_gate = f->Make({1, kH}, 0.5f);
  }
  return f;
}

// y = W x for W [n, k] row-major at `w`.
std::vector<double> MatVec(const float* w, int64_t n, int64_t k, const std::vector<double>& x) {
  std::vector<double> y(static_cast<size_t>(n), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < k; ++j) y[i] += double{w[i * k + j]} * x[j];
  }
  return y;
}

std::vector<double> SwiGlu(const float* gate, const float* up, const float* down, int64_t inter,
                           const std::vector<double>& x) {
  std::vector<double> g = MatVec(gate, inter, kH, x), u = MatVec(up, inter, kH, x);
  for (int64_t i = 0; i < inter; ++i) g[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
  return MatVec(down, kH, inter, g);
}

// The block for one token, straight from the definition.
std::vector<double> NaiveMoe(const Fixture& f, const std::vector<double>& x) {
  const LayerWeights& w = f.weights;
  std::vector<double> p = MatVec(w.moe_router.as<float>(), kE, kH, x);
  const double max = *std::max_element(p.begin(), p.end());
  double sum = 0.0;
  for (double& v : p) sum += (v = std::exp(v - max));
  for (double& v : p) v /= sum;
  std::vector<int> order(kE);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return p[a] > p[b]; });
  double top_sum = 0.0;
  for (int i = 0; i < kK; ++i) top_sum += p[order[i]];
  std::vector<double> y(kH, 0.0);
  for (int i = 0; i < kK; ++i) {
    const int e = order[i];
    const double weight = f.config.norm_topk_prob ? p[e] / top_sum : p[e];
    const float* gate = f.config.fused_experts ? w.experts_gate_up.as<float>() + e * 2 * kIe * kH
                                               : w.expert_gate_proj[e].as<float>();
    const float* up = f.config.fused_experts ? gate + kIe * kH : w.expert_up_proj[e].as<float>();
    const float* down = f.config.fused_experts ? w.experts_down.as<float>() + e * kH * kIe
                                               : w.expert_down_proj[e].as<float>();
    std::vector<double> out = SwiGlu(gate, up, down, kIe, x);
    for (int64_t j = 0; j < kH; ++j) y[j] += weight * out[j];
  }
  if (f.config.shared_expert_intermediate_size > 0) {
    std::vector<double> out = SwiGlu(w.shared_gate_proj.as<float>(), w.shared_up_proj.as<float>(),
                                     w.shared_down_proj.as<float>(), kIs, x);
    const double s = 1.0 / (1.0 + std::exp(-MatVec(w.shared_expert_gate.as<float>(), 1, kH, x)[0]));
    for (int64_t j = 0; j < kH; ++j) y[j] += s * out[j];
  }
  return y;
}

void CheckAgainstNaive(bool fused, bool shared, bool norm_topk) {
  auto f = Build(fused, shared, norm_topk);
  ReferenceBackend backend;
  auto block = MoeBlock::Create(f->config, f->weights, backend, 16, "layers.0.");
  ASSERT_TRUE(block.ok()) << block.status();
  std::vector<float> x(kT * kH), out(kT * kH);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (float& v : x) v = dist(f->rng);
  (*block)->Forward(x.data(), kT, out.data());
  std::set<int32_t> used;
  for (int32_t e : (*block)->last_expert_ids()) used.insert(e);
  EXPECT_GE(used.size(), 3u) << "routing should spread the 7 tokens over several experts";
  for (int64_t t = 0; t < kT; ++t) {
    std::vector<double> xt(x.begin() + t * kH, x.begin() + (t + 1) * kH);
    std::vector<double> want = NaiveMoe(*f, xt);
    for (int64_t j = 0; j < kH; ++j) ASSERT_NEAR(out[t * kH + j], want[j], 1e-5) << "token " << t << " dim " << j;
  }
}

TEST(MoeBlockTest, PerExpertTensorsMatchDefinition) { CheckAgainstNaive(false, false, true); }
TEST(MoeBlockTest, FusedTensorsWithSharedExpertMatchDefinition) { CheckAgainstNaive(true, true, true); }
TEST(MoeBlockTest, WithoutTopkRenormalisation) { CheckAgainstNaive(false, true, false); }

TEST(MoeBlockTest, RenormalisedWeightsSumToOne) {
  auto f = Build(true, false, true);
  ReferenceBackend backend;
  auto block = MoeBlock::Create(f->config, f->weights, backend, 4, "");
  ASSERT_TRUE(block.ok()) << block.status();
  std::vector<float> x(2 * kH, 0.5f), out(2 * kH);
  x[3] = -2.0f;
  (*block)->Forward(x.data(), 2, out.data());
  const auto& w = (*block)->last_expert_weights();
  EXPECT_NEAR(w[0] + w[1], 1.0f, 1e-6f);
  EXPECT_GE(w[0], w[1]);
}

TEST(MoeBlockTest, RejectsWrongExpertShape) {
  auto f = Build(true, false, true);
  f->weights.experts_down.shape = {kE, kIe, kH};  // transposed
  ReferenceBackend backend;
  auto block = MoeBlock::Create(f->config, f->weights, backend, 4, "layers.3.");
  ASSERT_FALSE(block.ok());
  EXPECT_NE(block.status().message().find("layers.3.mlp.experts.down_proj"), std::string::npos)
      << block.status();
}

}  // namespace
}  // namespace pagellm
