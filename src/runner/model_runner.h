// ModelRunner: turns a SchedulerOutput into the model's flat ForwardInput, runs the
// forward pass, and hands back the logits rows the sampler needs. CausalLm is the model
// as the runner sees it: QwenModel (dense / MoE) and HybridModel (Qwen3.5 / Qwen3-Next)
// behind one interface (engine/causal_lm.h builds the right one from the config). It
// lives here, not in model/, because the runner is its only caller.
//
//   PAGELLM_ASSIGN_OR_RETURN(std::unique_ptr<CausalLm> model, CreateCausalLm(...));
//   ModelRunner runner(*model, *kv_cache, /*block_size=*/16);
//   PAGELLM_ASSIGN_OR_RETURN(const StepLogits* logits, runner.Execute(sched_out));
//   // logits->rows(r) belongs to sched_out.scheduled[logits->scheduled_index[r]]
//
// This is the only place where scheduling state (block ids, token counts) meets device
// memory (the KV cache). Host-side arrays are reused across steps: no per-step
// allocation once the largest batch has been seen. ReserveLogitRows sizes (and touches)
// the logits for the largest step up front, as vLLM's profile run does.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/aligned_buffer.h"
#include "backend/paged_kv_cache.h"
#include "common/status.h"
#include "model/config.h"
#include "model/forward_input.h"
#include "model/forward_input_builder.h"
#include "runner/mtp_head.h"
#include "sched/scheduler_output.h"

namespace pagellm {

class CausalLm {
 public:
  virtual ~CausalLm() = default;
  virtual const ModelConfig& config() const = 0;
  // Paged KV layout of the layers that attend (every layer, or a hybrid model's
  // full-attention layers only).
  virtual KvCacheSpec MakeKvCacheSpec(int64_t num_blocks, int64_t block_size, DType dtype) const = 0;
  // Bytes of recurrent state one sequence holds; 0 for attention-only models, which
  // then use no state slots.
  virtual int64_t state_bytes_per_slot() const = 0;
  // Allocates `num_slots` state slots and `num_snapshots` snapshot entries (same size,
  // for hybrid prefix caching), once, before the first Forward (no-op when
  // state_bytes_per_slot() == 0). ResourceExhausted if the memory is not there.
  virtual Status AllocateStateSlots(int64_t num_slots, int64_t num_snapshots) = 0;
  // Copies a slot's whole state (every GDN layer) into a snapshot entry, or back.
  // Preconditions: ids in range, states allocated.
  virtual void SaveStateSnapshot(int32_t slot_idx, int32_t snapshot_idx) = 0;
  virtual void RestoreStateSnapshot(int32_t snapshot_idx, int32_t slot_idx) = 0;
  // logits: [input.logits_indices.size(), vocab_size]. Stateful models need
  // input.state_slots ([num_seqs]); a slot is reset when its sequence starts at 0.
  virtual Status Forward(const ForwardInput& input, PagedKvCache& kv, float* logits) = 0;
  // The multi-token-prediction head, when the model was loaded with one (runner/mtp_head.h).
  virtual MtpHead* mtp_head() { return nullptr; }
};

struct StepLogits {
  int32_t vocab_size = 0;
  float* data = nullptr;                 // [num_rows, vocab_size], the runner's buffer
  std::vector<int32_t> scheduled_index;  // [num_rows] index into SchedulerOutput::scheduled
  std::vector<int32_t> positions;       // [num_rows] token position whose next token this predicts
  int32_t num_rows() const { return static_cast<int32_t>(scheduled_index.size()); }
  const float* row(int32_t r) const { return data + static_cast<size_t>(r) * vocab_size; }
};

class ModelRunner {
 public:
  // `model` and `kv_cache` are borrowed and must outlive the runner.
  ModelRunner(CausalLm& model, PagedKvCache& kv_cache, int32_t block_size);

  // Runs one step. With `all_positions`, returns a logits row for every computed token
  // (prompt scoring); otherwise one row per scheduled request that samples.
  StatusOr<const StepLogits*> Execute(const SchedulerOutput& out, bool all_positions = false);

  // Makes room for `rows` logits rows and faults every page in now. Without it the first
  // step of each larger size paid the faults: 69-202 ms for 24-80 rows of Qwen's
  // vocabulary on a VM where a first touch is slow, against ~20 ms for the step after,
  // and a step-cost model that saw those steps priced speculation wrong. A larger step
  // than reserved still runs (the buffer grows; prompt scoring asks for one row per token).
  Status ReserveLogitRows(int64_t rows);
  static int64_t LogitBytes(int64_t rows, int64_t vocab_size) { return rows * vocab_size * int64_t{sizeof(float)}; }

 private:
  // Lays out `out` in input_ and fills logits_' bookkeeping; the result views input_.
  ForwardInput BuildInput(const SchedulerOutput& out, bool all_positions);

  CausalLm& model_;
  bool uses_state_slots_;
  PagedKvCache& kv_cache_;
  ForwardInputBuilder input_;  // reused host arrays behind ForwardInput's spans
  StepLogits logits_;
  AlignedBuffer logits_buffer_;  // logits_.data points here; not cleared between steps
  int64_t logit_rows_capacity_ = 0;
};

}  // namespace pagellm
