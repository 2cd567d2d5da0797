// `pagellm render-chat-template`: renders chat requests read from stdin with a model's
// chat template, for debugging prompts and for the cross-implementation tests.
//
//   echo '{"messages": [{"role": "user", "content": "Hi"}], "add_generation_prompt": true}' |
//     pagellm render-chat-template --model /models/qwen3
//
// Single mode writes the prompt exactly (no newline added). --jsonl reads one request
// per line and writes one {"text": ...} or {"error": ...} line each, so a test can
// spawn the process once for many requests. A request may carry its own "chat_template"
// string (as vLLM's chat completion request can).
#include <cstdio>
#include <iostream>
#include <iterator>
#include <string>

#include "chat/chat_template.h"
#include "cli/commands.h"
#include "common/json.h"

namespace pagellm::cli {
namespace {

struct RenderChatTemplateFlags {
  std::string model_dir;
  std::string chat_template_path;
  bool jsonl = false;
};

StatusOr<std::string> RenderRequest(const chat::ChatTemplate& tmpl, std::string_view text) {
  OrderedJson request = OrderedJson::parse(text, nullptr, /*allow_exceptions=*/false);
  if (request.is_discarded() || !request.is_object()) return InvalidArgumentError("request is not a JSON object");
  OrderedJson none;
  const OrderedJson& messages = request.contains("messages") ? request["messages"] : none;
  const OrderedJson& tools = request.contains("tools") ? request["tools"] : none;
  const OrderedJson& kwargs = request.contains("chat_template_kwargs") ? request["chat_template_kwargs"] : none;
  bool add_generation_prompt = request.value("add_generation_prompt", false);
  if (request.contains("chat_template")) {  // per-request template, as vLLM's request field
    if (!request["chat_template"].is_string()) return InvalidArgumentError("chat_template must be a string");
    PAGELLM_ASSIGN_OR_RETURN(chat::ChatTemplate custom, chat::ChatTemplate::FromStringWithTokens(
                                                            request["chat_template"].get<std::string>(),
                                                            tmpl.special_tokens()));
    return custom.Render(messages, tools, add_generation_prompt, kwargs);
  }
  return tmpl.Render(messages, tools, add_generation_prompt, kwargs);
}

void Run(const RenderChatTemplateFlags& flags) {
  auto tmpl = chat::ChatTemplate::FromModelDir(flags.model_dir, flags.chat_template_path);
  if (!ReportStatus(tmpl.status())) return;
  if (!flags.jsonl) {
    std::string input((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    auto text = RenderRequest(*tmpl, input);
    if (!ReportStatus(text.status())) return;
    std::fwrite(text->data(), 1, text->size(), stdout);
    return;
  }
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    auto text = RenderRequest(*tmpl, line);
    OrderedJson out = OrderedJson::object();
    if (text.ok()) {
      out["text"] = *text;
    } else {
      out["error"] = text.status().message();
    }
    std::string dumped = out.dump(-1, ' ', false, OrderedJson::error_handler_t::replace) + "\n";
    std::fwrite(dumped.data(), 1, dumped.size(), stdout);
    std::fflush(stdout);
  }
}

}  // namespace

void RegisterChatTemplateCommand(CLI::App& app) {
  auto flags = std::make_shared<RenderChatTemplateFlags>();
  CLI::App* cmd = app.add_subcommand("render-chat-template",
                                     "Render chat requests from stdin with a model's chat template");
  cmd->add_option("--model", flags->model_dir, "model directory holding tokenizer_config.json")->required();
  cmd->add_option("--chat-template", flags->chat_template_path, "template file overriding the model's");
  cmd->add_flag("--jsonl", flags->jsonl, "one request per input line, one JSON result per output line");
  cmd->callback([flags] { Run(*flags); });
}

}  // namespace pagellm::cli
