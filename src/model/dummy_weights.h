// Dummy weights: seeded random tensors with the shapes of a real checkpoint, scaled so
// the model behaves like a trained one numerically (vLLM's `--load-format dummy`,
// but with a peaked next-token distribution instead of near-uniform logits).
//
//   PAGELLM_ASSIGN_OR_RETURN(auto store, GenerateDummyWeights(config, /*seed=*/0, DType::kBF16));
//   PAGELLM_ASSIGN_OR_RETURN(ModelWeights w, BindWeights(config, *store));
//
// Values are a pure function of (seed, tensor name, element index): a counter-based
// splitmix64 hash, so generation is parallel, chunking-independent and identical
// whether tensors are generated in memory or streamed into safetensors files.
//
// Scale scheme (std of a uniform distribution; H hidden, I intermediate, L layers):
//   lm_head rows      8/sqrt(H) times a per-row log-normal factor exp(0.5 z - 0.25)
//                     -> logits std ~8 with a heavy upper tail, so the top-1 logit
//                        usually stands clear of the top-2 (median margin >> 1).
//   embed_tokens      tied: the same as lm_head; untied: 1.0
//   q/k_proj          1.5/sqrt(H)  (attention scores vary: std ~2 before softmax)
//   v/gate/up_proj    1/sqrt(fan_in)
//   o/down_proj       g/sqrt(fan_in), g = 3/max(1, sqrt(L/4)): layer outputs outweigh
//                     the (small, tied) embedding so the prediction depends on context
//                     rather than echoing the last token, and the residual stream grows
//                     only ~sqrt(L)-fold.
//   norm weights      1 +- 0.1;  q/k_norm 1.5 +- 0.1;  biases 0 +- 0.1
//                     (zero-centred norms of Next / 3.5 store 0 +- 0.1 and 0.5 +- 0.1)
//   GDN               in_proj_* 1/sqrt(H); conv1d 1/sqrt(K); A_log -1 +- 0.5;
//                     dt_bias 0 +- 0.5; gated-norm weight 1 +- 0.1; out_proj like o_proj
//   MoE               router 2/sqrt(H); expert/shared gate/up 1/sqrt(H); expert/shared
//                     down like down_proj; shared_expert_gate 1/sqrt(H)
// tools/dummy_weights_check.py measures the resulting margins with a PyTorch forward.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "common/status.h"
#include "model/config.h"
#include "model/tensor_source.h"
#include "model/weight_spec.h"

namespace pagellm {

struct DummyInit {
  float mean = 0.0f;
  float stddev = 0.0f;
  bool lognormal_rows = false;  // multiply each row by exp(0.5 z - 0.25), z ~ N(0, 1)
};

// How `spec` is initialised for `config` (the table above).
DummyInit DummyInitFor(const ModelConfig& config, const WeightSpec& spec);

// Fills `out` (numel(spec.shape) elements of `dtype`, one of bf16/f16/f32) with the
// deterministic random values of `spec` for `seed`.
void FillDummyTensor(const ModelConfig& config, const WeightSpec& spec, uint64_t seed, DType dtype,
                     std::span<std::byte> out);

// Every tensor of ListWeightSpecs(config), in memory; with_mtp adds ListMtpWeightSpecs'.
StatusOr<std::unique_ptr<TensorStore>> GenerateDummyWeights(const ModelConfig& config, uint64_t seed, DType dtype,
                                                            bool with_mtp = false);

}  // namespace pagellm
