// EngineCore: the step loop that ties scheduler, model runner, sampler, detokenizer and
// stop checker together (vLLM's EngineCore + output processor, single-threaded).
//
//   PAGELLM_ASSIGN_OR_RETURN(auto core, EngineCore::Create(config));
//   PAGELLM_RETURN_IF_ERROR(core->AddRequest("r1", prompt_ids, params,
//       [](RequestOutput&& delta) { std::cout << delta.text; }));
//   while (core->HasWork()) PAGELLM_RETURN_IF_ERROR(core->Step());
//
// Step = schedule -> build model input -> forward -> sample -> detokenize and check
// stops -> update the scheduler -> push deltas to each request's callback.
// Callbacks run on the calling thread and must not block. Not thread-safe: the
// LlmEngine wrapper serialises calls from other threads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/backend.h"
#include "common/status.h"
#include "engine/engine_config.h"
#include "engine/engine_stats.h"
#include "engine/memory_plan.h"
#include "engine/request_output.h"
#include "engine/step_cost_model.h"
#include "engine/structured_output.h"
#include "model/model_loader.h"
#include "model/weight_binding.h"
#include "runner/model_runner.h"
#include "runner/sampler.h"
#include "sched/scheduler.h"
#include "spec/draft_model_proposer.h"
#include "spec/mtp_proposer.h"
#include "spec/ngram_proposer.h"
#include "spec/spec_policy.h"
#include "spec/speculative_config.h"
#include "tokenizer/tokenizer.h"

namespace pagellm {

struct SampleState;
class ProfilingBackend;
class DistGroup;
using OutputCallback = std::function<void(RequestOutput&&)>;

// PreemptRequests' answer: the scheduler's result, with the ids the clients know.
struct EnginePreemption {
  PreemptionResult result;                 // request_ids: scheduler (sample) ids
  std::vector<std::string> request_ids;    // the clients' request ids, newest first, once each
  int32_t num_running = 0;                 // after the preemption
  int32_t num_waiting = 0;
  int32_t num_used_blocks = 0;             // held by requests now
  int32_t num_idle_cached_blocks = 0;      // free but still prefix-cache hits
  int32_t num_usable_blocks = 0;
};

class EngineCore {
 public:
  static StatusOr<std::unique_ptr<EngineCore>> Create(const EngineConfig& config);
  ~EngineCore();

  // Validates and queues a request; SamplingParams.n > 1 becomes n samples sharing the
  // prompt (and its cached blocks). Unset params take the model's generation_config
  // defaults. InvalidArgument for bad params, out-of-vocabulary ids, or a prompt longer
  // than max_model_len; nothing is queued then.
  Status AddRequest(const std::string& request_id, std::vector<int32_t> prompt_token_ids,
                    SamplingParams params, OutputCallback callback, const std::string& cache_key = "");
  // The checks AddRequest makes before queueing anything (params after the
  // generation_config defaults, prompt ids, prompt length vs max_model_len). Reads only
  // immutable state, so other threads may call it (LlmEngine does, to fail synchronously).
  Status ValidateRequest(std::span<const int32_t> prompt_token_ids, SamplingParams params) const;
  // Aborts every sample of `request_id`; its final delta (finish_reason "abort") is
  // emitted and its blocks freed at the next Step(). Unknown ids are ignored.
  void AbortRequest(const std::string& request_id);

  bool HasWork() const;
  Status Step();
  // Drops the prefix cache's hashes when no request holds blocks; false otherwise.
  bool ResetPrefixCache() { return scheduler_->ResetPrefixCache(); }
  // Preempts the newest running requests by recompute (Scheduler::PreemptNewest): their
  // streams pause and resume with the same tokens; nothing is dropped. Between steps only.
  StatusOr<EnginePreemption> PreemptRequests(const PreemptionRequest& request);
  // Tensor parallel: Unavailable once a worker rank has exited (any thread may ask);
  // always OK for a single rank. A hung rank shows as a failed Step instead.
  Status GroupHealth() const;

  // Logits at every prompt position ([prompt_len, vocab] row-major), computed through
  // the same scheduler and runner as generation (prompt scoring, fidelity tests).
  StatusOr<std::vector<float>> ScorePrompt(std::span<const int32_t> prompt_token_ids);

