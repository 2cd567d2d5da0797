// hybrid_logits: test driver that runs a hybrid (Qwen3-Next / Qwen3.5) model directory
// the way the engine will once it schedules state slots: whole-prompt prefill (logits at
// every position, written as .npy float32 [T, V]), then N greedy decode steps one token at
// a time on the same state slot. Prints {"token_ids": [...]}. Used by
// tests/golden/qwen35_reference.py compare; f32 weights and f32 KV cache.
//
// With --mtp MTP.npy it also loads the multi-token-prediction head and runs it over the
// prompt as the speculative decoder's first draft step does: MTP row i reads token i + 1
// and the prefill's final-normed hidden state i at position i (predicting token i + 2);
// the logits of rows 0..T-2 go to MTP.npy as float32 [T-1, V] (tests/golden/
// qwen35_reference.py mtp). The same rows are then run again on a fresh MTP KV cache in
// three pieces (first half, the rest but the last row, the last row alone as a decode
// step), which must reproduce the one-shot logits (exit 1 otherwise); the JSON then
// carries "mtp_chunked_rel_err".
//
//   hybrid_logits MODEL_DIR 1,2,3 out.npy 32 [--mtp mtp.npy]
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "backend/backend_registry.h"
#include "common/logging.h"
#include "model/hybrid/hybrid_model.h"
#include "model/model_loader.h"

namespace pagellm {
namespace {

constexpr int32_t kBlockSize = 16;
// Chunked vs one-shot MTP logits, relative to the largest |logit|: the same f32 math on
// the same rows, differing only in how attention splits the context (cached vs in-chunk
// keys), so only summation order may differ.
constexpr double kMaxChunkedRelErr = 1e-5;

Status WriteNpy(const std::string& path, const std::vector<float>& data, size_t rows, size_t cols) {
  std::string header = fmt::format("{{'descr': '<f4', 'fortran_order': False, 'shape': ({}, {}), }}", rows, cols);
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header.push_back('\n');
  std::ofstream out(path, std::ios::binary);
  out.write("\x93NUMPY\x01\x00", 8);
  const uint16_t len = static_cast<uint16_t>(header.size());
  out.write(reinterpret_cast<const char*>(&len), 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size() * sizeof(float)));
  return out ? OkStatus() : DataLossError(fmt::format("cannot write {}", path));
}

// The arrays behind a ForwardInput for one sequence (state slot 0, KV blocks 0..) feeding
// tokens [begin, end) of `tokens` at positions begin..end-1; block b holds positions
// [b * 16, b * 16 + 16). Logits at every new token or at the last one only.
struct OneSequence {
  OneSequence(const std::vector<int32_t>& tokens, int32_t begin, int32_t end, bool all_logits)
      : ids(tokens.begin() + begin, tokens.begin() + end), qsl{0, end - begin}, lens{end}, slots{0},
        max_blocks((end + kBlockSize - 1) / kBlockSize) {
    for (int32_t p = begin; p < end; ++p) {
      pos.push_back(p);
      kv_slots.push_back(p);
      if (all_logits || p == end - 1) rows.push_back(p - begin);
    }
    for (int32_t b = 0; b < max_blocks; ++b) table.push_back(b);
  }
  ForwardInput View() const {
    return ForwardInput{.token_ids = ids, .positions = pos, .slot_mapping = kv_slots, .query_start_loc = qsl,
                        .seq_lens = lens, .block_tables = table, .max_blocks_per_seq = max_blocks,
                        .logits_indices = rows, .state_slots = slots};
  }

