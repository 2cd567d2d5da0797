// Tokenizer::FromFile / FromJson: reading a Hugging Face tokenizer.json.
#include <filesystem>

#include <fmt/format.h>

#include "common/mapped_file.h"
#include "tokenizer/tokenizer.h"

namespace pagellm::tokenizer {
namespace {

StatusOr<std::vector<std::pair<std::string, std::string>>> ParseMerges(const Json& merges) {
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(merges.size());
  for (const Json& m : merges) {
    if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      out.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
      continue;
    }
    if (!m.is_string()) return InvalidArgumentError(fmt::format("bad merge entry {}", m.dump()));
    const std::string& s = m.get_ref<const std::string&>();
    size_t space = s.find(' ');
    if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
      return InvalidArgumentError(fmt::format("bad merge entry \"{}\"", s));
    out.emplace_back(s.substr(0, space), s.substr(space + 1));
  }
  return out;
}

StatusOr<std::vector<AddedToken>> ParseAddedTokens(const Json& json) {
  std::vector<AddedToken> out;
  if (json.is_null()) return out;
  if (!json.is_array()) return InvalidArgumentError("added_tokens is not an array");
  for (const Json& j : json) {
    if (!j.contains("id") || !j.contains("content")) return InvalidArgumentError("added token without id/content");
    AddedToken t;
    t.id = j["id"].get<int32_t>();
    t.content = j["content"].get<std::string>();
    t.single_word = j.value("single_word", false);
    t.lstrip = j.value("lstrip", false);
    t.rstrip = j.value("rstrip", false);
    t.special = j.value("special", false);
    t.normalized = j.value("normalized", !t.special);
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace

Status Tokenizer::ParseModel(const Json& model) {
  if (!model.is_object()) return InvalidArgumentError("tokenizer.json has no model");
  std::string type = model.value("type", "BPE");
  if (type != "BPE") return UnimplementedError(fmt::format("unsupported tokenizer model type {}", type));
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (model.contains(key) && model[key].is_string() && !model[key].get<std::string>().empty())
      return UnimplementedError(fmt::format("BPE {} is not supported", key));
  }
  const Json& vocab = JsonMember(model, "vocab");
  if (!vocab.is_object() || vocab.empty()) return InvalidArgumentError("BPE model has no vocab");
  BpeModel::Config config;
  for (const auto& [token, id_json] : vocab.items()) {
    int64_t id = id_json.get<int64_t>();
    if (id < 0 || id > (1 << 24)) return InvalidArgumentError(fmt::format("vocab id {} out of range", id));
    if (config.id_to_token.size() <= static_cast<size_t>(id)) config.id_to_token.resize(id + 1);
    config.id_to_token[id] = token;
  }
  PAGELLM_ASSIGN_OR_RETURN(config.merges, ParseMerges(JsonMember(model, "merges")));
  config.byte_level = pre_tokenizer_.has_byte_level();
  config.ignore_merges = model.value("ignore_merges", false);
  config.byte_fallback = model.value("byte_fallback", false);
  if (model.contains("unk_token") && model["unk_token"].is_string()) config.unk_token = model["unk_token"].get<std::string>();
  PAGELLM_ASSIGN_OR_RETURN(bpe_, BpeModel::Create(std::move(config)));
  return OkStatus();
}

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromJson(const Json& json) {
  if (!json.is_object()) return InvalidArgumentError("tokenizer.json is not an object");
  std::unique_ptr<Tokenizer> tok(new Tokenizer());
  PAGELLM_ASSIGN_OR_RETURN(tok->normalizer_, Normalizer::FromJson(JsonMember(json, "normalizer")));
  PAGELLM_ASSIGN_OR_RETURN(tok->pre_tokenizer_, PreTokenizer::FromJson(JsonMember(json, "pre_tokenizer")));
  const Json& decoder = JsonMember(json, "decoder");
  std::string decoder_type = decoder.is_object() ? decoder.value("type", "") : "";
  if (decoder_type == "ByteLevel") tok->decoder_ = DecoderKind::kByteLevel;
  else if (decoder.is_null()) tok->decoder_ = DecoderKind::kJoinWithSpace;
  else return UnimplementedError(fmt::format("unsupported decoder {}", decoder.dump()));
  PAGELLM_RETURN_IF_ERROR(tok->ParseModel(JsonMember(json, "model")));
  PAGELLM_ASSIGN_OR_RETURN(std::vector<AddedToken> added, ParseAddedTokens(JsonMember(json, "added_tokens")));
  PAGELLM_RETURN_IF_ERROR(tok->Finish(std::move(added)));
  return tok;
}

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromFile(const std::string& path) {
  std::string file = path;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) file = (std::filesystem::path(path) / "tokenizer.json").string();
  PAGELLM_ASSIGN_OR_RETURN(Json json, ReadJsonFile(file));
  auto tok = FromJson(json);
  if (!tok.ok()) return tok.status().WithPrefix(file);
  return tok;
}

}  // namespace pagellm::tokenizer
