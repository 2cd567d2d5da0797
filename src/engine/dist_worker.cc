// RunDistWorker: the life of a tensor-parallel rank > 0 (engine/dist_group.h).
#include <fmt/format.h>

#include "backend/backend_registry.h"
#include "common/logging.h"
#include "dist/shm_communicator.h"
#include "engine/causal_lm.h"
#include "engine/dist_group.h"
#include "model/model_loader.h"
#include "model/quantization_flag.h"
#include "runner/tp_causal_lm.h"

namespace pagellm {
namespace {

struct WorkerModel {
  LoadedModel loaded;
  std::unique_ptr<CausalLm> shard;
  int64_t shard_bytes = 0;
};

Status LoadShard(const EngineConfig& config, dist::Communicator& comm, Backend& backend, WorkerModel& out) {
  LoadOptions load{.model_path = config.model, .load_format = config.load_format, .dtype = config.dtype,
                   .seed = config.seed, .quantization = config.quantization};
  PAGELLM_ASSIGN_OR_RETURN(out.loaded, LoadModel(load));
  LinearOptions linear_options;
  PAGELLM_ASSIGN_OR_RETURN(linear_options.quantization,
                           LinearQuantizationFromName(FloatLinearQuantization(config.quantization)));
  const int32_t max_tokens = std::max(config.max_num_batched_tokens, 1);
  const ParallelLayout layout{config.tensor_parallel_size, config.pipeline_parallel_size};
  PAGELLM_ASSIGN_OR_RETURN(out.shard, CreateShardedCausalLm(out.loaded.config, out.loaded.weights, backend, max_tokens,
                                                            linear_options, comm, layout, &out.shard_bytes));
  return OkStatus();
}

}  // namespace

Status RunWorkerRank(const EngineConfig& config, dist::Communicator& comm, double step_timeout_s) {
  PAGELLM_ASSIGN_OR_RETURN(Backend* backend, BackendRegistry::Get("cpu"));
  WorkerModel model;
  PAGELLM_RETURN_IF_ERROR(LoadShard(config, comm, *backend, model).WithPrefix(fmt::format("rank {}", comm.rank())));
  // Rank 0 plans after loading its own shard, which may take longer than ours.
  comm.set_timeout_s(0);
  PAGELLM_ASSIGN_OR_RETURN(DistPlan plan, ReceiveDistPlan(comm));
  comm.set_timeout_s(step_timeout_s);
  PAGELLM_ASSIGN_OR_RETURN(
      auto kv, PagedKvCache::Create(model.shard->MakeKvCacheSpec(plan.num_blocks, plan.block_size,
                                                                  static_cast<DType>(plan.kv_dtype))));
  kv->PrefaultStartupBlocks();
  PLOG_DEBUG("tensor parallel rank {}: weights {} MB, KV cache {} blocks", comm.rank(), model.shard_bytes >> 20,
             plan.num_blocks);
  return RunTpWorker(*model.shard, *kv, comm);
}

Status RunDistWorker(const DistWorkerArgs& args) {
  PAGELLM_ASSIGN_OR_RETURN(EngineConfig config, EngineConfigFromJson(args.engine_config_json));
  dist::ShmOptions opt{.group_id = args.group_id, .rank = args.rank, .world_size = args.world_size,
                       .timeout_s = DistTimeoutSeconds()};
  PAGELLM_ASSIGN_OR_RETURN(auto comm, dist::ShmCommunicator::Create(opt));
  return RunWorkerRank(config, *comm, opt.timeout_s);
}

}  // namespace pagellm
