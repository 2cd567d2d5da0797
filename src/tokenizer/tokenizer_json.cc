// Tokenizer::FromFile / FromJson: reading a Hugging Face tokenizer.json.
#include <filesystem>

#include <fmt/format.h>

#include "common/mapped_file.h"
#include "tokenizer/tokenizer.h"

namespace pagellm::tokenizer {

struct Tokenizer::ModelEntries {
  std::vector<std::pair<std::string, int64_t>> vocab;       // in file order; ids in [0, 2^24]
  std::vector<std::pair<std::string, std::string>> merges;  // in rank order
  bool use_dom = false;  // set by ParseModel: the vocab repeats an id or a token (see FromFile)
};

namespace {

// Parser events of a tokenizer.json -> its DOM without model.vocab and model.merges, which
// go straight into vectors (Tokenizer::ModelEntries). Those two are nearly the whole file
// (Qwen: 151,643 tokens, 151,387 merges): as DOM nodes (a std::map of the tokens, a string per
// merge) that were then copied into the BPE tables, they made loading the tokenizer ~0.6 s of
// every process start; the events cost ~0.1 s. Only their usual shapes are taken
// ({"token": id, ...} with ids in [0, 2^24]; ["a b", ...] or [["a", "b"], ...]): on anything
// else (or invalid JSON) it returns false and FromFile parses the DOM as FromJson takes it,
// whose results and errors are the reference.
class ModelEntriesSax {
 public:
  using DomParser = nlohmann::detail::json_sax_dom_parser<Json>;
  using Vocab = std::vector<std::pair<std::string, int64_t>>;
  using Merges = std::vector<std::pair<std::string, std::string>>;
  ModelEntriesSax(Json* root, Vocab* vocab, Merges* merges)
      : dom_(*root, /*allow_exceptions=*/false), vocab_(vocab), merges_(merges) {}

  bool null() { return Plain() && dom_.null(); }
  bool boolean(bool v) { return Plain() && dom_.boolean(v); }
  bool number_integer(Json::number_integer_t v) { return Plain() && dom_.number_integer(v); }
  bool number_unsigned(Json::number_unsigned_t v) {
    if (mode_ == Mode::kVocab) {
      if (v > (1u << 24)) return false;  // ParseModel's range error
      vocab_->emplace_back(std::move(token_), static_cast<int64_t>(v));
      return true;
    }
    return Plain() && dom_.number_unsigned(v);
  }
  bool number_float(Json::number_float_t v, const std::string& s) { return Plain() && dom_.number_float(v, s); }
  bool binary(Json::binary_t& v) { return Plain() && dom_.binary(v); }
  bool string(std::string& v) {
    if (mode_ == Mode::kMerges) {  // "a b": exactly one space
      const size_t space = v.find(' ');
      if (space == std::string::npos || v.find(' ', space + 1) != std::string::npos) return false;
      merges_->emplace_back(v.substr(0, space), v.substr(space + 1));
      return true;
    }
    if (mode_ == Mode::kMergePair) {
      if (pair_size_ == 2) return false;
      (pair_size_++ == 0 ? pair_.first : pair_.second) = std::move(v);
      return true;
    }
    return Plain() && dom_.string(v);
  }
  bool key(std::string& k) {
    if (mode_ == Mode::kVocab) {
      token_ = std::move(k);
      return true;
    }
    if (depth_ == 1) root_key_ = k;
    if (depth_ == 2 && in_model_ && (k == "vocab" || k == "merges")) {
      bool& seen = k == "vocab" ? seen_vocab_ : seen_merges_;
      if (seen) return false;  // a repeated key: the DOM keeps the last one
      seen = true;
      pending_ = k == "vocab" ? Mode::kVocab : Mode::kMerges;
      return true;
    }
    return dom_.key(k);
  }
  bool start_object(std::size_t n) {
    if (pending_ == Mode::kVocab) {
      pending_ = Mode::kDom;
      mode_ = Mode::kVocab;
      return true;
    }
    if (!Plain()) return false;
    if (depth_ == 1 && root_key_ == "model") {
      if (seen_model_) return false;
      seen_model_ = in_model_ = true;
    }
    ++depth_;
    return dom_.start_object(n);
  }
  bool end_object() {
    if (mode_ == Mode::kVocab) {
      mode_ = Mode::kDom;
      return true;
    }
    if (--depth_ == 1) in_model_ = false;
    return dom_.end_object();
  }
  bool start_array(std::size_t n) {
    if (pending_ == Mode::kMerges) {
      pending_ = Mode::kDom;
      mode_ = Mode::kMerges;
      return true;
    }
    if (mode_ == Mode::kMerges) {
      mode_ = Mode::kMergePair;
      pair_size_ = 0;
      return true;
    }
    if (!Plain()) return false;
    ++depth_;
    return dom_.start_array(n);
  }
  bool end_array() {
    if (mode_ == Mode::kMergePair) {
      if (pair_size_ != 2) return false;
      merges_->push_back(std::move(pair_));
      mode_ = Mode::kMerges;
      return true;
    }
    if (mode_ == Mode::kMerges) {
      mode_ = Mode::kDom;
      return true;
    }
    --depth_;
    return dom_.end_array();
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) { return false; }

  // Whether model.vocab and model.merges were both there (and taken).
  bool complete() const { return seen_vocab_ && seen_merges_; }

 private:
  enum class Mode { kDom, kVocab, kMerges, kMergePair };
  // An event the DOM takes: not inside (or just before) the vocab or the merges.
  bool Plain() const { return mode_ == Mode::kDom && pending_ == Mode::kDom; }

