// BlockHash: the identity of one FULL KV block for prefix caching.
//
// A block is identified by a chained hash over (parent block hash, the block's token
// ids, extra_key), so equal hashes mean "same tokens at the same positions after the
// same prefix in the same namespace". extra_key is an optional namespace string
// (LoRA adapter name, cache salt, later multimodal content hashes); "" is the default
// namespace. Partial blocks are never hashed.
//
//   BlockHash h0 = HashBlockTokens(kRootBlockHash, tokens.subspan(0, 16), "");
//   BlockHash h1 = HashBlockTokens(h0, tokens.subspan(16, 16), "");
//
// NOTE: 128-bit XXH3. A collision silently reuses the wrong KV (wrong output, or one
// tenant reading another's prefix), so the bound must be far below any hardware error
// rate. A lookup compares one hash against the n cached ones: with 64 bits, n = 1e6
// cached blocks and 1e12 lookups over a server's life give ~1e18 / 1.8e19 ~ 5% odds of
// one collision, which is not negligible; with 128 bits the same is ~3e-21. XXH3 is not
// cryptographic: a deliberately crafted collision is possible, which is what a per-user
// cache salt in extra_key isolates (vLLM offers sha256 for the same reason).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <vector>

namespace pagellm {

struct BlockHash {
  uint64_t low = 0;
  uint64_t high = 0;
  bool operator==(const BlockHash&) const = default;
};

// Parent hash of a sequence's first block. A fixed value keeps hashes reproducible
// across runs (useful for tests and for future cross-process cache sharing).
inline constexpr BlockHash kRootBlockHash{0x9e3779b97f4a7c15ULL, 0x6a09e667f3bcc909ULL};

struct BlockHashHasher {
  size_t operator()(const BlockHash& h) const { return static_cast<size_t>(h.low); }
};

// hash(parent, tokens, extra_key). Lengths are hashed too, so (tokens, key) pairs can
// never alias by shifting bytes from one field into the other.
BlockHash HashBlockTokens(const BlockHash& parent, std::span<const int32_t> token_ids,
                          std::string_view extra_key);

// Chained hashes of the first `num_full_blocks` full blocks of `token_ids`, continuing
// after `prefix` (the hashes already computed for earlier blocks; may be empty).
// Precondition: token_ids.size() >= num_full_blocks * block_size.
void AppendBlockHashes(std::span<const int32_t> token_ids, int32_t block_size,
                       int32_t num_full_blocks, std::string_view extra_key,
                       std::vector<BlockHash>* hashes);

}  // namespace pagellm