  const ModelConfig& model_config() const { return loaded_.config; }
  const GenerationConfig& generation_config() const { return loaded_.generation_config; }
  const tokenizer::Tokenizer& tokenizer() const { return *tokenizer_; }
  const std::string& tokenizer_dir() const { return loaded_.tokenizer_path; }
  const EngineConfig& config() const { return config_; }
  const MemoryPlan& memory_plan() const { return plan_; }
  // This rank's weights by tensor group and storage format, as loaded (/metrics' pagellm:weight_bytes).
  const std::vector<WeightFormat>& weight_formats() const { return weight_formats_; }
  int32_t max_model_len() const { return max_model_len_; }
  std::vector<int32_t> eos_token_ids() const { return eos_token_ids_; }
  // Counters and gauges as of the last step, with the hybrid state cache's read live
  // from the scheduler and the model (a copy: LlmEngine hands it to other threads).
  EngineStats stats() const;
  // Read-only view of the scheduler (queues, KV block accounting) for tests and metrics:
  // scheduler().kv_cache().num_free_blocks() == memory_plan().num_blocks when idle.
  const Scheduler& scheduler() const { return *scheduler_; }
  // The draft model's proposer (method draft_model), else nullptr; for tests.
  const DraftModelProposer* draft_proposer() const { return draft_.get(); }
  // The MTP proposer (method mtp), else nullptr; for tests.
  const MtpProposer* mtp_proposer() const { return mtp_.get(); }

 private:
  explicit EngineCore(const EngineConfig& config);
  Status Init();
  Status InitScheduler();
  // Drops the file pages of weights the backend copied; returns the bytes (the embedding's
  // pages stay counted).
  int64_t ReleaseCopiedWeightPages(const TensorView& embed_tokens);
  // Logits rows of the largest step the scheduler can make (the memory plan counts them;
  // the runner touches them at startup), and of the draft model's largest step.
  int64_t MaxLogitRows() const;
  int64_t MaxDraftLogitRows() const;
  // --speculative-config with a draft "model": loads it next to the target (attention-
  // only, the target's tokenizer); its KV cache is made with the scheduler's blocks.
  Status LoadDraftModel(int32_t max_num_tokens);
  // Samples the rows of `logits` (verifying drafts: engine_spec.cc), feeds detokenizer
  // and stop checker, fills deltas. `produced[i]`: the tokens scheduled request i emits.
  void ProcessSamples(const SchedulerOutput& out, const StepLogits& logits,
                      std::vector<std::vector<int32_t>>* produced, std::vector<std::string>* stopped_ids,
                      std::unordered_map<std::string, RequestOutput>* deltas);
  // One emitted token through logprobs, counters, grammar and stop checks; true if the
  // sample finished with it.
  bool EmitToken(const std::string& id, SampleState& st, SampleResult&& result, double now,
                 std::vector<std::string>* stopped_ids, RequestOutput* delta);
  // Speculative decoding (engine_spec.cc): counts a verification's outcome, and
  // proposes the next step's drafts for the running requests.
  void RecordVerification(int32_t num_drafts, int32_t num_accepted);
  // Returns the seconds a draft model or the MTP head spent proposing (0 for n-gram
  // lookup). `out` and `produced`: the step just run (the MTP head's rows come from it).
  double ProposeDrafts(const SchedulerOutput& out, std::span<const std::vector<int32_t>> produced);
  double ProposeModelDrafts(int32_t k);
  double ProposeMtpDrafts(const SchedulerOutput& out, std::span<const std::vector<int32_t>> produced, int32_t k);
  // A draft model's or MTP head's proposals (request i: request_ids[i], states[i], null
  // when it takes no drafts) trimmed to the grammar and handed to the scheduler; prices
  // the forwards for the policy and returns the seconds since `start`.
  double ApplyModelDrafts(const char* proposer, std::span<const std::string_view> request_ids,
                          std::span<SampleState* const> states, StatusOr<std::vector<std::vector<int32_t>>> proposals,
                          std::span<const DraftForwardTiming> forwards, double start);
  // Decode-only step timings with and without drafts (SpecDecodeStats).
  // True for a decode-only step (every scheduled request computes its next token and its
  // drafts only): its forward time goes to the verification-overhead stats.
  bool RecordDecodeStepTiming(const SchedulerOutput& out, double forward_s);
  size_t GrammarAllowedPrefix(SampleState& st, std::span<const int32_t> drafts);
  // vLLM's "SpecDecoding metrics: ..." line, once at shutdown.
  void LogSpecDecodeSummary() const;
  // Mean forward time of decode-only steps with and without drafts, and of the draft
  // model's proposals: one line at shutdown (the verification-overhead figure).
  void LogDecodeStepTimes() const;
  void FinishSample(const std::string& id, const std::string& reason, RequestOutput* delta);
  void EmitAbort(const std::string& id);
  void RecordStepStats(const SchedulerOutput& out);
  void RefreshGauges();  // running/waiting, KV usage, prefix-cache counters
  double Now() const;

