#include "gguf/gguf_tokenizer_metadata.h"

#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

namespace pagellm {
namespace {

bool StartsWith(const std::string& s, std::string_view p) { return s.compare(0, p.size(), p) == 0; }
bool EndsWith(const std::string& s, std::string_view p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

// convert_hf_to_gguf.py does_token_look_special: added tokens spelled like control tokens
// are CONTROL even when the tokenizer does not flag them special (Qwen's <|fim_*|>).
bool LooksSpecial(const std::string& t) {
  return t == "<pad>" || t == "<mask>" || t == "<2mass>" || t == "[@BOS@]" ||
         (StartsWith(t, "<|") && EndsWith(t, "|>")) ||
         (StartsWith(t, "<\xEF\xBD\x9C") && EndsWith(t, "\xEF\xBD\x9C>")) ||  // "<｜" ... "｜>"
         (StartsWith(t, "<unused") && EndsWith(t, ">"));
}

std::string ReplaceAll(std::string s, std::string_view from, std::string_view to) {
  for (size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size())) {
    s.replace(pos, from.size(), to);
  }
  return s;
}

struct Vocab {
  std::vector<std::optional<std::string>> tokens;  // by id
  std::map<std::string, bool> added_special;       // added token content -> special flag
};

StatusOr<Vocab> ReadVocab(const Json& tok, const Json& config) {
  if (!tok.contains("model") || !tok["model"].contains("vocab") || !tok["model"]["vocab"].is_object()) {
    return InvalidArgumentError("tokenizer.json: model.vocab is missing (only BPE tokenizers are supported)");
  }
  std::map<int64_t, std::string> by_id;
  for (const auto& [token, id] : tok["model"]["vocab"].items()) by_id[id.get<int64_t>()] = token;
  Vocab v;
  for (const Json& added : tok.value("added_tokens", Json::array())) {
    std::string content = added.at("content").get<std::string>();
    by_id[added.at("id").get<int64_t>()] = content;
    v.added_special[content] = added.value("special", false);
  }
  if (by_id.empty() || by_id.begin()->first < 0) return InvalidArgumentError("tokenizer.json: bad token ids");
  int64_t size = by_id.rbegin()->first + 1;
  if (config.contains("vocab_size") && config["vocab_size"].is_number_integer()) {
    int64_t configured = config["vocab_size"].get<int64_t>();
    if (configured < size) {
      return InvalidArgumentError(fmt::format("config.json: vocab_size {} is smaller than token id {}", configured,
                                              size - 1));
    }
    size = configured;
  }
  v.tokens.resize(static_cast<size_t>(size));
  for (auto& [id, token] : by_id) v.tokens[static_cast<size_t>(id)] = std::move(token);
  return v;
}

void AddTokens(const Vocab& vocab, GgufMetadata* kv) {
  std::vector<GgufValue> tokens;
  std::vector<GgufValue> types;
  tokens.reserve(vocab.tokens.size());
  types.reserve(vocab.tokens.size());
  for (size_t i = 0; i < vocab.tokens.size(); ++i) {
    GgufTokenType type = GgufTokenType::kNormal;
    std::string token;
    if (!vocab.tokens[i]) {
      token = fmt::format("[PAD{}]", i);
      type = GgufTokenType::kUnused;
    } else {
      token = *vocab.tokens[i];
      auto added = vocab.added_special.find(token);
      if (added != vocab.added_special.end()) {
        if (added->second || LooksSpecial(token)) {
          type = GgufTokenType::kControl;
        } else {
          token = ReplaceAll(token, "\xE2\x96\x81", " ");  // pre-normalized "▁" spaces
          type = GgufTokenType::kUserDefined;
        }
      }
    }
    tokens.push_back(GgufValue::String(std::move(token)));
    types.push_back(GgufValue::I32(static_cast<int32_t>(type)));
  }
  kv->emplace_back("tokenizer.ggml.tokens", GgufValue::Array(GgufValueType::kString, std::move(tokens)));
  kv->emplace_back("tokenizer.ggml.token_type", GgufValue::Array(GgufValueType::kInt32, std::move(types)));
}

// Merges are "a b" strings; the newer [a, b] pair form is joined, with spaces inside a
// part written as U+0120 as gguf-py does.
Status AddMerges(const Json& tok, GgufMetadata* kv) {
  const Json& merges = tok["model"].value("merges", Json::array());
  if (merges.empty()) return OkStatus();
  std::vector<GgufValue> out;
  out.reserve(merges.size());
  for (const Json& m : merges) {
    if (m.is_string()) {
      out.push_back(GgufValue::String(m.get<std::string>()));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      out.push_back(GgufValue::String(ReplaceAll(m[0].get<std::string>(), " ", "\xC4\xA0") + " " +
                                      ReplaceAll(m[1].get<std::string>(), " ", "\xC4\xA0")));
    } else {
      return InvalidArgumentError("tokenizer.json: unknown merges format");
    }
  }
  kv->emplace_back("tokenizer.ggml.merges", GgufValue::Array(GgufValueType::kString, std::move(out)));
  return OkStatus();
}

// SpecialVocab: *_token strings in tokenizer_config.json win, config.json *_token_id fill gaps.
void AddSpecialIds(const Json& tok, const Json& tc, const Json& config, GgufMetadata* kv) {
  const std::pair<const char*, const char*> kTypes[] = {
      {"bos", "bos_token_id"}, {"eos", "eos_token_id"}, {"unk", "unknown_token_id"},
      {"sep", "seperator_token_id"}, {"pad", "padding_token_id"}, {"mask", "mask_token_id"}};
  for (const auto& [typ, gguf_key] : kTypes) {
    std::optional<int64_t> id;
    const Json& entry = tc.value(fmt::format("{}_token", typ), Json());
    std::string content = entry.is_string() ? entry.get<std::string>()
                          : entry.is_object() ? entry.value("content", std::string()) : std::string();
    if (!content.empty()) {
      for (const Json& added : tok.value("added_tokens", Json::array())) {
        if (added.value("content", std::string()) == content) {
          id = added.at("id").get<int64_t>();
          break;
        }
      }
    }
    std::string config_key = fmt::format("{}_token_id", typ);
    if (!id && config.contains(config_key) && config[config_key].is_number_integer()) {
      id = config[config_key].get<int64_t>();
    }
    if (id && *id >= 0) kv->emplace_back(fmt::format("tokenizer.ggml.{}", gguf_key), GgufValue::U32(static_cast<uint32_t>(*id)));
  }
  for (const char* typ : {"bos", "eos", "sep"}) {
    std::string key = fmt::format("add_{}_token", typ);
    if (tc.contains(key) && tc[key].is_boolean()) {
      kv->emplace_back("tokenizer.ggml." + key, GgufValue::Bool(tc[key].get<bool>()));
    }
  }
}

}  // namespace

StatusOr<GgufMetadata> BuildGgufTokenizerMetadata(const Json& tokenizer_json, const Json& tokenizer_config,
                                                  const Json& config, std::string_view pre) {
  PAGELLM_ASSIGN_OR_RETURN(Vocab vocab, ReadVocab(tokenizer_json, config));
  GgufMetadata kv;
  kv.emplace_back("tokenizer.ggml.model", GgufValue::String("gpt2"));
  kv.emplace_back("tokenizer.ggml.pre", GgufValue::String(std::string(pre)));
  AddTokens(vocab, &kv);
  PAGELLM_RETURN_IF_ERROR(AddMerges(tokenizer_json, &kv));
  AddSpecialIds(tokenizer_json, tokenizer_config, config, &kv);
  if (tokenizer_config.contains("chat_template") && tokenizer_config["chat_template"].is_string()) {
    kv.emplace_back("tokenizer.chat_template", GgufValue::String(tokenizer_config["chat_template"].get<std::string>()));
  }
  return kv;
}

}  // namespace pagellm
