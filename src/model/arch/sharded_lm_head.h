// ShardedLmHead: the vocabulary-parallel lm_head. Each rank multiplies the normed rows
// by its [V/N, H] slice; rank 0 gathers the slices and lays them out as full rows.
//
//   ShardedLmHead head(comm, /*vocab_size=*/V, /*shard_rows=*/V / N);
//   PAGELLM_RETURN_IF_ERROR(head.Run(backend, *lm_head, normed, num_rows, hidden, logits));
//   // rank 0: logits [num_rows, V]; other ranks pass logits = nullptr
//
// Rows go through in blocks of kBlockRows, so the buffers stay a few MB whatever the
// batch (prompt scoring asks for a row per token).
#pragma once

#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "dist/communicator.h"

namespace pagellm {

class ShardedLmHead {
 public:
  static constexpr int64_t kBlockRows = 32;
  ShardedLmHead(dist::Communicator& comm, int64_t vocab_size, int64_t shard_rows);

  // normed: [num_rows, hidden]; logits: [num_rows, vocab_size] on rank 0, else nullptr.
  Status Run(Backend& backend, const LinearWeight& lm_head, const float* normed, int64_t num_rows, int64_t hidden,
             float* logits);

 private:
  dist::Communicator& comm_;
  int64_t vocab_size_, shard_rows_;
  std::vector<float> local_;     // [kBlockRows, shard_rows]
  std::vector<float> gathered_;  // rank 0: [world, kBlockRows * shard_rows]
};

}  // namespace pagellm
