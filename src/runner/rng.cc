#include "runner/rng.h"

namespace pagellm {
namespace {

uint64_t SplitMix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

}  // namespace

RngState RngState::FromSeed(uint64_t seed) {
  RngState state;
  uint64_t x = seed;
  // splitmix64 never yields four zero words in a row, so the all-zero state
  // (a fixed point of xoshiro) cannot occur.
  for (uint64_t& word : state.s_) word = SplitMix64(x);
  return state;
}

RngState RngState::ForRequest(std::optional<uint64_t> seed, uint64_t engine_seed,
                              uint64_t request_counter, uint64_t sample_idx) {
  if (seed.has_value()) return FromSeed(*seed + sample_idx);
  uint64_t x = engine_seed;
  uint64_t mixed = SplitMix64(x) ^ (request_counter * 0xd1b54a32d192ed03ULL);
  mixed = SplitMix64(mixed) ^ (sample_idx * 0x8cb92ba72f3d8dd7ULL);
  // The final xor keeps an unseeded stream apart from FromSeed(engine_seed) itself.
  return FromSeed(SplitMix64(mixed) ^ 0x5a5a5a5a5a5a5a5aULL);
}

uint64_t RngState::NextU64() {
  const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = Rotl(s_[3], 45);
  return result;
}

}  // namespace pagellm
