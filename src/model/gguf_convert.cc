#include "model/gguf_convert.h"

#include <cstring>
#include <filesystem>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "common/json.h"
#include "common/logging.h"
#include "common/mapped_file.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_metadata.h"
#include "gguf/gguf_names.h"
#include "gguf/gguf_quant_recipe.h"
#include "gguf/gguf_quantize.h"
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

// One row of a tensor the converter stores as `stored` (its outtype rules), written as `type`:
// when the types differ (quantize), the row is first rounded to `stored`, since llama-quantize
// reads the values back from the `stored` file. `row` is scratch (modified).
void EncodeRow(float* row, int64_t n, GgmlType stored, GgmlType type, std::byte* out) {
  if (type != stored) RoundToFloatType(stored, row, n);
  QuantizeRow(type, row, n, out);
}

// The producer that writes `src` ([rows, ne0] in PyTorch order) as `type`, rows in parallel.
GgufWriter::TensorProducer MakeProducer(const TensorView* src, int64_t ne0, GgmlType stored, GgmlType type) {
  return [src, ne0, stored, type](std::span<std::byte> out) -> Status {
    const int64_t num_rows = src->numel() / ne0;
    const size_t row_bytes = GgmlRowBytes(type, ne0);
    const int64_t grain = std::max<int64_t>(1, 65536 / ne0);
    ParallelFor(num_rows, grain, [&](int64_t begin, int64_t end) {
      std::vector<float> row(static_cast<size_t>(ne0));
      for (int64_t r = begin; r < end; ++r) {
        TensorView in{static_cast<char*>(src->data) + r * ne0 * DTypeSize(src->dtype), src->dtype, {ne0}};
        TensorView f32{row.data(), DType::kF32, {ne0}};
        ConvertTensor(in, f32);
        EncodeRow(row.data(), ne0, stored, type, out.data() + static_cast<size_t>(r) * row_bytes);
      }
    });
    return OkStatus();
  };
}

// The producer that writes hybrid-plan output rows as `type` (inputs parallel to plan->inputs).
GgufWriter::TensorProducer MakePlanProducer(const GgufTensorPlan* plan, std::vector<const TensorView*> inputs,
                                            GgmlType stored, GgmlType type) {
  return [plan, inputs = std::move(inputs), stored, type](std::span<std::byte> out) -> Status {
    const int64_t ne0 = plan->row_len();
    const size_t row_bytes = GgmlRowBytes(type, ne0);
    ParallelFor(static_cast<int64_t>(plan->rows.size()), std::max<int64_t>(1, 65536 / ne0),
                [&](int64_t begin, int64_t end) {
                  std::vector<float> scratch(static_cast<size_t>(ne0));
                  RunPlanRowsF32(*plan, inputs, begin, end, [&](int64_t r, const float* row) {
                    std::copy(row, row + ne0, scratch.begin());
                    EncodeRow(scratch.data(), ne0, stored, type, out.data() + static_cast<size_t>(r) * row_bytes);
                  });
                });
    return OkStatus();
  };
}

// The producer that writes a tensor of an input GGUF as `type`: its bytes when the type is
// unchanged (llama-quantize copies them), else its values (exact for F16 / BF16 / F32)
// quantized row by row.
GgufWriter::TensorProducer MakeGgufProducer(const GgufTensorInfo* info, GgmlType type) {
  return [info, type](std::span<std::byte> out) -> Status {
    if (type == info->type) {
      std::memcpy(out.data(), info->data.data(), info->data.size());
      return OkStatus();
    }
    const int64_t ne0 = info->ne[0];
    const size_t in_row_bytes = GgmlRowBytes(info->type, ne0), out_row_bytes = GgmlRowBytes(type, ne0);
    ParallelFor(info->num_elements / ne0, std::max<int64_t>(1, 65536 / ne0), [&](int64_t begin, int64_t end) {
      std::vector<float> row(static_cast<size_t>(ne0));
      for (int64_t r = begin; r < end; ++r) {
        // GgufFile::Open validated every tensor's size, so decoding a row cannot fail.
        PAGELLM_CHECK(Dequantize(info->type, info->data.subspan(static_cast<size_t>(r) * in_row_bytes, in_row_bytes),
                                 ne0, row.data()).ok());
        QuantizeRow(type, row.data(), ne0, out.data() + static_cast<size_t>(r) * out_row_bytes);
      }
    });
    return OkStatus();
  };
}

// A tensor to write: its GGUF name, ggml dims, the type the converter stores it in, and its
// data in any type.
struct PendingTensor {
  std::string name;
  std::vector<int64_t> ne;
  GgmlType stored;
  std::function<GgufWriter::TensorProducer(GgmlType type)> make_producer;
};

