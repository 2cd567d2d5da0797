// ConvertToGguf: a Hugging Face Qwen2/Qwen3 (or Qwen3-Next / Qwen3.5 / Qwen3.5-MoE)
// checkpoint directory -> one GGUF file that
// llama.cpp loads, written the way llama.cpp's convert_hf_to_gguf.py writes it
// (`pagellm convert MODEL_DIR --outfile OUT.gguf --outtype q8_0`).
//
//   GgufConvertOptions options{.model_dir = "/models/qwen3-0.6b", .outfile = "q.gguf",
//                              .outtype = GgmlType::kQ8_0};
//   PAGELLM_ASSIGN_OR_RETURN(GgufConvertReport report, ConvertToGguf(options));
//
// Tensor types follow ModelBase.prepare_tensors: 1-D tensors, "*_norm.weight" and
// anything not ending in ".weight" (biases, ssm_a) stay F32, as do the MoE router
// (ffn_gate_inp), the shared-expert gate and ssm_conv1d; other tensors take `outtype`, and a
// Q8_0 tensor whose rows are not a multiple of 32 falls back to F16. Values go through
// float32 first (as torch's .to(float32)); F16/BF16 round to nearest even and Q8_0 uses
// llama.cpp's quantize_row_q8_0_ref. Metadata: gguf/gguf_metadata.h and
// gguf/gguf_tokenizer_metadata.h (the chat template comes from tokenizer_config.json,
// else chat_template.jinja, as gguf-py's SpecialVocab does). Tensor data is produced
// while the file is written, so memory stays at one chunk per thread. Hybrid models go
// through model/gguf_hybrid_plan.h (norms + 1, -exp(A_log), value-head reorder, expert
// stacking, as llama.cpp's Qwen3NextModel / Qwen3_5*Model). A hybrid checkpoint that ships the
// multi-token-prediction head (mtp.fc.weight present, config mtp_num_hidden_layers > 0) gets
// it as llama.cpp's NextN block, after every other tensor: block num_hidden_layers (norms + 1,
// the usual layer names, blk.N.nextn.{eh_proj,enorm,hnorm,shared_head_norm}), block_count
// counting it and {arch}.nextn_predict_layers; `keep_mtp` false drops it (--no-mtp).
//
// With `quantize` set (`--outtype q4_k_m`, q5_k_m, q6_k, q4_0, q5_0, iq4_nl, iq4_xs) the file
// is the one llama-quantize makes from the `outtype` (F16) file: each tensor's values are
// rounded to F16 first (llama-quantize reads them back from that file), then typed by
// llama-quantize's recipe (gguf/gguf_quant_recipe.h) and quantized with its no-imatrix
// quantizers (gguf/gguf_quantize.h), tensors in its order, general.file_type last: the same
// bytes as `llama-quantize F16.gguf OUT.gguf Q4_K_M` (tests/gguf/compare_quantized_files.py).
// `model_dir` may instead name such an F16 (or BF16 / F32) .gguf; then the quantization is
// applied to it directly, as llama-quantize does.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/status.h"
#include "gguf/gguf_quant_recipe.h"
#include "gguf/gguf_types.h"

namespace pagellm {

struct GgufConvertOptions {
  std::string model_dir;  // checkpoint directory, or a .gguf file (then `quantize` is required)
  std::string outfile;
  GgmlType outtype = GgmlType::kF16;  // kF32, kF16, kBF16 or kQ8_0 (ignored for a .gguf input)
  // Then llama-quantize's file type applied to the `outtype` file (a float type).
  std::optional<GgufFileType> quantize;
  std::string name;  // general.name; empty: the directory's name
  // Write the checkpoint's mtp.* head as the NextN block when it has one (llama.cpp's default);
  // false: leave it out, as convert_hf_to_gguf.py --no-mtp.
  bool keep_mtp = true;
};

struct GgufConvertReport {
  int64_t num_tensors = 0;
  int64_t num_f32_tensors = 0;  // kept in F32 by the rules above
  std::string type_counts;      // e.g. "f32 25, q4_K 12, q6_K 5"
  uint64_t file_bytes = 0;
};

// Which type llama.cpp's converter stores tensor `gguf_name` (PyTorch rank `rank`,
// ggml row length `ne0`) in for `outtype`.
GgmlType GgufTensorTypeFor(const std::string& gguf_name, int rank, int64_t ne0, GgmlType outtype);

StatusOr<GgufConvertReport> ConvertToGguf(const GgufConvertOptions& options);

}  // namespace pagellm
