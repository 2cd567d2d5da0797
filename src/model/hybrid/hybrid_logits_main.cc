// hybrid_logits: test driver that runs a hybrid (Qwen3-Next / Qwen3.5) model directory
// the way the engine will once it schedules state slots: whole-prompt prefill (logits at
// every position, written as .npy float32 [T, V]), then N greedy decode steps one token at
// a time on the same state slot. Prints {"token_ids": [...]}. Used by
// tests/golden/qwen35_reference.py compare; f32 weights and f32 KV cache.
//
//   hybrid_logits MODEL_DIR 1,2,3 out.npy 32
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
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

// One step of one sequence (slot 0, blocks 0..) feeding tokens [begin, seq.size()).
Status Step(HybridModel& model, PagedKvCache& kv, HybridStateCache& states, const std::vector<int32_t>& seq,
            int32_t begin, bool all_logits, std::vector<float>& logits) {
  const int32_t end = static_cast<int32_t>(seq.size()), max_blocks = (end + kBlockSize - 1) / kBlockSize;
  std::vector<int32_t> ids(seq.begin() + begin, seq.end()), pos, rows, table, qsl = {0, end - begin};
  std::vector<int32_t> lens = {end}, slots = {0};
  std::vector<int64_t> kv_slots;
  for (int32_t p = begin; p < end; ++p) {
    pos.push_back(p);
    kv_slots.push_back(p);  // block b holds positions [b * 16, b * 16 + 16)
    if (all_logits || p == end - 1) rows.push_back(p - begin);
  }
  for (int32_t b = 0; b < max_blocks; ++b) table.push_back(b);
  ForwardInput in{.token_ids = ids, .positions = pos, .slot_mapping = kv_slots, .query_start_loc = qsl,
                  .seq_lens = lens, .block_tables = table, .max_blocks_per_seq = max_blocks,
                  .logits_indices = rows, .state_slots = slots};
  logits.assign(rows.size() * static_cast<size_t>(model.config().vocab_size), 0.0f);
  return model.Forward(in, kv, states, logits.data());
}

Status Run(const std::string& dir, const std::string& ids_arg, const std::string& out, int32_t num_greedy) {
  std::vector<int32_t> seq;
  std::stringstream ss(ids_arg);
  for (std::string tok; std::getline(ss, tok, ',');) seq.push_back(std::stoi(tok));
  LoadOptions load{.model_path = dir, .load_format = "auto", .dtype = "float32"};
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
  std::vector<int32_t> generated;
  for (int32_t i = 0; i < num_greedy; ++i) {
    const float* last = logits.data() + logits.size() - vocab;
    generated.push_back(static_cast<int32_t>(std::max_element(last, last + vocab) - last));
    seq.push_back(generated.back());
    if (i + 1 < num_greedy) PAGELLM_RETURN_IF_ERROR(Step(*model, *kv, *states, seq, seq.size() - 1, false, logits));
  }
  std::printf("{\"token_ids\": [%s]}\n", fmt::format("{}", fmt::join(generated, ", ")).c_str());
  return OkStatus();
}

}  // namespace
}  // namespace pagellm

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: hybrid_logits MODEL_DIR IDS OUT.npy NUM_GREEDY\n");
    return 2;
  }
  pagellm::SetLogLevel("info");  // logs to stderr: stdout carries the JSON
  pagellm::Status st = pagellm::Run(argv[1], argv[2], argv[3], std::stoi(argv[4]));
  if (!st.ok()) {
    std::fprintf(stderr, "hybrid_logits: %s\n", st.ToString().c_str());
    return 1;
  }
  return 0;
}