  EngineConfig config_;
  LoadedModel loaded_;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer_;
  Backend* backend_ = nullptr;
  std::unique_ptr<ProfilingBackend> op_profiler_;  // PAGELLM_PROFILE_OPS=1: wraps the backend
  int64_t prepared_weight_bytes_ = 0;  // the backend's copies of this model's weights
  int64_t released_weight_bytes_ = 0;  // file pages those copies replaced (dropped from memory)
  std::unique_ptr<DistGroup> dist_group_;  // tensor parallel: the worker ranks (engine/dist_group.h)
  int64_t shard_bytes_ = 0;                // tensor parallel: this rank's weight bytes
  std::unique_ptr<CausalLm> model_;  // QwenModel or HybridModel (engine/causal_lm.h); TpCausalLm when sharded
  std::unique_ptr<PagedKvCache> kv_cache_;
  std::unique_ptr<ModelRunner> runner_;
  std::unique_ptr<Sampler> sampler_;
  std::unique_ptr<Scheduler> scheduler_;
  MemoryPlan plan_;
  std::vector<WeightFormat> weight_formats_;
  int32_t max_model_len_ = 0;
  std::vector<int32_t> eos_token_ids_;
  uint64_t request_counter_ = 0;
  EngineStats stats_;
  // Per sample (scheduler request id) state, and parent id -> sample ids.
  std::unordered_map<std::string, std::unique_ptr<SampleState>> samples_;
  std::unordered_map<std::string, std::vector<std::string>> children_;
  std::vector<float>* score_sink_ = nullptr;  // set during ScorePrompt
  StepCostModel step_cost_;                   // measured step times -> prefill cap (engine_step.cc)
  // Decode-only steps' times (with and without drafts) -> the speculation policy. Kept
  // apart from step_cost_: prefill steps are far cheaper per token, and a slope learned
  // from them priced a 16 x 5-token verification at a third of its cost, so drafts stayed
  // on where they lost throughput (n-gram, 16 sequences, Zen 5: 0.82x in decode time).
  StepCostModel decode_cost_{0.9, /*min_spread_tokens=*/1.0};
  std::unique_ptr<StructuredOutputs> structured_;  // grammar cache + vocabulary for masks
  SpeculativeConfig spec_config_;                  // --speculative-config (off by default)
  std::unique_ptr<NgramProposer> ngram_;
  std::unique_ptr<SpecPolicy> spec_policy_;
  // Draft model (method draft_model): declared so the proposer goes before the model and
  // KV cache it borrows, and the model before the weights it maps.
  LoadedModel draft_loaded_;
  std::unique_ptr<CausalLm> draft_model_;
  std::unique_ptr<PagedKvCache> draft_kv_;
  std::unique_ptr<DraftModelProposer> draft_;
  int64_t draft_loaded_bytes_ = 0;   // the draft's tensors as loaded (in the memory plan's weights)
  // MTP (method mtp): the target's head drafts over its own KV cache (declared after the
  // model it borrows, so it goes first).
  std::unique_ptr<PagedKvCache> mtp_kv_;
  std::unique_ptr<MtpProposer> mtp_;
  StepCostModel draft_cost_;         // its forwards' measured times: the policy's cost of drafting
  // Structured outputs around the sampler (engine_step.cc).
  void FillGrammarMask(SampleState& st, SamplingRequest* req);
  // Advances the matcher; true if the grammar is now complete (the sample ends).
  bool AdvanceGrammar(SampleState& st, int32_t token);
  // Advances the grammar (or its start_after_token switch) by a token that is not yet
  // emitted, counting matcher tokens in *num_advanced for a Rollback; false when the
  // matcher refuses it or is complete after it.
  bool AdvanceGrammarTentatively(SampleState& st, int32_t token, int32_t* num_advanced);
};

}  // namespace pagellm
