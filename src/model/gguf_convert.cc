#include "model/gguf_convert.h"

#include <cstring>
#include <filesystem>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "common/json.h"
#include "common/logging.h"
#include "common/mapped_file.h"
#include "gguf/gguf_metadata.h"
#include "gguf/gguf_names.h"
#include "gguf/gguf_quants.h"
#include "gguf/gguf_tokenizer_metadata.h"
#include "gguf/gguf_writer.h"
#include "model/config.h"
#include "model/convert.h"
#include "model/gguf_hybrid_plan.h"
#include "model/safetensors.h"
#include "model/weight_spec.h"
#include "tensor/half.h"

namespace pagellm {
namespace {

namespace fs = std::filesystem;

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Encodes `n` float32 values as `type` into `out` (GgmlRowBytes(type, n) bytes).
void EncodeFloats(const float* x, int64_t n, GgmlType type, std::byte* out) {
  switch (type) {
    case GgmlType::kF32: std::memcpy(out, x, static_cast<size_t>(n) * 4); return;
    case GgmlType::kQ8_0: QuantizeQ8_0(x, n, out); return;
    default: break;
  }
  for (int64_t i = 0; i < n; ++i) {
    uint16_t h = type == GgmlType::kF16 ? F32ToF16(x[i]) : F32ToBf16(x[i]);
    std::memcpy(out + 2 * i, &h, 2);
  }
}

// The producer that writes `src` ([rows, ne0] in PyTorch order) as `type`, rows in parallel.
GgufWriter::TensorProducer MakeProducer(const TensorView* src, int64_t ne0, GgmlType type) {
  return [src, ne0, type](std::span<std::byte> out) -> Status {
    const int64_t num_rows = src->numel() / ne0;
    const size_t row_bytes = GgmlRowBytes(type, ne0);
    const int64_t grain = std::max<int64_t>(1, 65536 / ne0);
    ParallelFor(num_rows, grain, [&](int64_t begin, int64_t end) {
      std::vector<float> row(static_cast<size_t>(ne0));
      for (int64_t r = begin; r < end; ++r) {
        TensorView in{static_cast<char*>(src->data) + r * ne0 * DTypeSize(src->dtype), src->dtype, {ne0}};
        TensorView f32{row.data(), DType::kF32, {ne0}};
        ConvertTensor(in, f32);
        EncodeFloats(row.data(), ne0, type, out.data() + static_cast<size_t>(r) * row_bytes);
      }
    });
    return OkStatus();
  };
}

// The producer that writes hybrid-plan output rows as `type` (inputs parallel to plan->inputs).
GgufWriter::TensorProducer MakePlanProducer(const GgufTensorPlan* plan, std::vector<const TensorView*> inputs,
                                            GgmlType type) {
  return [plan, inputs = std::move(inputs), type](std::span<std::byte> out) -> Status {
    const int64_t ne0 = plan->row_len();
    const size_t row_bytes = GgmlRowBytes(type, ne0);
    ParallelFor(static_cast<int64_t>(plan->rows.size()), std::max<int64_t>(1, 65536 / ne0),
                [&](int64_t begin, int64_t end) {
                  RunPlanRowsF32(*plan, inputs, begin, end, [&](int64_t r, const float* row) {
                    EncodeFloats(row, ne0, type, out.data() + static_cast<size_t>(r) * row_bytes);
                  });
                });
    return OkStatus();
  };
}

// llama.cpp's pre-tokenizer name: Qwen3.5's regex adds \p{M} (combining marks) to letter
// runs (docs/qwen-architectures.md §6.1); the converter tells them apart by a token hash.
std::string PreTokenizerName(const Json& tokenizer_json) {
  const std::string pre = tokenizer_json.value("pre_tokenizer", Json::object()).dump();
  return pre.find("\\p{M}") != std::string::npos ? "qwen35" : "qwen2";
}

StatusOr<Json> ReadJsonIfExists(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return Json::object();
  return ReadJsonFile(path);
}

// general.* / {arch}.* / tokenizer.* keys, in the order llama.cpp's converter writes them.
Status AddMetadata(const GgufConvertOptions& options, const Json& config, GgufWriter& writer) {
  std::string name = options.name.empty() ? fs::path(options.model_dir).filename().string() : options.name;
  if (name.empty()) name = fs::path(options.model_dir).parent_path().filename().string();
  PAGELLM_ASSIGN_OR_RETURN(GgufMetadata model_kv, BuildGgufModelMetadata(config, options.outtype, name));
  PAGELLM_ASSIGN_OR_RETURN(Json tokenizer_json, ReadJsonFile(options.model_dir + "/tokenizer.json"));
  PAGELLM_ASSIGN_OR_RETURN(Json tokenizer_config, ReadJsonIfExists(options.model_dir + "/tokenizer_config.json"));
  std::error_code ec;
  std::string jinja = options.model_dir + "/chat_template.jinja";
  if (!tokenizer_config.contains("chat_template") && fs::exists(jinja, ec)) {
    PAGELLM_ASSIGN_OR_RETURN(std::string source, ReadFileToString(jinja));
    tokenizer_config["chat_template"] = source;
  }
  PAGELLM_ASSIGN_OR_RETURN(GgufMetadata tok_kv,
                           BuildGgufTokenizerMetadata(tokenizer_json, tokenizer_config, MergedHfTextConfig(config),
                                                      PreTokenizerName(tokenizer_json)));
  for (auto& [key, value] : model_kv) writer.AddMetadata(key, std::move(value));
  for (auto& [key, value] : tok_kv) writer.AddMetadata(key, std::move(value));
  return OkStatus();
}

}  // namespace

GgmlType GgufTensorTypeFor(const std::string& gguf_name, int rank, int64_t ne0, GgmlType outtype) {
  if (rank <= 1 || EndsWith(gguf_name, "_norm.weight") || !EndsWith(gguf_name, ".weight")) return GgmlType::kF32;
  // Router, shared-expert gate and GDN conv kernel stay F32 (prepare_tensors' F32 list).
  for (std::string_view f32 : {".ffn_gate_inp.weight", ".ffn_gate_inp_shexp.weight", ".ssm_conv1d.weight"}) {
    if (EndsWith(gguf_name, f32)) return GgmlType::kF32;
  }
  if (ne0 % GgmlBlockSize(outtype) != 0) return GgmlType::kF16;  // gguf-py's QuantError fallback
  return outtype;
}

StatusOr<GgufConvertReport> ConvertToGguf(const GgufConvertOptions& options) {
  const GgmlType outtype = options.outtype;
  if (outtype != GgmlType::kF32 && outtype != GgmlType::kF16 && outtype != GgmlType::kBF16 &&
      outtype != GgmlType::kQ8_0) {
    return InvalidArgumentError(
        fmt::format("--outtype {} is not supported (f32, f16, bf16, q8_0)", GgmlTypeName(outtype)));
  }
  PAGELLM_ASSIGN_OR_RETURN(Json config_json, ReadJsonFile(options.model_dir + "/config.json"));
  PAGELLM_ASSIGN_OR_RETURN(ModelConfig config, ParseModelConfig(config_json));
  PAGELLM_ASSIGN_OR_RETURN(std::string arch, GgufArchFromHfConfig(config_json));
  PAGELLM_ASSIGN_OR_RETURN(auto ckpt, SafetensorsCheckpoint::Open(options.model_dir));
  GgufWriter writer;
  PAGELLM_RETURN_IF_ERROR(AddMetadata(options, config_json, writer));
  GgufConvertReport report;
  std::map<std::string, const TensorView*> views;
  for (const WeightSpec& spec : ListWeightSpecs(config)) {
    const TensorView* view = ckpt->Find(spec.name);
    if (view == nullptr) return NotFoundError(fmt::format("{}: checkpoint has no tensor '{}'", options.model_dir, spec.name));
    if (view->shape != spec.shape) {
      return InvalidArgumentError(fmt::format("{}: tensor '{}' has shape {}, config implies {}", options.model_dir,
                                              spec.name, ShapeToString(view->shape), ShapeToString(spec.shape)));
    }
    views[spec.name] = view;
  }
  auto add = [&](const std::string& gguf_name, const std::vector<int64_t>& shape, auto make_producer) -> Status {
    std::vector<int64_t> ne(shape.rbegin(), shape.rend());
    GgmlType type = GgufTensorTypeFor(gguf_name, static_cast<int>(shape.size()), ne[0], outtype);
    report.num_f32_tensors += type == GgmlType::kF32 ? 1 : 0;
    ++report.num_tensors;
    return writer.AddTensor(gguf_name, type, ne, make_producer(ne[0], type));
  };
  std::vector<GgufTensorPlan> plans;  // outlives writer.WriteFile (the producers point into it)
  if (IsHybridGgufArch(arch)) {
    PAGELLM_ASSIGN_OR_RETURN(plans, HybridGgufPlans(config, arch));
    for (const GgufTensorPlan& plan : plans) {
      std::vector<const TensorView*> inputs;
      for (const std::string& name : plan.inputs) inputs.push_back(views.at(name));
      PAGELLM_RETURN_IF_ERROR(add(plan.name, plan.shape, [&](int64_t, GgmlType type) {
        return MakePlanProducer(&plan, inputs, type);
      }));
    }
  } else {
    for (const WeightSpec& spec : ListWeightSpecs(config)) {
      PAGELLM_ASSIGN_OR_RETURN(std::string gguf_name, HfToGgufTensorName(arch, spec.name));
      const TensorView* view = views.at(spec.name);
      PAGELLM_RETURN_IF_ERROR(add(gguf_name, spec.shape, [&](int64_t ne0, GgmlType type) {
        return MakeProducer(view, ne0, type);
      }));
    }
  }
  PAGELLM_RETURN_IF_ERROR(writer.WriteFile(options.outfile));
  std::error_code ec;
  report.file_bytes = fs::file_size(options.outfile, ec);
  PLOG_INFO("wrote {}: {} tensors ({} kept F32), {} weights, {:.1f} MB", options.outfile, report.num_tensors,
            report.num_f32_tensors, GgmlTypeName(outtype), report.file_bytes / 1e6);
  return report;
}

}  // namespace pagellm
