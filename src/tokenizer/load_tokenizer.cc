#include "tokenizer/load_tokenizer.h"

#include <filesystem>

#include <fmt/format.h>

#include "gguf/gguf_file.h"

namespace pagellm::tokenizer {
namespace {

// tokenizer.ggml.pre -> the Split regex of the matching tokenizer.json (llama.cpp's
// llama_vocab pre-types, written as HF writes them) and whether the model uses NFC.
struct PreTokenizerSpec {
  std::string_view pattern;
  bool nfc;
};

StatusOr<PreTokenizerSpec> PreTokenizerFor(const std::string& pre, const std::string& what) {
  static constexpr std::string_view kQwen2 =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  static constexpr std::string_view kQwen35 =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  static constexpr std::string_view kLlama3 =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  if (pre == "qwen2" || pre == "deepseek-r1-qwen") return PreTokenizerSpec{kQwen2, true};
  if (pre == "qwen35") return PreTokenizerSpec{kQwen35, true};
  if (pre == "llama-bpe") return PreTokenizerSpec{kLlama3, false};
  return UnimplementedError(fmt::format(
      "{}: tokenizer.ggml.pre '{}' is not supported (qwen2, qwen35, deepseek-r1-qwen, llama-bpe)", what, pre));
}

// Merges are "left right" strings; byte-level tokens never contain a plain space.
StatusOr<std::vector<std::pair<std::string, std::string>>> ParseMerges(const std::vector<std::string>& lines,
                                                                        const std::string& what) {
  std::vector<std::pair<std::string, std::string>> merges;
  merges.reserve(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    size_t space = lines[i].find(' ');
    if (space == std::string::npos || space == 0 || space + 1 == lines[i].size()) {
      return InvalidArgumentError(fmt::format("{}: tokenizer.ggml.merges[{}] '{}' is not \"a b\"", what, i, lines[i]));
    }
    merges.emplace_back(lines[i].substr(0, space), lines[i].substr(space + 1));
  }
  return merges;
}

// The tokenizer embedded in a GGUF file (tokenizer.ggml.*), as HF would load the
// tokenizer.json it was converted from: control tokens (type 3) become special added
// tokens, user-defined ones (type 4) plain added tokens, and trailing unused ids
// (type 5, "[PAD<i>]" fillers up to the embedding size) are dropped as HF has no such ids.
StatusOr<std::unique_ptr<Tokenizer>> FromGguf(const std::string& path) {
  PAGELLM_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> gguf, GgufFile::Open(path));
  const std::string& what = gguf->what();
  PAGELLM_ASSIGN_OR_RETURN(std::string model, gguf->GetString("tokenizer.ggml.model"));
  if (model != "gpt2") {
    return UnimplementedError(fmt::format("{}: tokenizer.ggml.model '{}' is not supported (gpt2)", what, model));
  }
  std::string pre = "default";
  if (gguf->Find("tokenizer.ggml.pre") != nullptr) {
    PAGELLM_ASSIGN_OR_RETURN(pre, gguf->GetString("tokenizer.ggml.pre"));
  }
  PAGELLM_ASSIGN_OR_RETURN(PreTokenizerSpec spec, PreTokenizerFor(pre, what));
  Tokenizer::Components c;
  PAGELLM_ASSIGN_OR_RETURN(c.vocab, gguf->GetStringArray("tokenizer.ggml.tokens"));
  PAGELLM_ASSIGN_OR_RETURN(std::vector<int64_t> types, gguf->GetIntArray("tokenizer.ggml.token_type"));
  if (types.size() != c.vocab.size()) {
    return InvalidArgumentError(fmt::format("{}: tokenizer.ggml.token_type has {} entries for {} tokens", what,
                                            types.size(), c.vocab.size()));
  }
  PAGELLM_ASSIGN_OR_RETURN(std::vector<std::string> merge_lines, gguf->GetStringArray("tokenizer.ggml.merges"));
  PAGELLM_ASSIGN_OR_RETURN(c.merges, ParseMerges(merge_lines, what));
  size_t num_used = c.vocab.size();
  while (num_used > 0 && types[num_used - 1] == 5) --num_used;
  c.vocab.resize(num_used);
  for (size_t id = 0; id < num_used; ++id) {
    if (types[id] != 3 && types[id] != 4) continue;
    AddedToken t;
    t.id = static_cast<int32_t>(id);
    t.content = c.vocab[id];
    t.special = types[id] == 3;
    c.added_tokens.push_back(std::move(t));
  }
  c.pre_tokenizer_pattern = std::string(spec.pattern);
  c.nfc = spec.nfc;
  StatusOr<std::unique_ptr<Tokenizer>> tok = Tokenizer::FromComponents(std::move(c));
  if (!tok.ok()) return InvalidArgumentError(fmt::format("{}: {}", what, tok.status().message()));
  return tok;
}

bool IsGgufFile(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  std::string ext = std::filesystem::path(path).extension().string();
  return ext == ".gguf" || ext == ".GGUF";
}

}  // namespace

StatusOr<std::unique_ptr<Tokenizer>> LoadTokenizer(const std::string& path) {
  if (IsGgufFile(path)) return FromGguf(path);
  // Tokenizer::FromFile accepts a directory or the tokenizer.json itself.
  return Tokenizer::FromFile(path);
}

}  // namespace pagellm::tokenizer
