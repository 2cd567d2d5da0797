// `pagellm tokenize` and `pagellm detokenize`: the tokenizer from the command line.
//
//   echo -n "hello" | pagellm tokenize --model DIR            -> [14990]
//   pagellm tokenize --model DIR --jsonl   {"text": ...} lines -> {"ids": [...]} lines
//   echo "[14990]" | pagellm detokenize --model DIR           -> hello
//   pagellm detokenize --model DIR --jsonl {"ids": [...]} lines -> {"text": ...} lines
//
// --model is a directory with tokenizer.json or the file itself. JSONL output is
// flushed per line so the commands can be driven interactively through pipes.
#include <cstdio>
#include <iostream>
#include <iterator>
#include <string>

#include <fmt/format.h>

#include "cli/commands.h"
#include "common/json.h"
#include "tokenizer/load_tokenizer.h"

namespace pagellm::cli {
namespace {

using tokenizer::LoadTokenizer;
using tokenizer::Tokenizer;

struct TokenizeFlags {
  std::string model;
  bool jsonl = false;
  bool no_special = false;
  bool skip_special_tokens = false;
};

std::string IdsToJson(const std::vector<int32_t>& ids) {
  std::string out = "[";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(ids[i]);
  }
  return out + "]";
}

StatusOr<std::vector<int32_t>> JsonToIds(const Json& j) {
  if (!j.is_array()) return InvalidArgumentError("expected a JSON array of token ids");
  std::vector<int32_t> ids;
  ids.reserve(j.size());
  for (const Json& v : j) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX)
      return InvalidArgumentError(fmt::format("invalid token id {}", v.dump()));
    ids.push_back(static_cast<int32_t>(v.get<int64_t>()));
  }
  return ids;
}

std::string ReadStdin() {
  return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
}

Status RunTokenize(const TokenizeFlags& flags) {
  PAGELLM_ASSIGN_OR_RETURN(auto tok, LoadTokenizer(flags.model));
  if (!flags.jsonl) {
    std::printf("%s\n", IdsToJson(tok->Encode(ReadStdin(), !flags.no_special)).c_str());
    return OkStatus();
  }
  std::string line;
  for (size_t line_no = 1; std::getline(std::cin, line); ++line_no) {
    if (line.empty()) continue;
    auto parsed = ParseJson(line, fmt::format("stdin line {}", line_no));
    if (!parsed.ok()) return parsed.status();
    const Json& j = *parsed;
    if (!j.is_object() || !j.contains("text") || !j["text"].is_string())
      return InvalidArgumentError(fmt::format("stdin line {}: expected {{\"text\": string}}", line_no));
    auto ids = tok->Encode(j["text"].get_ref<const std::string&>(), !flags.no_special);
    std::printf("{\"ids\": %s}\n", IdsToJson(ids).c_str());
    std::fflush(stdout);
  }
  return OkStatus();
}

Status RunDetokenize(const TokenizeFlags& flags) {
  PAGELLM_ASSIGN_OR_RETURN(auto tok, LoadTokenizer(flags.model));
  if (!flags.jsonl) {
    PAGELLM_ASSIGN_OR_RETURN(Json j, ParseJson(ReadStdin(), "stdin"));
    PAGELLM_ASSIGN_OR_RETURN(std::vector<int32_t> ids, JsonToIds(j));
    std::string text = tok->Decode(ids, flags.skip_special_tokens);
    std::fwrite(text.data(), 1, text.size(), stdout);
    return OkStatus();
  }
  std::string line;
  for (size_t line_no = 1; std::getline(std::cin, line); ++line_no) {
    if (line.empty()) continue;
    PAGELLM_ASSIGN_OR_RETURN(Json j, ParseJson(line, fmt::format("stdin line {}", line_no)));
    if (!j.is_object() || !j.contains("ids"))
      return InvalidArgumentError(fmt::format("stdin line {}: expected {{\"ids\": [...]}}", line_no));
    auto ids = JsonToIds(j["ids"]);
    if (!ids.ok()) return ids.status().WithPrefix(fmt::format("stdin line {}", line_no));
    Json out = {{"text", tok->Decode(*ids, flags.skip_special_tokens)}};
    std::printf("%s\n", out.dump(-1, ' ', false, Json::error_handler_t::replace).c_str());
    std::fflush(stdout);
  }
  return OkStatus();
}

}  // namespace

void RegisterTokenizeCommands(CLI::App& app) {
  auto flags = std::make_shared<TokenizeFlags>();
  CLI::App* tok = app.add_subcommand("tokenize", "Read text on stdin, print token ids as JSON");
  tok->add_option("--model", flags->model, "model directory or tokenizer.json")->required();
  tok->add_flag("--jsonl", flags->jsonl, "one {\"text\": ...} per line in, one {\"ids\": [...]} per line out");
  tok->add_flag("--no-special", flags->no_special, "treat special tokens' text as ordinary text");
  tok->callback([flags] { ReportStatus(RunTokenize(*flags)); });

  CLI::App* detok = app.add_subcommand("detokenize", "Read token ids (JSON array) on stdin, print text");
  detok->add_option("--model", flags->model, "model directory or tokenizer.json")->required();
  detok->add_flag("--jsonl", flags->jsonl, "one {\"ids\": [...]} per line in, one {\"text\": ...} per line out");
  detok->add_flag("--skip-special-tokens", flags->skip_special_tokens, "drop special tokens from the text");
  detok->callback([flags] { ReportStatus(RunDetokenize(*flags)); });
}

}  // namespace pagellm::cli