  std::vector<int32_t> ids, pos, rows, table, qsl, lens, slots;
  std::vector<int64_t> kv_slots;
  int32_t max_blocks;
};

// One step of the target model feeding tokens [begin, seq.size()).
Status Step(HybridModel& model, PagedKvCache& kv, HybridStateCache& states, const std::vector<int32_t>& seq,
            int32_t begin, bool all_logits, std::vector<float>& logits) {
  const OneSequence one(seq, begin, static_cast<int32_t>(seq.size()), all_logits);
  logits.assign(one.rows.size() * static_cast<size_t>(model.config().vocab_size), 0.0f);
  return model.Forward(one.View(), kv, states, logits.data());
}

// MTP rows [begin, end) (token ids[r], hidden row r, position r) continuing `kv`; logits
// of every row go to rows [begin, end) of `logits` ([ids.size(), V]).
Status MtpStep(HybridModel& model, PagedKvCache& kv, const std::vector<int32_t>& ids,
               const std::vector<float>& hidden, int32_t begin, int32_t end, std::vector<float>& logits) {
  const OneSequence one(ids, begin, end, /*all_logits=*/true);
  const size_t h = static_cast<size_t>(model.config().hidden_size);
  const size_t vocab = static_cast<size_t>(model.config().vocab_size);
  std::vector<float> hidden_out(static_cast<size_t>(end - begin) * h);
  return model.ForwardMtp(one.View(), hidden.data() + static_cast<size_t>(begin) * h, /*step=*/0, kv,
                          hidden_out.data(), logits.data() + static_cast<size_t>(begin) * vocab);
}

// MTP logits over the prompt (see the file comment); checks the chunked run against the
// one-shot run and returns the relative difference.
StatusOr<double> RunMtp(HybridModel& model, const std::vector<int32_t>& prompt, const std::vector<float>& hidden,
                        const std::string& out) {
  const int32_t rows = static_cast<int32_t>(prompt.size()) - 1;
  if (rows < 1) return InvalidArgumentError("--mtp needs a prompt of at least 2 tokens");
  const std::vector<int32_t> ids(prompt.begin() + 1, prompt.end());
  const size_t vocab = static_cast<size_t>(model.config().vocab_size);
  auto fresh_cache = [&] {
    return PagedKvCache::Create(model.MakeMtpKvCacheSpec((rows + kBlockSize - 1) / kBlockSize, kBlockSize,
                                                         DType::kF32));
  };
  std::vector<float> whole(static_cast<size_t>(rows) * vocab), chunked(whole.size());
  {
    PAGELLM_ASSIGN_OR_RETURN(auto kv, fresh_cache());
    PAGELLM_RETURN_IF_ERROR(MtpStep(model, *kv, ids, hidden, 0, rows, whole));
  }
  PAGELLM_RETURN_IF_ERROR(WriteNpy(out, whole, static_cast<size_t>(rows), vocab));
  // Prefill chunk, a continuing chunk over cached keys, then a one-row decode step.
  std::vector<int32_t> cuts = {0, rows / 2, rows - 1, rows};
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  PAGELLM_ASSIGN_OR_RETURN(auto kv, fresh_cache());
  for (size_t c = 0; c + 1 < cuts.size(); ++c) {
    PAGELLM_RETURN_IF_ERROR(MtpStep(model, *kv, ids, hidden, cuts[c], cuts[c + 1], chunked));
  }
  double max_diff = 0.0, scale = 0.0;
  for (size_t i = 0; i < whole.size(); ++i) {
    max_diff = std::max(max_diff, std::abs(static_cast<double>(whole[i]) - chunked[i]));
    scale = std::max(scale, std::abs(static_cast<double>(whole[i])));
  }
  const double rel = max_diff / std::max(scale, 1e-30);
  if (!(rel <= kMaxChunkedRelErr)) {  // also catches NaN
    return InternalError(fmt::format("MTP logits in chunks {} differ from one shot: max|d|/scale {:.3e} > {:.0e}",
                                     cuts, rel, kMaxChunkedRelErr));
  }
  return rel;
}

Status Run(const std::string& dir, const std::string& ids_arg, const std::string& out, int32_t num_greedy,
           const std::string& mtp_out) {
  std::vector<int32_t> seq;
  std::stringstream ss(ids_arg);
  for (std::string tok; std::getline(ss, tok, ',');) seq.push_back(std::stoi(tok));
  LoadOptions load{.model_path = dir, .load_format = "auto", .dtype = "float32", .load_mtp = !mtp_out.empty()};
  PAGELLM_ASSIGN_OR_RETURN(LoadedModel loaded, LoadModel(load));
  PAGELLM_ASSIGN_OR_RETURN(Backend * backend, BackendRegistry::Get("cpu"));
  const int32_t total = static_cast<int32_t>(seq.size()) + num_greedy;
  PAGELLM_ASSIGN_OR_RETURN(auto model, HybridModel::Create(loaded.config, loaded.weights, *backend, total));
  PAGELLM_ASSIGN_OR_RETURN(auto kv, PagedKvCache::Create(model->MakeKvCacheSpec((total + kBlockSize - 1) / kBlockSize,
                                                                              kBlockSize, DType::kF32)));
  PAGELLM_ASSIGN_OR_RETURN(auto states, HybridStateCache::Create(model->MakeStateSpec(1)));
  std::vector<float> logits;
  PAGELLM_RETURN_IF_ERROR(Step(*model, *kv, *states, seq, 0, true, logits));
  const size_t vocab = static_cast<size_t>(loaded.config.vocab_size);
  PAGELLM_RETURN_IF_ERROR(WriteNpy(out, logits, seq.size(), vocab));
  std::string extra;
  if (!mtp_out.empty()) {
    if (!model->has_mtp()) return NotFoundError(fmt::format("{} has no MTP head", dir));
    // The MTP runs before the greedy steps, which must be unaffected by it (shared workspace).
    const std::span<const float> hidden = model->last_hidden();
    PAGELLM_ASSIGN_OR_RETURN(double rel, RunMtp(*model, seq, std::vector<float>(hidden.begin(), hidden.end()),
                                                mtp_out));
    extra = fmt::format(", \"mtp_chunked_rel_err\": {:.3e}", rel);
  }
  std::vector<int32_t> generated;
  for (int32_t i = 0; i < num_greedy; ++i) {
    const float* last = logits.data() + logits.size() - vocab;
    generated.push_back(static_cast<int32_t>(std::max_element(last, last + vocab) - last));
    seq.push_back(generated.back());
    if (i + 1 < num_greedy) PAGELLM_RETURN_IF_ERROR(Step(*model, *kv, *states, seq, seq.size() - 1, false, logits));
  }
  std::printf("{\"token_ids\": [%s]%s}\n", fmt::format("{}", fmt::join(generated, ", ")).c_str(), extra.c_str());
  return OkStatus();
}

}  // namespace
}  // namespace pagellm

int main(int argc, char** argv) {
  const bool mtp = argc == 7 && std::string(argv[5]) == "--mtp";
  if (argc != 5 && !mtp) {
    std::fprintf(stderr, "usage: hybrid_logits MODEL_DIR IDS OUT.npy NUM_GREEDY [--mtp MTP_OUT.npy]\n");
    return 2;
  }
  pagellm::SetLogLevel("info");  // logs to stderr: stdout carries the JSON
  pagellm::Status st = pagellm::Run(argv[1], argv[2], argv[3], std::stoi(argv[4]), mtp ? argv[6] : "");
  if (!st.ok()) {
    std::fprintf(stderr, "hybrid_logits: %s\n", st.ToString().c_str());
    return 1;
  }
  return 0;
}
