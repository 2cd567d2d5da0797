#include "dist/subgroup_communicator.h"

#include <algorithm>
#include <cstring>

#include "common/logging.h"
#include "dist/reduce_sum.h"

namespace pagellm::dist {

SubgroupCommunicator::SubgroupCommunicator(Communicator& world, std::vector<int> members)
    : world_(world), members_(std::move(members)) {
  const auto it = std::find(members_.begin(), members_.end(), world.rank());
  PAGELLM_CHECK(it != members_.end());
  rank_ = static_cast<int>(it - members_.begin());
  f32_srcs_.resize(members_.size());
  bf16_srcs_.resize(members_.size());
}

Status SubgroupCommunicator::AllReduceSum(void* data, int64_t count, DType dtype) {
  if (dtype != DType::kF32 && dtype != DType::kBF16) {
    return InvalidArgumentError("all-reduce: only f32 and bf16 are summed");
  }
  const int n = world_size();
  if (n == 1) return OkStatus();
  const int64_t nbytes = count * static_cast<int64_t>(DTypeSize(dtype));
  if (rank_ != 0) {
    PAGELLM_RETURN_IF_ERROR(world_.Send(data, nbytes, members_[0]));
    return world_.Recv(data, nbytes, members_[0]);
  }
  const size_t need = static_cast<size_t>(nbytes) * static_cast<size_t>(n - 1);
  if (parts_.size() < need) parts_.resize(need);
  for (int m = 1; m < n; ++m) {
    PAGELLM_RETURN_IF_ERROR(world_.Recv(parts_.data() + static_cast<size_t>(nbytes) * (m - 1), nbytes, members_[m]));
  }
  if (dtype == DType::kF32) {
    f32_srcs_[0] = static_cast<const float*>(data);
    for (int m = 1; m < n; ++m) f32_srcs_[m] = reinterpret_cast<const float*>(parts_.data() + nbytes * (m - 1));
    SumF32(f32_srcs_.data(), n, count, static_cast<float*>(data));
  } else {
    bf16_srcs_[0] = static_cast<const uint16_t*>(data);
    for (int m = 1; m < n; ++m) bf16_srcs_[m] = reinterpret_cast<const uint16_t*>(parts_.data() + nbytes * (m - 1));
    SumBf16(bf16_srcs_.data(), n, count, static_cast<uint16_t*>(data));
  }
  for (int m = 1; m < n; ++m) PAGELLM_RETURN_IF_ERROR(world_.Send(data, nbytes, members_[m]));
  return OkStatus();
}

Status SubgroupCommunicator::Broadcast(void* data, int64_t nbytes, int root) {
  if (rank_ != root) return world_.Recv(data, nbytes, members_[static_cast<size_t>(root)]);
  for (int m = 0; m < world_size(); ++m) {
    if (m != root) PAGELLM_RETURN_IF_ERROR(world_.Send(data, nbytes, members_[static_cast<size_t>(m)]));
  }
  return OkStatus();
}

Status SubgroupCommunicator::Gather(const void* send, int64_t nbytes, void* recv, int root) {
  if (rank_ != root) return world_.Send(send, nbytes, members_[static_cast<size_t>(root)]);
  auto* out = static_cast<std::byte*>(recv);
  for (int m = 0; m < world_size(); ++m) {
    std::byte* slot = out + static_cast<size_t>(nbytes) * static_cast<size_t>(m);
    if (m == root) {
      std::memcpy(slot, send, static_cast<size_t>(nbytes));
    } else {
      PAGELLM_RETURN_IF_ERROR(world_.Recv(slot, nbytes, members_[static_cast<size_t>(m)]));
    }
  }
  return OkStatus();
}

Status SubgroupCommunicator::Send(const void* data, int64_t nbytes, int dst) {
  return world_.Send(data, nbytes, members_[static_cast<size_t>(dst)]);
}

Status SubgroupCommunicator::Recv(void* data, int64_t nbytes, int src) {
  return world_.Recv(data, nbytes, members_[static_cast<size_t>(src)]);
}

Status SubgroupCommunicator::Barrier() {
  float token = 0;
  return AllReduceSum(&token, 1, DType::kF32);
}

}  // namespace pagellm::dist
