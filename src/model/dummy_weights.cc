#include "model/dummy_weights.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "model/convert.h"
#include "tensor/half.h"

namespace pagellm {
namespace {

constexpr float kLogitStd = 8.0f;
constexpr float kRowLogSigma = 0.5f;
constexpr float kQkGain = 1.5f;
constexpr float kQkNormMean = 1.5f;
constexpr float kNormNoise = 0.1f;
constexpr float kBiasStd = 0.1f;
constexpr float kGdnALogMean = -1.0f;
constexpr float kRouterGain = 2.0f;
constexpr uint64_t kGamma = 0x9E3779B97F4A7C15ull;

uint64_t Mix64(uint64_t z) {  // splitmix64 finaliser
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t TensorKey(uint64_t seed, const std::string& name) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a of the name, then mixed with the seed
  for (unsigned char c : name) h = (h ^ c) * 0x100000001b3ull;
  return Mix64(h ^ Mix64(seed + kGamma));
}

// Uniform in [-sqrt(3), sqrt(3)): unit variance.
inline float UnitUniform(uint64_t key, uint64_t i) {
  uint64_t bits = Mix64(key + (i + 1) * kGamma);
  float u = static_cast<float>(bits >> 40) * (1.0f / 16777216.0f);  // [0, 1)
  return (2.0f * u - 1.0f) * 1.7320508f;
}

// Log-normal row factor exp(s z - s^2), z ~ N(0, 1): E[factor^2] = 1, so the logit std
// stays kLogitStd while a few rows (tokens) get much larger norms, as frequent tokens do.
float RowFactor(uint64_t key, int64_t row) {
  uint64_t a = Mix64(~key + static_cast<uint64_t>(row) * kGamma);
  uint64_t b = Mix64(a ^ 0xD1B54A32D192ED03ull);
  double u1 = (static_cast<double>(a >> 11) + 0.5) * (1.0 / 9007199254740992.0);
  double u2 = static_cast<double>(b >> 11) * (1.0 / 9007199254740992.0);
  double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  return static_cast<float>(std::exp(kRowLogSigma * z - kRowLogSigma * kRowLogSigma));
}

// Writes `n` floats as `dtype` starting at element `offset` (the switch runs once per row).
void StoreRow(const float* src, int64_t n, std::byte* out, DType dtype, int64_t offset) {
  switch (dtype) {
    case DType::kF32: std::copy(src, src + n, reinterpret_cast<float*>(out) + offset); return;
    case DType::kBF16: {
      uint16_t* dst = reinterpret_cast<uint16_t*>(out) + offset;
      for (int64_t i = 0; i < n; ++i) dst[i] = F32ToBf16(src[i]);
      return;
    }
    case DType::kF16: {
      uint16_t* dst = reinterpret_cast<uint16_t*>(out) + offset;
      for (int64_t i = 0; i < n; ++i) dst[i] = F32ToF16(src[i]);
      return;
    }
    default: PAGELLM_CHECK(false && "dummy weights must be bf16, f16 or f32");
  }
}

}  // namespace

DummyInit DummyInitFor(const ModelConfig& c, const WeightSpec& spec) {
  const float H = static_cast<float>(c.hidden_size);
  const float residual_gain = 3.0f / std::max(1.0f, std::sqrt(static_cast<float>(c.num_hidden_layers) / 4.0f));
  auto fan_in = [&] { return static_cast<float>(spec.shape.back()); };
  switch (spec.role) {
    case WeightRole::kEmbedding:
      if (!c.tie_word_embeddings) return {0.0f, 1.0f, false};
      [[fallthrough]];
    case WeightRole::kLmHead: return {0.0f, kLogitStd / std::sqrt(H), true};
    // Zero-centred norms (Next / 3.5) store w with the effective weight 1 + w.
    case WeightRole::kFinalNorm:
    case WeightRole::kMtpNorm:
    case WeightRole::kLayerNorm: return {c.zero_centered_norms ? 0.0f : 1.0f, kNormNoise, false};
    case WeightRole::kQkNorm: return {c.zero_centered_norms ? kQkNormMean - 1.0f : kQkNormMean, kNormNoise, false};
    case WeightRole::kQProj:
    case WeightRole::kKProj: return {0.0f, kQkGain / std::sqrt(fan_in()), false};
    case WeightRole::kVProj:
    case WeightRole::kMtpFc:
    case WeightRole::kGateUp: return {0.0f, 1.0f / std::sqrt(fan_in()), false};
    case WeightRole::kOProj:
    case WeightRole::kDown: return {0.0f, residual_gain / std::sqrt(fan_in()), false};
    case WeightRole::kQkvBias:
    case WeightRole::kOBias: return {0.0f, kBiasStd, false};
    // GDN: unit-variance projections; conv taps ~0.5; A = exp(A_log) ~ 0.37 and
    // softplus(a + dt_bias) ~ 0.7 give a per-token decay exp(g) ~ 0.77, so the state
    // remembers a few tokens back (HF initialises A in [0, 16), which forgets faster).
    case WeightRole::kGdnInProj:
    case WeightRole::kGdnGateProj: return {0.0f, 1.0f / std::sqrt(fan_in()), false};
    case WeightRole::kGdnConv: return {0.0f, 1.0f / std::sqrt(fan_in()), false};
    case WeightRole::kGdnDtBias: return {0.0f, 0.5f, false};
    case WeightRole::kGdnALog: return {kGdnALogMean, 0.5f, false};
    case WeightRole::kGdnNorm: return {1.0f, kNormNoise, false};
    case WeightRole::kGdnOutProj: return {0.0f, residual_gain / std::sqrt(fan_in()), false};
    // MoE: router logits std ~2 so the top-k choice is clear of near-ties.
    case WeightRole::kRouter: return {0.0f, kRouterGain / std::sqrt(fan_in()), false};
    case WeightRole::kExpertGateUp:
    case WeightRole::kSharedGateUp:
    case WeightRole::kSharedExpertGate: return {0.0f, 1.0f / std::sqrt(fan_in()), false};
    case WeightRole::kExpertDown:
    case WeightRole::kSharedDown: return {0.0f, residual_gain / std::sqrt(fan_in()), false};
  }
  return {};
}

void FillDummyTensor(const ModelConfig& config, const WeightSpec& spec, uint64_t seed, DType dtype,
                     std::span<std::byte> out) {
  int64_t numel = 1;
  for (int64_t d : spec.shape) numel *= d;
  PAGELLM_CHECK(out.size() == static_cast<size_t>(numel) * DTypeSize(dtype));
  const DummyInit init = DummyInitFor(config, spec);
  const uint64_t key = TensorKey(seed, spec.name);
  const int64_t cols = spec.shape.empty() ? 1 : std::max<int64_t>(spec.shape.back(), 1);
  const int64_t rows = numel / cols;
  std::byte* dst = out.data();
  ParallelFor(rows, std::max<int64_t>(1, 65536 / cols), [&](int64_t r0, int64_t r1) {
    std::vector<float> row(static_cast<size_t>(cols));
    for (int64_t r = r0; r < r1; ++r) {
      float scale = init.stddev * (init.lognormal_rows ? RowFactor(key, r) : 1.0f);
      uint64_t base = static_cast<uint64_t>(r * cols);
      for (int64_t c = 0; c < cols; ++c) row[c] = init.mean + scale * UnitUniform(key, base + c);
      StoreRow(row.data(), cols, dst, dtype, r * cols);
    }
  });
}

StatusOr<std::unique_ptr<TensorStore>> GenerateDummyWeights(const ModelConfig& config, uint64_t seed, DType dtype,
                                                            bool with_mtp) {
  if (dtype != DType::kBF16 && dtype != DType::kF16 && dtype != DType::kF32) {
    return InvalidArgumentError(fmt::format("dummy weights cannot be {}", DTypeName(dtype)));
  }
  auto store = std::make_unique<TensorStore>();
  std::vector<WeightSpec> specs = ListWeightSpecs(config);
  if (with_mtp) {
    for (WeightSpec& spec : ListMtpWeightSpecs(config)) specs.push_back(std::move(spec));
  }
  for (const WeightSpec& spec : specs) {
    TensorView& view = store->Allocate(spec.name, dtype, spec.shape);
    FillDummyTensor(config, spec, seed, dtype, std::span<std::byte>(static_cast<std::byte*>(view.data), view.nbytes()));
  }
  return store;
}

}  // namespace pagellm
