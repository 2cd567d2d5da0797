#include "engine/memory_plan.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>

#include <fmt/format.h>

namespace pagellm {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

int64_t ReadCgroupLimit() {
  for (const char* path : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::ifstream in(path);
    std::string value;
    if (in >> value && value != "max") {
      try {
        return std::stoll(value);
      } catch (...) {
      }
    }
  }
  return 0;
}

}  // namespace

int64_t CpuMemoryBytes() {
  int64_t total = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE);
  int64_t cgroup = ReadCgroupLimit();
  if (cgroup > 0 && cgroup < total) total = cgroup;
  return total;
}

double MemoryPlan::max_concurrency() const {
  if (max_model_len <= 0) return 0.0;
  return static_cast<double>(num_kv_tokens()) / max_model_len;
}

std::string MemoryPlan::Summary() const {
  return fmt::format(
      "memory plan: weights {:.2f} GiB, workspace {:.2f} GiB, KV cache {:.2f} GiB = {} blocks x {} "
      "tokens = {} tokens; Maximum concurrency for {} tokens per request: {:.2f}x",
      weight_bytes / kGiB, workspace_bytes / kGiB, kv_cache_bytes / kGiB, num_blocks, block_size,
      num_kv_tokens(), max_model_len, max_concurrency()) +
         (num_state_slots > 0 ? fmt::format("; state slots: {} x {:.2f} MiB", num_state_slots,
                                            state_bytes_per_slot / (1024.0 * 1024.0))
                              : std::string()) +
         (num_state_snapshots > 0 ? fmt::format(" + {} prefix-cache state snapshots (every {} blocks)",
                                                num_state_snapshots, state_snapshot_interval_blocks)
                                  : std::string()) +
         (num_state_slots > 0 ? fmt::format(" = {:.2f} GiB", state_cache_bytes() / kGiB) : std::string());
}

StatusOr<MemoryPlan> PlanMemory(const MemoryPlanInputs& in) {
  if (in.kv_bytes_per_block <= 0 || in.block_size <= 0 || in.max_model_len <= 0) {
    return InvalidArgumentError("memory plan: block size, bytes per block and max_model_len must be positive");
  }
  MemoryPlan plan;
  plan.weight_bytes = in.weight_bytes;
  plan.workspace_bytes = in.workspace_bytes;
  plan.block_size = in.block_size;
  plan.max_model_len = in.max_model_len;
  int64_t budget = in.kv_cache_memory_bytes;
  std::string source = fmt::format("--kv-cache-memory {}", in.kv_cache_memory_bytes);
  if (budget <= 0) {
    if (in.memory_utilization <= 0.0 || in.memory_utilization > 1.0) {
      return InvalidArgumentError(fmt::format(
          "--gpu-memory-utilization must be in (0, 1], got {}", in.memory_utilization));
    }
    int64_t usable = static_cast<int64_t>(in.memory_utilization * in.device_memory_bytes);
    budget = usable - in.weight_bytes - in.workspace_bytes;
    source = fmt::format("--gpu-memory-utilization {} of {:.2f} GiB minus {:.2f} GiB of weights and workspace",
                         in.memory_utilization, in.device_memory_bytes / kGiB,
                         (in.weight_bytes + in.workspace_bytes) / kGiB);
  }
  plan.state_bytes_per_slot = in.state_bytes_per_slot;
  plan.num_state_slots = in.num_state_slots;
  plan.num_state_snapshots = in.num_state_snapshots;
  plan.state_snapshot_interval_blocks = in.state_snapshot_interval_blocks;
  if (plan.state_cache_bytes() > 0) {
    if (plan.state_cache_bytes() >= budget) {
      return ResourceExhaustedError(fmt::format(
          "the hybrid state ({} slots for --max-num-seqs {} + {} snapshots, {:.2f} MiB each = {:.3f} GiB) does "
          "not fit in the KV cache budget ({:.3f} GiB from {}). Lower --max-num-seqs (or the snapshot count) or "
          "raise --kv-cache-memory (or --gpu-memory-utilization).",
          in.num_state_slots, in.num_state_slots, in.num_state_snapshots, in.state_bytes_per_slot / (1024.0 * 1024.0),
          plan.state_cache_bytes() / kGiB, std::max<int64_t>(budget, 0) / kGiB, source));
    }
    budget -= plan.state_cache_bytes();
  }
  int64_t blocks = std::max<int64_t>(budget, 0) / in.kv_bytes_per_block;
  blocks = std::min<int64_t>(blocks, 1 << 30);
  int64_t needed_blocks = (in.max_model_len + in.block_size - 1) / in.block_size;
  if (blocks < needed_blocks) {
    return ResourceExhaustedError(fmt::format(
        "the KV cache ({} from {}) holds {} blocks = {} tokens, but one request of max_model_len {} "
        "tokens needs {} blocks ({:.3f} GiB). Raise --kv-cache-memory (or --gpu-memory-utilization), "
        "or lower --max-model-len to at most {}.",
        blocks > 0 ? fmt::format("{:.3f} GiB", budget / kGiB) : std::string("nothing left"), source,
        blocks, blocks * in.block_size, in.max_model_len, needed_blocks,
        needed_blocks * in.kv_bytes_per_block / kGiB, blocks * in.block_size));
  }
  plan.num_blocks = static_cast<int32_t>(blocks);
  plan.kv_cache_bytes = blocks * in.kv_bytes_per_block;
  return plan;
}

}  // namespace pagellm
