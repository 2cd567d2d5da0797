#include "engine/memory_plan.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>

#include <fmt/format.h>

namespace pagellm {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kMiB = 1024.0 * 1024.0;

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
  const double by_kv = static_cast<double>(num_kv_tokens()) / max_model_len;
  return num_state_slots > 0 ? std::min(by_kv, static_cast<double>(num_state_slots)) : by_kv;
}

std::string MemoryPlan::Summary() const {
  std::string prepared;
  if (prepared_weight_bytes > 0) {
    prepared = released_weight_bytes > 0
                   ? fmt::format(" (incl. {:.2f} GiB of packed copies, which replace {:.2f} GiB of the file's pages)",
                                 prepared_weight_bytes / kGiB, released_weight_bytes / kGiB)
                   : fmt::format(" (incl. {:.2f} GiB of packed copies)", prepared_weight_bytes / kGiB);
  }
  std::string line = fmt::format(
      "memory plan: weights {:.2f} GiB{}, workspace {:.2f} GiB, KV cache {:.2f} GiB = {} blocks x {} tokens = {} tokens",
      weight_bytes / kGiB, prepared, workspace_bytes / kGiB, kv_cache_bytes / kGiB, num_blocks, block_size,
      num_kv_tokens());
  if (num_state_slots > 0) {
    line += fmt::format("; state slots: {} x {:.2f} MiB = {:.3f} GiB ({})", num_state_slots,
                        state_bytes_per_slot / kMiB, num_state_slots * state_bytes_per_slot / kGiB,
                        num_state_slots < max_num_seqs ? fmt::format("limited by memory, --max-num-seqs {}", max_num_seqs)
                                                       : fmt::format("--max-num-seqs {}", max_num_seqs));
  }
  if (num_state_snapshots > 0) {
    line += fmt::format(" + {} prefix-cache state snapshots (every {} blocks{}) = {:.3f} GiB", num_state_snapshots,
                        state_snapshot_interval_blocks, state_snapshots_auto ? ", sized from memory" : "",
                        num_state_snapshots * state_bytes_per_slot / kGiB);
  }
  if (num_spec_checkpoints > 0) {
    line += fmt::format(" + {} speculative-decoding checkpoints = {:.3f} GiB", num_spec_checkpoints,
                        num_spec_checkpoints * state_bytes_per_slot / kGiB);
  }
  // The weights' footprint next to the tensors the loader handed over (the file's bytes
  // when they were mapped in place), so an in-place quantized file shows it has no float copy.
  if (loaded_weight_bytes > 0) {
    line += fmt::format("; weights in RAM {:.2f} MiB = {:.3f}x the {:.2f} MiB of loaded tensors", weight_bytes / kMiB,
                        static_cast<double>(weight_bytes) / loaded_weight_bytes, loaded_weight_bytes / kMiB);
  }
  if (!weight_formats.empty()) line += "; weight formats: " + weight_formats;
  return line + fmt::format("; Maximum concurrency for {} tokens per request: {:.2f}x", max_model_len,
                            max_concurrency());
}

