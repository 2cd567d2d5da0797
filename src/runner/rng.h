// RngState: the per-request pseudo-random stream the sampler draws from.
//
// Each request owns one RngState, so a request's tokens depend only on its seed and
// on how many tokens it has sampled, never on which other requests share the batch
// (vLLM's per-request torch.Generator plays the same role). The generator is
// xoshiro256** (Blackman & Vigna), seeded through splitmix64; it is fully specified,
// so results are identical across compilers and standard libraries, unlike
// std::uniform_real_distribution.
//
//   RngState rng = RngState::ForRequest(params.seed, engine_seed, request_counter);
//   double u = rng.NextUniform();   // [0, 1), advances the state by one step
#pragma once

#include <cstdint>
#include <optional>

namespace pagellm {

class RngState {
 public:
  // Deterministic state from a 64-bit seed (splitmix64 expands it to 256 bits).
  static RngState FromSeed(uint64_t seed);

  // The stream for one sample of one request.
  //   seed set:   FromSeed(seed + sample_idx)  (n > 1 siblings differ, as in vLLM)
  //   seed unset: FromSeed(mix(engine_seed, request_counter, sample_idx)); the engine
  //               passes a counter that is unique per request, so unseeded requests
  //               are reproducible for a given --seed and arrival order.
  static RngState ForRequest(std::optional<uint64_t> seed, uint64_t engine_seed,
                             uint64_t request_counter, uint64_t sample_idx = 0);

  // Next raw 64-bit output; advances the state by one step.
  uint64_t NextU64();
  // Uniform double in [0, 1) from the top 53 bits of NextU64().
  double NextUniform() { return static_cast<double>(NextU64() >> 11) * 0x1.0p-53; }

  bool operator==(const RngState& other) const = default;

 private:
  uint64_t s_[4] = {0, 0, 0, 0};
};

}  // namespace pagellm