  DomParser dom_;
  Vocab* vocab_;
  Merges* merges_;
  Mode mode_ = Mode::kDom, pending_ = Mode::kDom;
  int depth_ = 0;  // open objects and arrays of the DOM
  std::string root_key_, token_;
  std::pair<std::string, std::string> pair_;
  int pair_size_ = 0;
  bool in_model_ = false, seen_model_ = false, seen_vocab_ = false, seen_merges_ = false;
};

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

Status Tokenizer::ParseModel(const Json& model, ModelEntries* entries) {
  if (!model.is_object()) return InvalidArgumentError("tokenizer.json has no model");
  std::string type = model.value("type", "BPE");
  if (type != "BPE") return UnimplementedError(fmt::format("unsupported tokenizer model type {}", type));
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (model.contains(key) && model[key].is_string() && !model[key].get<std::string>().empty())
      return UnimplementedError(fmt::format("BPE {} is not supported", key));
  }
  BpeModel::Config config;
  size_t num_tokens = 0, num_empty = 0;  // entries with a non-empty / an empty token
  if (entries != nullptr) {
    if (entries->vocab.empty()) return InvalidArgumentError("BPE model has no vocab");
    // In file order, where the DOM's std::map goes in token order: the same unless an id or a
    // token repeats (then the DOM path decides which one stays). A repeated token shows as
    // fewer distinct tokens than entries once the BPE model is built, below.
    std::vector<bool> taken;
    for (auto& [token, id] : entries->vocab) {
      if (config.id_to_token.size() <= static_cast<size_t>(id)) {
        config.id_to_token.resize(id + 1);
        taken.resize(id + 1);
      }
      (token.empty() ? num_empty : num_tokens) += 1;
      if (taken[id] || num_empty > 1) {
        entries->use_dom = true;
        return FailedPreconditionError("vocab id or token repeated");
      }
      taken[id] = true;
      config.id_to_token[id] = std::move(token);
    }
    config.merges = std::move(entries->merges);
  } else {
    const Json& vocab = JsonMember(model, "vocab");
    if (!vocab.is_object() || vocab.empty()) return InvalidArgumentError("BPE model has no vocab");
    for (const auto& [token, id_json] : vocab.items()) {
      int64_t id = id_json.get<int64_t>();
      if (id < 0 || id > (1 << 24)) return InvalidArgumentError(fmt::format("vocab id {} out of range", id));
      if (config.id_to_token.size() <= static_cast<size_t>(id)) config.id_to_token.resize(id + 1);
      config.id_to_token[id] = token;
    }
    PAGELLM_ASSIGN_OR_RETURN(config.merges, ParseMerges(JsonMember(model, "merges")));
  }
  config.byte_level = pre_tokenizer_.has_byte_level();
  config.ignore_merges = model.value("ignore_merges", false);
  config.byte_fallback = model.value("byte_fallback", false);
  if (model.contains("unk_token") && model["unk_token"].is_string()) config.unk_token = model["unk_token"].get<std::string>();
  PAGELLM_ASSIGN_OR_RETURN(bpe_, BpeModel::Create(std::move(config)));
  if (entries != nullptr && bpe_->num_distinct_tokens() != num_tokens) {
    entries->use_dom = true;
    return FailedPreconditionError("vocab token repeated");
  }
  return OkStatus();
}

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromJson(const Json& json) { return FromJson(json, nullptr); }

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromJson(const Json& json, ModelEntries* entries) {
  if (!json.is_object()) return InvalidArgumentError("tokenizer.json is not an object");
  std::unique_ptr<Tokenizer> tok(new Tokenizer());
  PAGELLM_ASSIGN_OR_RETURN(tok->normalizer_, Normalizer::FromJson(JsonMember(json, "normalizer")));
  PAGELLM_ASSIGN_OR_RETURN(tok->pre_tokenizer_, PreTokenizer::FromJson(JsonMember(json, "pre_tokenizer")));
  const Json& decoder = JsonMember(json, "decoder");
  std::string decoder_type = decoder.is_object() ? decoder.value("type", "") : "";
  if (decoder_type == "ByteLevel") tok->decoder_ = DecoderKind::kByteLevel;
  else if (decoder.is_null()) tok->decoder_ = DecoderKind::kJoinWithSpace;
  else return UnimplementedError(fmt::format("unsupported decoder {}", decoder.dump()));
  PAGELLM_RETURN_IF_ERROR(tok->ParseModel(JsonMember(json, "model"), entries));
  PAGELLM_ASSIGN_OR_RETURN(std::vector<AddedToken> added, ParseAddedTokens(JsonMember(json, "added_tokens")));
  PAGELLM_RETURN_IF_ERROR(tok->Finish(std::move(added)));
  return tok;
}

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromFile(const std::string& path) {
  std::string file = path;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) file = (std::filesystem::path(path) / "tokenizer.json").string();
  PAGELLM_ASSIGN_OR_RETURN(std::string text, ReadFileToString(file));
  {
    Json json;
    ModelEntries entries;
    ModelEntriesSax sax(&json, &entries.vocab, &entries.merges);
    if (Json::sax_parse(text, &sax) && sax.complete()) {
      auto tok = FromJson(json, &entries);
      if (!entries.use_dom) return tok.ok() ? std::move(tok) : tok.status().WithPrefix(file);
    }
  }
  // What ReadJsonFile(file) does, on the text read once.
  PAGELLM_ASSIGN_OR_RETURN(Json json, ParseJson(text, file));
  auto tok = FromJson(json);
  if (!tok.ok()) return tok.status().WithPrefix(file);
  return tok;
}

}  // namespace pagellm::tokenizer
