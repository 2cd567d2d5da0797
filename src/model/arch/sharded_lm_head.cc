#include "model/arch/sharded_lm_head.h"

#include <algorithm>
#include <cstring>

namespace pagellm {

ShardedLmHead::ShardedLmHead(dist::Communicator& comm, int64_t vocab_size, int64_t shard_rows)
    : comm_(comm), vocab_size_(vocab_size), shard_rows_(shard_rows),
      local_(static_cast<size_t>(kBlockRows * shard_rows)) {
  if (comm.rank() == 0) gathered_.resize(static_cast<size_t>(comm.world_size()) * local_.size());
}

Status ShardedLmHead::Run(Backend& backend, const LinearWeight& lm_head, const float* normed, int64_t num_rows,
                          int64_t hidden, float* logits) {
  const int world = comm_.world_size();
  for (int64_t r0 = 0; r0 < num_rows; r0 += kBlockRows) {
    const int64_t m = std::min(kBlockRows, num_rows - r0);
    backend.Linear(lm_head, normed + r0 * hidden, m, local_.data());  // [m, shard_rows]
    const int64_t block = m * shard_rows_;
    PAGELLM_RETURN_IF_ERROR(comm_.Gather(local_.data(), block * 4, comm_.rank() == 0 ? gathered_.data() : nullptr, 0));
    if (comm_.rank() != 0) continue;
    for (int p = 0; p < world; ++p) {
      const float* part = gathered_.data() + p * block;
      for (int64_t i = 0; i < m; ++i) {
        std::memcpy(logits + (r0 + i) * vocab_size_ + p * shard_rows_, part + i * shard_rows_,
                    static_cast<size_t>(shard_rows_) * sizeof(float));
      }
    }
  }
  return OkStatus();
}

}  // namespace pagellm