// Adds `metadata` and `tensors` to `writer` as they are, or, with `quantize`, as llama-quantize
// writes them from that file: recipe types, its tensor order, dims without trailing 1s and
// general.file_type last.
Status AddToWriter(GgufMetadata metadata, const std::vector<PendingTensor>& tensors,
                   std::optional<GgufFileType> quantize, GgufWriter& writer, GgufConvertReport& report) {
  std::vector<GgmlType> types;
  std::vector<size_t> order;
  for (const PendingTensor& t : tensors) types.push_back(t.stored);
  for (size_t i = 0; i < tensors.size(); ++i) order.push_back(i);
  if (quantize) {
    PAGELLM_ASSIGN_OR_RETURN(GgufRecipeModel model, GgufRecipeModelFromMetadata(metadata));
    std::vector<GgufRecipeTensor> recipe_tensors;
    std::vector<std::string> names;
    for (const PendingTensor& t : tensors) {
      recipe_tensors.push_back({t.name, t.ne, t.stored});
      names.push_back(t.name);
    }
    PAGELLM_ASSIGN_OR_RETURN(types, GgufRecipeTypes(*quantize, model, recipe_tensors));
    order = GgufLlamaTensorOrder(names);
    metadata = GgufQuantizedMetadata(metadata, *quantize);
  }
  for (auto& [key, value] : metadata) writer.AddMetadata(key, std::move(value));
  std::map<GgmlType, int> type_counts;
  for (size_t i : order) {
    const PendingTensor& t = tensors[i];
    PAGELLM_RETURN_IF_ERROR(writer.AddTensor(t.name, types[i], quantize ? GgmlTrimmedDims(t.ne) : t.ne,
                                             t.make_producer(types[i])));
    ++type_counts[types[i]];
  }
  report.num_tensors = static_cast<int64_t>(tensors.size());
  report.num_f32_tensors = type_counts[GgmlType::kF32];
  for (const auto& [type, count] : type_counts) {
    if (count > 0) report.type_counts += fmt::format("{}{} {}", report.type_counts.empty() ? "" : ", ", GgmlTypeName(type), count);
  }
  return OkStatus();
}

Status FinishFile(const GgufWriter& writer, const std::string& outfile, GgufConvertReport& report) {
  PAGELLM_RETURN_IF_ERROR(writer.WriteFile(outfile));
  std::error_code ec;
  report.file_bytes = fs::file_size(outfile, ec);
  PLOG_INFO("wrote {}: {} tensors ({}), {:.1f} MB", outfile, report.num_tensors, report.type_counts,
            report.file_bytes / 1e6);
  return OkStatus();
}

// The archs whose llama-quantize recipe gguf/gguf_quant_recipe.h reproduces.
bool IsRecipeArch(std::string_view arch) {
  for (std::string_view known : {"qwen2", "qwen3", "qwen3moe", "qwen3next", "qwen35", "qwen35moe"}) {
    if (arch == known) return true;
  }
  return false;
}

// `pagellm convert IN.gguf --outtype q4_k_m`: llama-quantize on an existing file.
StatusOr<GgufConvertReport> QuantizeGgufFile(const GgufConvertOptions& options) {
  PAGELLM_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> gguf, GgufFile::Open(options.model_dir));
  PAGELLM_ASSIGN_OR_RETURN(std::string arch, gguf->GetString("general.architecture"));
  if (!IsRecipeArch(arch)) {
    return UnimplementedError(fmt::format("{}: quantizing architecture '{}' is not supported (qwen2, qwen3, "
                                          "qwen3moe, qwen3next, qwen35, qwen35moe)", options.model_dir, arch));
  }
  std::vector<PendingTensor> tensors;
  for (const GgufTensorInfo& info : gguf->tensors()) {
    tensors.push_back({info.name, info.ne, info.type,
                       [info = &info](GgmlType type) { return MakeGgufProducer(info, type); }});
  }
  GgufWriter writer;
  GgufConvertReport report;
  PAGELLM_RETURN_IF_ERROR(AddToWriter(gguf->metadata(), tensors, options.quantize, writer, report));
  PAGELLM_RETURN_IF_ERROR(FinishFile(writer, options.outfile, report));  // gguf outlives the producers
  return report;
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

// general.* / {arch}.* / tokenizer.* keys, in the order llama.cpp's converter writes them
// (`nextn` MTP blocks counted in block_count and named by nextn_predict_layers).
StatusOr<GgufMetadata> BuildMetadata(const GgufConvertOptions& options, const Json& config, int64_t nextn) {
  std::string name = options.name.empty() ? fs::path(options.model_dir).filename().string() : options.name;
  if (name.empty()) name = fs::path(options.model_dir).parent_path().filename().string();
  PAGELLM_ASSIGN_OR_RETURN(GgufMetadata kv, BuildGgufModelMetadata(config, options.outtype, name, nextn));
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
  for (auto& entry : tok_kv) kv.push_back(std::move(entry));
  return kv;
}

