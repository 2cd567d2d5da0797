#include "kv/block_hash.h"

// Static linking mode exposes XXH3_state_t so the state can live on the stack.
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "common/status.h"

namespace pagellm {

BlockHash HashBlockTokens(const BlockHash& parent, std::span<const int32_t> token_ids,
                          std::string_view extra_key) {
  XXH3_state_t state;
  XXH3_128bits_reset(&state);
  XXH3_128bits_update(&state, &parent.low, sizeof(parent.low));
  XXH3_128bits_update(&state, &parent.high, sizeof(parent.high));
  const uint64_t num_tokens = token_ids.size();
  XXH3_128bits_update(&state, &num_tokens, sizeof(num_tokens));
  XXH3_128bits_update(&state, token_ids.data(), token_ids.size_bytes());
  const uint64_t key_size = extra_key.size();
  XXH3_128bits_update(&state, &key_size, sizeof(key_size));
  XXH3_128bits_update(&state, extra_key.data(), extra_key.size());
  const XXH128_hash_t digest = XXH3_128bits_digest(&state);
  return BlockHash{digest.low64, digest.high64};
}

void AppendBlockHashes(std::span<const int32_t> token_ids, int32_t block_size,
                       int32_t num_full_blocks, std::string_view extra_key,
                       std::vector<BlockHash>* hashes) {
  PAGELLM_CHECK(static_cast<int64_t>(token_ids.size()) >=
                static_cast<int64_t>(num_full_blocks) * block_size);
  for (int32_t block_idx = static_cast<int32_t>(hashes->size()); block_idx < num_full_blocks;
       ++block_idx) {
    const BlockHash parent = block_idx == 0 ? kRootBlockHash : (*hashes)[block_idx - 1];
    hashes->push_back(HashBlockTokens(
        parent, token_ids.subspan(static_cast<size_t>(block_idx) * block_size, block_size),
        extra_key));
  }
}

}  // namespace pagellm
