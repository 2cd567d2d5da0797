#include "engine/engine_core.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include <fmt/format.h>

#include "backend/backend_registry.h"
#include "backend/profiling_backend.h"
#include "common/logging.h"
#include "common/mapped_file.h"
#include "engine/causal_lm.h"
#include "engine/dist_group.h"
#include "runner/tp_causal_lm.h"
#include "engine/sample_state.h"
#include "engine/sampling_validation.h"
#include "model/quantization_flag.h"
#include "model/shard_plan.h"
#include "engine/stop_checker.h"
#include "runner/rng.h"
#include "model/weight_binding.h"
#include "tokenizer/load_tokenizer.h"
#include "tokenizer/incremental_detokenizer.h"

namespace pagellm {
namespace {

// PAGELLM_PROFILE_OPS: one line per (op, rows), the largest total first.
void LogOpTimes(std::vector<OpTime> times) {
  std::sort(times.begin(), times.end(), [](const OpTime& a, const OpTime& b) { return a.seconds > b.seconds; });
  for (const OpTime& t : times) {
    PLOG_INFO("op time: {} rows {}: {} calls, {:.4f} ms per call, {:.1f} ms in all", t.op, t.rows, t.calls,
              t.calls > 0 ? 1e3 * t.seconds / static_cast<double>(t.calls) : 0.0, 1e3 * t.seconds);
  }
}

}  // namespace

EngineCore::EngineCore(const EngineConfig& config) : config_(config) {}
EngineCore::~EngineCore() {
  if (spec_policy_ != nullptr) LogSpecDecodeSummary();
  LogDecodeStepTimes();
  if (op_profiler_ != nullptr) LogOpTimes(op_profiler_->Snapshot());
  // The workers stop on the model's kShutdown before the group reaps them.
  runner_.reset();
  model_.reset();
  dist_group_.reset();
}

double EngineCore::Now() const {
  using Clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

StatusOr<std::unique_ptr<EngineCore>> EngineCore::Create(const EngineConfig& config) {
  std::unique_ptr<EngineCore> core(new EngineCore(config));
  PAGELLM_RETURN_IF_ERROR(core->Init());
  return core;
}

Status EngineCore::Init() {
  PAGELLM_ASSIGN_OR_RETURN(spec_config_, ParseSpeculativeConfig(config_.speculative_config));
  if (spec_config_.enabled()) {
    if (spec_config_.method == "ngram") {
      ngram_ = std::make_unique<NgramProposer>(NgramProposerConfig{
          .min_n = spec_config_.prompt_lookup_min,
          .max_n = spec_config_.prompt_lookup_max,
          .num_speculative_tokens = spec_config_.num_speculative_tokens});
    }
    spec_policy_ = std::make_unique<SpecPolicy>(SpecPolicyConfig{
        .num_speculative_tokens = spec_config_.num_speculative_tokens,
        .disable_by_batch_size = spec_config_.disable_by_batch_size});
    stats_.spec_decode_enabled = true;
    stats_.spec.accepted_per_pos.assign(static_cast<size_t>(spec_config_.num_speculative_tokens), 0);
    PLOG_INFO("speculative decoding: {}", spec_config_.Describe());
  }
  LoadOptions load;
  load.model_path = config_.model;
  load.load_format = config_.load_format;
  load.dtype = config_.dtype;
  load.seed = config_.seed;
  load.quantization = config_.quantization;
  load.load_mtp = spec_config_.enabled() && spec_config_.method == "mtp";
  if (load.load_mtp && config_.world_size() > 1) {
    return InvalidArgumentError("--speculative-config method mtp runs the MTP head on an unsharded model: it is not "
                                "supported with --tensor-parallel-size / --pipeline-parallel-size > 1 yet");
  }
  PAGELLM_ASSIGN_OR_RETURN(loaded_, LoadModel(load));
  std::string tok_dir = config_.tokenizer.empty() ? loaded_.tokenizer_path : config_.tokenizer;
  if (tok_dir.empty()) return NotFoundError(fmt::format("no tokenizer.json next to {}; pass --tokenizer", config_.model));
  PAGELLM_ASSIGN_OR_RETURN(tokenizer_, tokenizer::LoadTokenizer(tok_dir));
  loaded_.tokenizer_path = tok_dir;

  const ModelConfig& mc = loaded_.config;
  max_model_len_ = static_cast<int32_t>(config_.max_model_len.value_or(mc.max_position_embeddings));
  if (max_model_len_ <= 0) return InvalidArgumentError("--max-model-len must be positive");
  if (max_model_len_ > mc.max_position_embeddings) {
    PLOG_WARN("--max-model-len {} exceeds the model's max_position_embeddings {}", max_model_len_,
              mc.max_position_embeddings);
  }
  eos_token_ids_ = loaded_.generation_config.eos_token_ids;
  if (eos_token_ids_.empty()) {
    for (int64_t id : mc.eos_token_ids) eos_token_ids_.push_back(static_cast<int32_t>(id));
  }
  structured_ = std::make_unique<StructuredOutputs>(*tokenizer_, eos_token_ids_, static_cast<int32_t>(mc.vocab_size));
  PAGELLM_ASSIGN_OR_RETURN(backend_, BackendRegistry::Get("cpu"));
  if (const char* profile = std::getenv("PAGELLM_PROFILE_OPS"); profile != nullptr && *profile != '\0' &&
                                                                  std::string_view(profile) != "0") {
    // Every op of this engine's models (a draft model's too) timed, one line per op at exit.
    op_profiler_ = std::make_unique<ProfilingBackend>(*backend_);
    backend_ = op_profiler_.get();
  }
  int32_t max_tokens = std::max(config_.max_num_batched_tokens, 1);
  LinearOptions linear_options;
  // An int4 checkpoint's linears arrive quantized (q4_z); its float ones (lm_head, ...) stay float.
  PAGELLM_ASSIGN_OR_RETURN(linear_options.quantization,
                           LinearQuantizationFromName(FloatLinearQuantization(config_.quantization)));
  // What the backend packs, widens or quantizes while preparing this model's weights (the
  // backend is shared by the process; engines are created one at a time).
  const int64_t prepared_before = backend_->prepared_weight_bytes();
  backend_->TakeCopiedSources();  // only this model's weights below
  if (config_.world_size() > 1) {
    PAGELLM_RETURN_IF_ERROR(CheckShardable(mc, config_.tensor_parallel_size, config_.pipeline_parallel_size));
    PAGELLM_ASSIGN_OR_RETURN(dist_group_, DistGroup::Launch(config_));
    const ParallelLayout layout{config_.tensor_parallel_size, config_.pipeline_parallel_size};
    PAGELLM_ASSIGN_OR_RETURN(auto shard, CreateShardedCausalLm(mc, loaded_.weights, *backend_, max_tokens,
                                                               linear_options, dist_group_->comm(), layout,
                                                               &shard_bytes_));
    model_ = std::make_unique<TpCausalLm>(std::move(shard), dist_group_->comm());
  } else {
    PAGELLM_ASSIGN_OR_RETURN(model_, CreateCausalLm(mc, loaded_.weights, *backend_, max_tokens, linear_options));
  }
  prepared_weight_bytes_ = backend_->prepared_weight_bytes() - prepared_before;
  released_weight_bytes_ = ReleaseCopiedWeightPages(loaded_.weights.embed_tokens);
  if (spec_config_.method == "draft_model") PAGELLM_RETURN_IF_ERROR(LoadDraftModel(max_tokens));
  if (load.load_mtp && model_->mtp_head() == nullptr) {
    return InvalidArgumentError(fmt::format("--speculative-config method mtp: model type {} has no MTP head (Qwen3.5 "
                                            "and Qwen3-Next checkpoints ship one)", mc.model_type));
  }
  PAGELLM_RETURN_IF_ERROR(InitScheduler());
  runner_ = std::make_unique<ModelRunner>(*model_, *kv_cache_, config_.block_size);
  PAGELLM_RETURN_IF_ERROR(runner_->ReserveLogitRows(MaxLogitRows()));
  if (draft_ != nullptr) PAGELLM_RETURN_IF_ERROR(draft_->ReserveLogitRows(MaxDraftLogitRows()));
  SamplerConfig sc;
  sc.num_valid_tokens = std::min<int32_t>(tokenizer_->vocab_size(), static_cast<int32_t>(mc.vocab_size));
  sc.eos_token_ids = eos_token_ids_;
  sampler_ = std::make_unique<Sampler>(sc);
  return OkStatus();
}

int64_t EngineCore::MaxLogitRows() const {
  // A sampling step has a row per sequence, and a row per draft behind it when
  // speculating; never more than the step's tokens.
  const int64_t per_seq = 1 + (spec_config_.enabled() ? spec_config_.num_speculative_tokens : 0);
  return std::min<int64_t>(std::max(config_.max_num_batched_tokens, 1), int64_t{std::max(config_.max_num_seqs, 1)} * per_seq);
}

int64_t EngineCore::MaxDraftLogitRows() const {
  return std::min(std::max(config_.max_num_batched_tokens, 1), std::max(config_.max_num_seqs, 1));
}

Status EngineCore::LoadDraftModel(int32_t max_num_tokens) {
  LoadOptions load;
  load.model_path = spec_config_.model;
  load.load_format = config_.load_format;
  load.dtype = config_.dtype;
  load.seed = config_.seed;
  StatusOr<LoadedModel> loaded = LoadModel(load);
  if (!loaded.ok()) {
    return Status(loaded.status().code(),
                  fmt::format("--speculative-config: draft model {}: {}", spec_config_.model, loaded.status().message()));
  }
  draft_loaded_ = std::move(*loaded);
  const ModelConfig& dc = draft_loaded_.config;
  // Token ids pass between the two models as they are: the draft must know every id the
  // tokenizer makes (a larger, padded embedding is fine: Qwen2.5's sizes differ so).
  if (dc.vocab_size < tokenizer_->vocab_size()) {
    return InvalidArgumentError(fmt::format(
        "--speculative-config: the draft model's vocabulary ({} rows) is smaller than the tokenizer's ({} tokens): a "
        "draft model must share the target's tokenizer", dc.vocab_size, tokenizer_->vocab_size()));
  }
  const int64_t prepared_before = backend_->prepared_weight_bytes();
  backend_->TakeCopiedSources();
  // The draft runs unsharded on rank 0 and unquantized (vLLM's draft takes its own
  // quantization; --quantization names the target's).
  PAGELLM_ASSIGN_OR_RETURN(draft_model_, CreateCausalLm(dc, draft_loaded_.weights, *backend_, max_num_tokens, {}));
  if (draft_model_->state_bytes_per_slot() > 0) {
    return InvalidArgumentError(fmt::format(
        "--speculative-config: draft model {} ({}) has recurrent Gated DeltaNet layers; a draft model must be "
        "attention-only (Qwen2/2.5 or Qwen3, dense or MoE)", spec_config_.model, dc.model_type));
  }
  const int64_t prepared = backend_->prepared_weight_bytes() - prepared_before;
  const int64_t released = ReleaseCopiedWeightPages(draft_loaded_.weights.embed_tokens);
  draft_loaded_bytes_ = static_cast<int64_t>(WeightBytes(draft_loaded_.weights));
  prepared_weight_bytes_ += prepared;
  released_weight_bytes_ += released;
  PLOG_INFO("draft model {}: {}, {} layers, hidden {}, weights {:.3f} GiB", spec_config_.model, dc.model_type,
            dc.num_hidden_layers, dc.hidden_size,
            static_cast<double>(draft_loaded_bytes_ - released + prepared) / (1 << 30));
  return OkStatus();
}

int64_t EngineCore::ReleaseCopiedWeightPages(const TensorView& embed) {
  // The embedding reads its table in place unless the backend reads a tied lm_head's
  // rows from its packed copy: in place, its pages come back as rows are looked up, so
  // they stay counted. Dropping pages twice is harmless (the CPU backend already did as
  // it packed); ReleasePages returns the bytes.
  const auto* embed_begin = static_cast<const std::byte*>(embed.data);
  const auto* embed_end = embed_begin + embed.nbytes();
  const bool embed_in_place = !backend_->EmbeddingReadsPreparedCopy(embed);
  int64_t released = 0;
  for (std::span<const std::byte> source : backend_->TakeCopiedSources()) {
    if (embed_in_place && source.data() < embed_end && embed_begin < source.data() + source.size()) continue;
    released += static_cast<int64_t>(MappedFile::ReleasePages(source.data(), source.size()));
  }
  return released;
}

Status EngineCore::InitScheduler() {
  const ModelConfig& mc = loaded_.config;
  DType kv_dtype = DType::kBF16;
  if (config_.kv_cache_dtype != "auto") {
    PAGELLM_ASSIGN_OR_RETURN(kv_dtype, DTypeFromUserName(config_.kv_cache_dtype));
  }
  if (config_.block_size <= 0 || config_.block_size > 1024) {
    return InvalidArgumentError(fmt::format("--block-size must be in [1, 1024], got {}", config_.block_size));
  }
  KvCacheSpec one_block = model_->MakeKvCacheSpec(1, config_.block_size, kv_dtype);
  // A draft model's KV cache gets as many blocks as the target's: a block costs both.
  // So does the MTP head's (one layer of the target's).
  MtpHead* mtp_head = model_->mtp_head();
  const int64_t draft_bytes_per_block =
      draft_model_ != nullptr ? static_cast<int64_t>(draft_model_->MakeKvCacheSpec(1, config_.block_size, kv_dtype).BytesPerBlock())
      : mtp_head != nullptr   ? static_cast<int64_t>(mtp_head->MakeMtpKvCacheSpec(1, config_.block_size, kv_dtype).BytesPerBlock())
                              : 0;
  MemoryPlanInputs in;
  const int32_t tp = std::max(config_.tensor_parallel_size, 1), pp = std::max(config_.pipeline_parallel_size, 1);
  const int32_t world = tp * pp;
  // Every stage holds the same number of blocks: plan for the stage with the most
  // attention layers (and GDN layers), not rank 0's.
  const StageLoad load = LargestStage(mc, pp);
  one_block.num_layers = std::max(one_block.num_layers, load.attention_layers);
  in.weight_bytes = (world > 1 ? shard_bytes_ : static_cast<int64_t>(WeightBytes(loaded_.weights))) + draft_loaded_bytes_;
  in.prepared_weight_bytes = prepared_weight_bytes_;
  in.released_weight_bytes = released_weight_bytes_;
  // Per rank: a shard's heads and MLP columns.
  const ModelConfig& local = model_->config();
  in.weight_formats = WeightFormatSummary(loaded_.weights);
  weight_formats_ = WeightFormats(loaded_.weights);
  in.workspace_bytes = static_cast<int64_t>(config_.max_num_batched_tokens) *
                       (4 * local.hidden_size + 2 * local.q_size() + 2 * local.kv_size() + 2 * local.intermediate_size) * 4;
  // The logits of the largest sampling step (and the draft model's, a row per sequence).
  in.workspace_bytes += ModelRunner::LogitBytes(MaxLogitRows(), mc.vocab_size);
  if (draft_model_ != nullptr) {
    in.workspace_bytes += ModelRunner::LogitBytes(MaxDraftLogitRows(), draft_model_->config().vocab_size);
  }
  in.kv_bytes_per_block = static_cast<int64_t>(one_block.BytesPerBlock()) + draft_bytes_per_block;
  in.block_size = config_.block_size;
  in.max_model_len = max_model_len_;
  in.kv_cache_memory_bytes = config_.kv_cache_memory_bytes;
  in.memory_utilization = config_.gpu_memory_utilization;
  // The ranks of a parallel group on this host share its memory: each plans its
  // part (with mpi, ranks on other hosts have their own).
  in.device_memory_bytes = CpuMemoryBytes() / (dist_group_ != nullptr ? dist_group_->num_local_ranks() : 1);
  // Hybrid models: GDN state slots (at most max_num_seqs) and prefix-cache snapshots are
  // sized from the same budget as the KV blocks (memory_plan.h).
  if (config_.hybrid_state_snapshot_interval < 0 || config_.hybrid_state_snapshots < 0) {
    return InvalidArgumentError("hybrid state snapshot interval and count must be >= 0");
  }
  in.state_bytes_per_slot = model_->state_bytes_per_slot();
  // Rank 0's stage scaled to the largest stage's GDN layers (rank 0's stage starts at
  // layer 0, a GDN layer in every hybrid layout, so `own` > 0 for hybrid models).
  if (pp > 1 && load.gdn_layers > 0) {
    const int64_t own = StageLoadOf(mc, StageLayers(mc.num_hidden_layers, 0, pp)).gdn_layers;
    if (own > 0) in.state_bytes_per_slot = in.state_bytes_per_slot / own * load.gdn_layers;
  }
  in.max_num_seqs = config_.max_num_seqs;
  in.plan_state_snapshots = config_.enable_prefix_caching && config_.hybrid_state_snapshot_interval > 0;
  in.num_state_snapshots = config_.hybrid_state_snapshots;
  in.state_snapshot_interval_blocks = config_.hybrid_state_snapshot_interval;
  in.spec_checkpoints = spec_config_.enabled();
  PAGELLM_ASSIGN_OR_RETURN(plan_, PlanMemory(in));
  std::string who;
  if (pp > 1) {
    who = fmt::format("per rank (rank 0 of {}: tensor parallel 0 of {}, pipeline stage 0 of {}, layers [{}, {}); KV "
                      "blocks sized for the largest stage, {} attention layers): ", world, tp, pp,
                      StageLayers(mc.num_hidden_layers, 0, pp).first, StageLayers(mc.num_hidden_layers, 0, pp).end,
                      load.attention_layers);
  } else if (tp > 1) {
    who = fmt::format("per rank (tensor parallel {} of {}): ", 0, tp);
  }
  PLOG_INFO("{}{}", who, plan_.Summary());
  if (dist_group_ != nullptr) {
    PAGELLM_RETURN_IF_ERROR(SendDistPlan(dist_group_->comm(), DistPlan{.num_blocks = plan_.num_blocks + 1,
                                                                       .block_size = config_.block_size,
                                                                       .kv_dtype = static_cast<int32_t>(kv_dtype)}));
  }
  if (plan_.num_state_slots > 0) {
    // Snapshot entries: the prefix cache's, then one verification checkpoint per slot.
    PAGELLM_RETURN_IF_ERROR(model_->AllocateStateSlots(plan_.num_state_slots,
                                                       plan_.num_state_snapshots + plan_.num_spec_checkpoints));
  }
  // The block pool reserves block 0 as its null block: allocate one more.
  PAGELLM_ASSIGN_OR_RETURN(kv_cache_, PagedKvCache::Create(model_->MakeKvCacheSpec(plan_.num_blocks + 1,
                                                                                   config_.block_size, kv_dtype)));
  {
    const auto start = std::chrono::steady_clock::now();
    const size_t touched = kv_cache_->PrefaultStartupBlocks();
    PLOG_INFO("KV cache: faulted in the first {} MiB of blocks in {:.0f} ms", touched >> 20,
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  if (draft_model_ != nullptr) {
    PAGELLM_ASSIGN_OR_RETURN(draft_kv_, PagedKvCache::Create(draft_model_->MakeKvCacheSpec(
                                            plan_.num_blocks + 1, config_.block_size, kv_dtype)));
    draft_kv_->PrefaultStartupBlocks();
    const ModelConfig& dc = draft_model_->config();
    DraftModelProposerOptions o;
    o.block_size = config_.block_size;
    o.num_blocks = plan_.num_blocks + 1;
    o.max_num_batched_tokens = std::max(config_.max_num_batched_tokens, 1);
    o.max_model_len = std::min<int32_t>(max_model_len_, static_cast<int32_t>(dc.max_position_embeddings));
    o.num_valid_tokens = static_cast<int32_t>(std::min<int64_t>(
        {static_cast<int64_t>(tokenizer_->vocab_size()), mc.vocab_size, dc.vocab_size}));
    draft_ = std::make_unique<DraftModelProposer>(*draft_model_, *draft_kv_, o);
    PLOG_INFO("draft model KV cache: {} blocks of {} tokens, {:.3f} GiB (in the plan above)", plan_.num_blocks,
              config_.block_size, static_cast<double>(draft_kv_->total_bytes()) / (1 << 30));
  }
  if (mtp_head != nullptr) {
    PAGELLM_ASSIGN_OR_RETURN(mtp_kv_, PagedKvCache::Create(mtp_head->MakeMtpKvCacheSpec(
                                          plan_.num_blocks + 1, config_.block_size, kv_dtype)));
    mtp_kv_->PrefaultStartupBlocks();
    MtpProposerOptions o;
    o.block_size = config_.block_size;
    o.num_blocks = plan_.num_blocks + 1;
    o.max_num_batched_tokens = std::max(config_.max_num_batched_tokens, 1);
    o.max_model_len = max_model_len_;
    o.num_valid_tokens = static_cast<int32_t>(std::min<int64_t>(tokenizer_->vocab_size(), mc.vocab_size));
    o.hidden_size = mc.hidden_size;
    o.vocab_size = mc.vocab_size;
    mtp_ = std::make_unique<MtpProposer>(*mtp_head, *mtp_kv_, o);
    PLOG_INFO("MTP head: {} layer(s); its KV cache: {} blocks of {} tokens, {:.3f} GiB (in the plan above)",
              mc.mtp_num_hidden_layers, plan_.num_blocks, config_.block_size,
              static_cast<double>(mtp_kv_->total_bytes()) / (1 << 30));
  }
  SchedulerConfig sc;
  sc.batch.max_num_batched_tokens = config_.max_num_batched_tokens;
  // A hybrid sequence runs only with a state slot: the slots are the concurrency limit.
  sc.batch.max_num_seqs = plan_.num_state_slots > 0 ? std::min(config_.max_num_seqs, plan_.num_state_slots)
                                                    : config_.max_num_seqs;
  sc.batch.enable_chunked_prefill = config_.enable_chunked_prefill;
  sc.batch.long_prefill_token_threshold =
      config_.long_prefill_token_threshold > 0 ? config_.long_prefill_token_threshold
      : config_.enable_chunked_prefill       ? std::max(config_.max_num_batched_tokens / 4, 1)
                                             : 0;
  sc.kv_cache.num_blocks = plan_.num_blocks + 1;
  sc.kv_cache.block_size = config_.block_size;
  sc.kv_cache.enable_prefix_caching = config_.enable_prefix_caching;
  if (config_.enable_prefix_caching && plan_.num_state_slots > 0 && plan_.num_state_snapshots == 0) {
    // A prefix hit would skip the tokens whose GDN state the slot must accumulate.
    PLOG_INFO("prefix caching is disabled for the hybrid model type {} (no state snapshots: interval {}, or no "
              "memory left for them)", mc.model_type, config_.hybrid_state_snapshot_interval);
    sc.kv_cache.enable_prefix_caching = false;
  }
  sc.priority_policy = config_.scheduling_policy == "priority";
  sc.num_state_slots = plan_.num_state_slots;
  sc.num_state_snapshots = plan_.num_state_snapshots;
  sc.state_snapshot_interval_blocks = plan_.state_snapshot_interval_blocks;
  sc.spec_checkpoint_base = plan_.num_spec_checkpoints > 0 ? plan_.num_state_snapshots : -1;
  sc.max_model_len = max_model_len_;
  PAGELLM_ASSIGN_OR_RETURN(scheduler_, Scheduler::Create(sc));
  return OkStatus();
}

Status EngineCore::ValidateRequest(std::span<const int32_t> prompt, SamplingParams params) const {
  if (config_.generation_config == "auto") ApplyGenerationDefaults(loaded_.generation_config, params);
  int32_t vocab = static_cast<int32_t>(loaded_.config.vocab_size);
  PAGELLM_RETURN_IF_ERROR(ValidateSamplingParams(params, config_.max_logprobs, vocab));
  if (params.structured_outputs) PAGELLM_RETURN_IF_ERROR(structured_->Validate(*params.structured_outputs));
  if (prompt.empty()) return InvalidArgumentError("prompt: the prompt is empty");
  if (params.priority != 0 && config_.scheduling_policy != "priority") {
    return InvalidArgumentError("priority: a request priority needs --scheduling-policy priority (the server runs fcfs)");
  }
  for (int32_t id : prompt) {
    if (id < 0 || id >= vocab) {
      return InvalidArgumentError(fmt::format("prompt: token id {} is outside the vocabulary [0, {})", id, vocab));
    }
  }
  if (static_cast<int64_t>(prompt.size()) >= max_model_len_) {
    return InvalidArgumentError(fmt::format(
        "This model's maximum context length is {} tokens. However, your request has {} input tokens. "
        "Please reduce the length of the input messages.", max_model_len_, prompt.size()));
  }
  return OkStatus();
}

Status EngineCore::AddRequest(const std::string& request_id, std::vector<int32_t> prompt, SamplingParams params,
                              OutputCallback callback, const std::string& cache_key) {
  PAGELLM_RETURN_IF_ERROR(ValidateRequest(prompt, params));
  if (config_.generation_config == "auto") ApplyGenerationDefaults(loaded_.generation_config, params);
  if (children_.count(request_id)) return AlreadyExistsError(fmt::format("request id '{}' is already running", request_id));
  auto shared_cb = std::make_shared<OutputCallback>(std::move(callback));
  uint64_t counter = request_counter_++;
  std::vector<std::string> ids;
  for (int32_t i = 0; i < params.n; ++i) {
    std::string id = params.n == 1 ? request_id : fmt::format("{}#{}", request_id, i);
    auto state = std::make_unique<SampleState>(*tokenizer_, params, eos_token_ids_, max_model_len_,
                                               static_cast<int32_t>(prompt.size()));
    state->parent_id = request_id;
    state->index = i;
    state->rng = RngState::ForRequest(params.seed, config_.seed, counter, static_cast<uint64_t>(i));
    state->callback = shared_cb;
    state->times.arrival_s = Now();
    if (params.structured_outputs) {
      PAGELLM_ASSIGN_OR_RETURN(state->matcher, structured_->NewMatcher(*params.structured_outputs));
      state->grammar_active = params.structured_outputs->start_after_token < 0;
      state->mask.resize(static_cast<size_t>(structured_->num_mask_words()));
    }
    auto req = std::make_unique<Request>(id, prompt, params, state->times.arrival_s, eos_token_ids_, cache_key);
    Status added = scheduler_->AddRequest(std::move(req));
    if (!added.ok()) {
      for (const std::string& done : ids) scheduler_->AbortRequest(done).ok();
      for (const std::string& done : ids) samples_.erase(done);
      return added;
    }
    samples_[id] = std::move(state);
    ids.push_back(id);
  }
  children_[request_id] = std::move(ids);
  return OkStatus();
}

void EngineCore::AbortRequest(const std::string& request_id) {
  auto it = children_.find(request_id);
  if (it == children_.end()) return;
  for (const std::string& id : it->second) (void)scheduler_->AbortRequest(id);
}

StatusOr<EnginePreemption> EngineCore::PreemptRequests(const PreemptionRequest& request) {
  EnginePreemption p;
  PAGELLM_ASSIGN_OR_RETURN(p.result, scheduler_->PreemptNewest(request));
  for (const std::string& id : p.result.request_ids) {
    auto it = samples_.find(id);
    const std::string& parent = it != samples_.end() ? it->second->parent_id : id;
    if (std::find(p.request_ids.begin(), p.request_ids.end(), parent) == p.request_ids.end()) p.request_ids.push_back(parent);
  }
  const BlockPool& pool = scheduler_->kv_cache().pool();
  p.num_running = scheduler_->num_running();
  p.num_waiting = scheduler_->num_waiting();
  p.num_usable_blocks = pool.num_usable_blocks();
  p.num_used_blocks = pool.num_usable_blocks() - pool.num_free_blocks();
  p.num_idle_cached_blocks = pool.num_idle_cached_blocks();
  RefreshGauges();
  return p;
}

bool EngineCore::HasWork() const { return scheduler_->HasUnfinishedRequests(); }

Status EngineCore::GroupHealth() const { return dist_group_ != nullptr ? dist_group_->Health() : OkStatus(); }

EngineStats EngineCore::stats() const {
  EngineStats s = stats_;
  const StateSlotPool& slots = scheduler_->state_slots();
  if (!slots.enabled()) return s;
  const StateSnapshotCache& snapshots = scheduler_->state_snapshots();
  const StateRestoreCounts restores = GetStateRestoreCounts(*model_);
  s.hybrid.num_state_slots = slots.num_slots();
  s.hybrid.num_state_slots_used = slots.num_slots() - slots.num_free_slots();
  s.hybrid.num_snapshots = snapshots.num_snapshots();
  s.hybrid.num_snapshots_used = snapshots.num_cached();
  s.hybrid.snapshot_hits = restores.num_restores;
  s.hybrid.snapshot_hit_tokens = restores.num_restored_tokens;
  s.hybrid.snapshot_saves = snapshots.num_saves();
  s.hybrid.snapshot_evictions = snapshots.num_evictions();
  return s;
}

}  // namespace pagellm