namespace {

// The weights as they sit in memory: the file's tensors, less the pages a backend copy
// replaced, plus the copies.
int64_t ResidentWeightBytes(const MemoryPlanInputs& in) {
  return in.weight_bytes - in.released_weight_bytes + in.prepared_weight_bytes;
}

// Bytes for the state cache + KV blocks: --kv-cache-memory, or the memory fraction minus
// weights and workspace. `source` says which, for error messages.
StatusOr<int64_t> CacheBudget(const MemoryPlanInputs& in, std::string* source) {
  if (in.kv_cache_memory_bytes > 0) {
    *source = fmt::format("--kv-cache-memory {}", in.kv_cache_memory_bytes);
    return in.kv_cache_memory_bytes;
  }
  if (in.memory_utilization <= 0.0 || in.memory_utilization > 1.0) {
    return InvalidArgumentError(fmt::format("--gpu-memory-utilization must be in (0, 1], got {}", in.memory_utilization));
  }
  *source = fmt::format("--gpu-memory-utilization {} of {:.2f} GiB minus {:.2f} GiB of weights and workspace",
                        in.memory_utilization, in.device_memory_bytes / kGiB,
                        (ResidentWeightBytes(in) + in.workspace_bytes) / kGiB);
  return static_cast<int64_t>(in.memory_utilization * in.device_memory_bytes) - ResidentWeightBytes(in) -
         in.workspace_bytes;
}

// Hybrid models: state slots, then snapshots, out of `budget` (header comment); both
// always leave `min_kv_bytes` (one max_model_len request's blocks). Returns the rest.
StatusOr<int64_t> PlanHybridState(const MemoryPlanInputs& in, int64_t budget, int64_t min_kv_bytes,
                                  const std::string& source, MemoryPlan* plan) {
  const int64_t s = in.state_bytes_per_slot;
  // A slot with a verification checkpoint costs two states.
  const int64_t slot_cost = s * (in.spec_checkpoints ? 2 : 1);
  if (budget < slot_cost + min_kv_bytes) {
    return ResourceExhaustedError(fmt::format(
        "not even one sequence fits: one request of max_model_len {} tokens needs a hybrid state slot of {:.2f} MiB "
        "+ {:.3f} GiB of KV blocks = {:.3f} GiB, but the cache budget is {:.3f} GiB (from {}). Raise "
        "--kv-cache-memory (or --gpu-memory-utilization), or lower --max-model-len.",
        in.max_model_len, slot_cost / kMiB, min_kv_bytes / kGiB, (slot_cost + min_kv_bytes) / kGiB,
        std::max<int64_t>(budget, 0) / kGiB, source));
  }
  const int64_t fit = (budget - min_kv_bytes) / slot_cost;
  plan->num_state_slots = static_cast<int32_t>(std::min<int64_t>(in.max_num_seqs, fit));
  plan->num_spec_checkpoints = in.spec_checkpoints ? plan->num_state_slots : 0;
  int64_t left = budget - plan->num_state_slots * slot_cost;
  if (!in.plan_state_snapshots) return left;
  const int64_t snapshot_fit = (left - min_kv_bytes) / s;
  if (in.num_state_snapshots > 0) {
    if (in.num_state_snapshots > snapshot_fit) {
      return ResourceExhaustedError(fmt::format(
          "--hybrid-state-snapshots {} ({:.2f} MiB each) does not fit: after {} state slots the cache budget ({:.3f} "
          "GiB from {}) leaves room for {} snapshots besides one request of max_model_len {} tokens. Use at most {}, "
          "or 0 to size them from memory.",
          in.num_state_snapshots, s / kMiB, plan->num_state_slots, budget / kGiB, source, snapshot_fit,
          in.max_model_len, snapshot_fit));
    }
    plan->num_state_snapshots = in.num_state_snapshots;
  } else {
    const int64_t share = left / 4 / s;
    const int64_t usable = left / (s + std::max(in.state_snapshot_interval_blocks, 1) * in.kv_bytes_per_block);
    const int64_t wanted = std::max<int64_t>(std::min(share, usable), kMinStateSnapshots);
    plan->num_state_snapshots = static_cast<int32_t>(std::min<int64_t>({wanted, snapshot_fit, 1 << 30}));
    plan->state_snapshots_auto = true;
  }
  return left - plan->num_state_snapshots * s;
}

}  // namespace

StatusOr<MemoryPlan> PlanMemory(const MemoryPlanInputs& in) {
  if (in.kv_bytes_per_block <= 0 || in.block_size <= 0 || in.max_model_len <= 0) {
    return InvalidArgumentError("memory plan: block size, bytes per block and max_model_len must be positive");
  }
  if (in.state_bytes_per_slot < 0 || (in.state_bytes_per_slot > 0 && in.max_num_seqs <= 0)) {
    return InvalidArgumentError("memory plan: hybrid state needs state_bytes_per_slot >= 0 and max_num_seqs > 0");
  }
  MemoryPlan plan;
  plan.weight_bytes = ResidentWeightBytes(in);
  plan.prepared_weight_bytes = in.prepared_weight_bytes;
  plan.released_weight_bytes = in.released_weight_bytes;
  plan.weight_formats = in.weight_formats;
  plan.loaded_weight_bytes = in.weight_bytes;
  plan.workspace_bytes = in.workspace_bytes;
  plan.block_size = in.block_size;
  plan.max_model_len = in.max_model_len;
  plan.state_bytes_per_slot = in.state_bytes_per_slot;
  plan.state_snapshot_interval_blocks = in.state_snapshot_interval_blocks;
  std::string source;
  PAGELLM_ASSIGN_OR_RETURN(int64_t budget, CacheBudget(in, &source));
  const int64_t needed_blocks = (in.max_model_len + in.block_size - 1) / in.block_size;
  if (in.state_bytes_per_slot > 0) {
    plan.max_num_seqs = in.max_num_seqs;
    PAGELLM_ASSIGN_OR_RETURN(budget, PlanHybridState(in, budget, needed_blocks * in.kv_bytes_per_block, source, &plan));
  }
  int64_t blocks = std::max<int64_t>(budget, 0) / in.kv_bytes_per_block;
  blocks = std::min<int64_t>(blocks, 1 << 30);
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
