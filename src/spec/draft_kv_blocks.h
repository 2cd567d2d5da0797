// DraftKvBlocks: the block ids of a proposer's own paged KV cache (draft model, MTP
// head), handed to sequences as their drafts grow and taken back when they end. Block 0
// is the null block that pads block tables and is never handed out.
//
//   DraftKvBlocks pool(/*num_blocks=*/n, /*block_size=*/16);
//   std::vector<int32_t> blocks;
//   if (!pool.Reserve(blocks, /*num_positions=*/40)) { /* no drafts for it this step */ }
//   pool.Release(blocks);
#pragma once

#include <cstdint>
#include <vector>

#include "common/logging.h"

namespace pagellm {

class DraftKvBlocks {
 public:
  DraftKvBlocks(int32_t num_blocks, int32_t block_size) : num_blocks_(num_blocks), block_size_(block_size) {
    PAGELLM_CHECK(num_blocks >= 2 && block_size > 0);
    // Lowest ids first.
    for (int32_t b = num_blocks - 1; b >= 1; --b) free_.push_back(b);
  }

  // Grows `blocks` to cover positions [0, num_positions); false (and `blocks` unchanged)
  // when the pool has too few free blocks.
  bool Reserve(std::vector<int32_t>& blocks, int32_t num_positions) {
    const size_t need = static_cast<size_t>((num_positions + block_size_ - 1) / block_size_);
    if (need <= blocks.size()) return true;
    if (need - blocks.size() > free_.size()) return false;
    while (blocks.size() < need) {
      blocks.push_back(free_.back());
      free_.pop_back();
    }
    return true;
  }

  void Release(std::vector<int32_t>& blocks) {
    free_.insert(free_.end(), blocks.rbegin(), blocks.rend());
    blocks.clear();
  }

  int32_t num_free() const { return static_cast<int32_t>(free_.size()); }
  int32_t num_usable() const { return num_blocks_ - 1; }
  int32_t block_size() const { return block_size_; }

 private:
  int32_t num_blocks_;
  int32_t block_size_;
  std::vector<int32_t> free_;
};

}  // namespace pagellm