Status CheckOuttype(const GgufConvertOptions& options) {
  const GgmlType t = options.outtype;
  const bool is_float = t == GgmlType::kF32 || t == GgmlType::kF16 || t == GgmlType::kBF16;
  if (!is_float && t != GgmlType::kQ8_0) {
    return InvalidArgumentError(fmt::format("--outtype {} is not supported (f32, f16, bf16, q8_0)", GgmlTypeName(t)));
  }
  if (options.quantize && !is_float) {
    return InvalidArgumentError(fmt::format("{} is quantized from an f32, f16 or bf16 file, not {}",
                                            GgufFileTypeName(*options.quantize), GgmlTypeName(t)));
  }
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
  std::error_code ec;
  if (fs::is_regular_file(options.model_dir, ec)) {
    if (!options.quantize) {
      return InvalidArgumentError(fmt::format("{}: a .gguf input needs a quantized --outtype (q4_k_m, ...)",
                                              options.model_dir));
    }
    return QuantizeGgufFile(options);
  }
  PAGELLM_RETURN_IF_ERROR(CheckOuttype(options));
  PAGELLM_ASSIGN_OR_RETURN(Json config_json, ReadJsonFile(options.model_dir + "/config.json"));
  PAGELLM_ASSIGN_OR_RETURN(ModelConfig config, ParseModelConfig(config_json));
  PAGELLM_ASSIGN_OR_RETURN(std::string arch, GgufArchFromHfConfig(config_json));
  PAGELLM_ASSIGN_OR_RETURN(auto ckpt, SafetensorsCheckpoint::Open(options.model_dir));
  // The MTP head goes in when the checkpoint ships it (llama.cpp's converter keeps mtp.*
  // unless --no-mtp); a hybrid config without the tensors (Qwen3-Next's implied layer) has none.
  const std::vector<WeightSpec> mtp_specs = ListMtpWeightSpecs(config);
  const bool with_mtp = options.keep_mtp && IsHybridGgufArch(arch) && !mtp_specs.empty() &&
                        ckpt->Find(mtp_specs.front().name) != nullptr;
  if (with_mtp) {
    PLOG_INFO("writing the multi-token-prediction head ({} layer(s)) as NextN block {}", config.mtp_num_hidden_layers,
              config.num_hidden_layers);
  }
  PAGELLM_ASSIGN_OR_RETURN(GgufMetadata metadata,
                           BuildMetadata(options, config_json, with_mtp ? config.mtp_num_hidden_layers : 0));
  std::vector<WeightSpec> specs = ListWeightSpecs(config);
  if (with_mtp) specs.insert(specs.end(), mtp_specs.begin(), mtp_specs.end());
  std::map<std::string, const TensorView*> views;
  for (const WeightSpec& spec : specs) {
    const TensorView* view = ckpt->Find(spec.name);
    if (view == nullptr) return NotFoundError(fmt::format("{}: checkpoint has no tensor '{}'", options.model_dir, spec.name));
    if (view->shape != spec.shape) {
      return InvalidArgumentError(fmt::format("{}: tensor '{}' has shape {}, config implies {}", options.model_dir,
                                              spec.name, ShapeToString(view->shape), ShapeToString(spec.shape)));
    }
    views[spec.name] = view;
  }
  std::vector<PendingTensor> tensors;
  auto pend = [&](const std::string& gguf_name, const std::vector<int64_t>& shape, auto make_producer) {
    std::vector<int64_t> ne(shape.rbegin(), shape.rend());
    GgmlType stored = GgufTensorTypeFor(gguf_name, static_cast<int>(shape.size()), ne[0], options.outtype);
    tensors.push_back({gguf_name, ne, stored, [=](GgmlType type) { return make_producer(ne[0], stored, type); }});
  };
  std::vector<GgufTensorPlan> plans;  // outlives writer.WriteFile (the producers point into it)
  if (UsesGgufTensorPlans(arch)) {
    PAGELLM_ASSIGN_OR_RETURN(plans, HybridGgufPlans(config, arch, with_mtp));
    for (const GgufTensorPlan& plan : plans) {
      std::vector<const TensorView*> inputs;
      for (const std::string& name : plan.inputs) inputs.push_back(views.at(name));
      pend(plan.name, plan.shape, [plan = &plan, inputs](int64_t, GgmlType stored, GgmlType type) {
        return MakePlanProducer(plan, inputs, stored, type);
      });
    }
  } else {
    for (const WeightSpec& spec : ListWeightSpecs(config)) {
      PAGELLM_ASSIGN_OR_RETURN(std::string gguf_name, HfToGgufTensorName(arch, spec.name));
      pend(gguf_name, spec.shape, [view = views.at(spec.name)](int64_t ne0, GgmlType stored, GgmlType type) {
        return MakeProducer(view, ne0, stored, type);
      });
    }
  }
  GgufWriter writer;
  GgufConvertReport report;
  PAGELLM_RETURN_IF_ERROR(AddToWriter(std::move(metadata), tensors, options.quantize, writer, report));
  PAGELLM_RETURN_IF_ERROR(FinishFile(writer, options.outfile, report));
  return report;
}

}  // namespace pagellm
