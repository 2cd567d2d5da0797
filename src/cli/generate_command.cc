// `pagellm generate`: offline generation through the full engine.
//   single prompt: --prompt TEXT [--chat] | --prompt-ids 1,2,3 -> streams text to stdout
//   many prompts:  --input prompts.jsonl --output results.jsonl (run concurrently)
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/engine_flags.h"
#include "cli/prompt_input.h"
#include "common/logging.h"
#include "engine/llm_engine.h"

namespace pagellm::cli {
namespace {

struct GenerateFlags {
  EngineConfig engine;
  std::string prompt, prompt_ids, system, chat_template, input, output;
  std::string output_format = "text";
  bool chat = false;
  std::optional<bool> enable_thinking;
  SamplingParams params;
  std::optional<uint64_t> seed;
};

double Seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Status RunSingle(LlmEngine& engine, const GenerateFlags& f) {
  const EngineCore& core = engine.core();
  std::vector<int32_t> ids;
  if (!f.prompt_ids.empty()) {
    PAGELLM_ASSIGN_OR_RETURN(ids, ParseIdList(f.prompt_ids));
  } else if (f.chat) {
    OrderedJson messages = OrderedJson::array();
    if (!f.system.empty()) messages.push_back({{"role", "system"}, {"content", f.system}});
    messages.push_back({{"role", "user"}, {"content", f.prompt}});
    OrderedJson kwargs = OrderedJson::object();
    if (f.enable_thinking) kwargs["enable_thinking"] = *f.enable_thinking;
    PAGELLM_ASSIGN_OR_RETURN(std::string text, RenderChat(core, messages, kwargs, f.chat_template));
    ids = core.tokenizer().Encode(text);
  } else {
    ids = core.tokenizer().Encode(f.prompt);
  }
  bool json = f.output_format == "json";
  std::vector<int32_t> out_ids;
  std::string text, finish_reason;
  Status error;
  double start = Seconds(), first = 0.0;
  size_t num_prompt = ids.size();
  PAGELLM_RETURN_IF_ERROR(engine.AddRequest("generate-0", std::move(ids), f.params, [&](RequestOutput&& d) {
    if (!d.new_token_ids.empty() && first == 0.0) first = Seconds();
    out_ids.insert(out_ids.end(), d.new_token_ids.begin(), d.new_token_ids.end());
    text += d.text;
    if (!json) {
      std::fwrite(d.text.data(), 1, d.text.size(), stdout);
      std::fflush(stdout);
    }
    if (d.finished) {
      finish_reason = d.finish_reason;
      error = d.error;
    }
  }));
  PAGELLM_RETURN_IF_ERROR(engine.RunUntilIdle());
  PAGELLM_RETURN_IF_ERROR(error);
  double end = Seconds();
  if (json) {
    OrderedJson j = {{"text", text}, {"token_ids", out_ids}, {"finish_reason", finish_reason},
                     {"num_prompt_tokens", num_prompt}, {"num_output_tokens", out_ids.size()}};
    std::cout << j.dump() << std::endl;
  } else {
    std::cout << std::endl;
  }
  double decode_s = end - first;
  PLOG_INFO("prompt {} tokens, output {} tokens ({}); time to first token {:.1f} ms; decode {:.2f} tokens/s",
            num_prompt, out_ids.size(), finish_reason, (first - start) * 1e3,
            out_ids.size() > 1 && decode_s > 0 ? (out_ids.size() - 1) / decode_s : 0.0);
  return OkStatus();
}

Status RunBatch(LlmEngine& engine, const GenerateFlags& f) {
  std::ifstream in(f.input);
  if (!in) return NotFoundError(fmt::format("cannot open {}", f.input));
  std::ofstream out_file;
  if (!f.output.empty()) {
    out_file.open(f.output);
    if (!out_file) return PermissionDeniedError(fmt::format("cannot create {}", f.output));
  }
  std::ostream& out = f.output.empty() ? std::cout : out_file;
  std::vector<OrderedJson> results;
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto where = [&](const Status& s) { return s.WithPrefix(fmt::format("{}:{}", f.input, line_no)); };
    OrderedJson j = OrderedJson::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return InvalidArgumentError(fmt::format("{}:{}: not a JSON object", f.input, line_no));
    auto ids = PromptIdsFromJson(engine.core(), j, f.chat_template);
    if (!ids.ok()) return where(ids.status());
    auto params = SamplingParamsFromJson(j);
    if (!params.ok()) return where(params.status());
    size_t idx = results.size();
    int32_t n = params->n;
    results.push_back({{"index", idx}, {"num_prompt_tokens", ids->size()}});
    results[idx]["outputs"] = OrderedJson::array();
    for (int32_t i = 0; i < n; ++i) results[idx]["outputs"].push_back({{"text", ""}, {"token_ids", OrderedJson::array()}});
    Status added = engine.AddRequest(fmt::format("line-{}", line_no), std::move(*ids), *params,
                                     [&results, idx](RequestOutput&& d) {
      OrderedJson& o = results[idx]["outputs"][static_cast<size_t>(d.index)];
      o["text"] = o["text"].get<std::string>() + d.text;
      for (int32_t t : d.new_token_ids) o["token_ids"].push_back(t);
      if (d.finished) {
        o["finish_reason"] = d.error.ok() ? d.finish_reason : "error";
        if (!d.error.ok()) o["error"] = d.error.message();
        o["num_completion_tokens"] = o["token_ids"].size();
      }
    });
    if (!added.ok()) return where(added);
  }
  double start = Seconds();
  PAGELLM_RETURN_IF_ERROR(engine.RunUntilIdle());
  double elapsed = Seconds() - start;
  int64_t generated = 0;
  for (OrderedJson& r : results) {
    // vLLM-style flat fields for n == 1, the full list always.
    const OrderedJson& first = r["outputs"][0];
    r["text"] = first["text"];
    r["token_ids"] = first["token_ids"];
    r["finish_reason"] = first.value("finish_reason", "");
    r["num_completion_tokens"] = first.value("num_completion_tokens", 0);
    for (const auto& o : r["outputs"]) generated += static_cast<int64_t>(o["token_ids"].size());
    out << r.dump() << "\n";
  }
  out.flush();
  PLOG_INFO("{} requests, {} generated tokens in {:.2f} s ({:.1f} tokens/s)", results.size(), generated, elapsed,
            elapsed > 0 ? generated / elapsed : 0.0);
  return OkStatus();
}

}  // namespace

void RegisterGenerateCommand(CLI::App& app) {
  auto f = std::make_shared<GenerateFlags>();
  CLI::App* cmd = app.add_subcommand("generate", "generate text offline (one prompt, or a JSONL file of requests)");
  cmd->add_option("--model", f->engine.model, "model directory")->required();
  cmd->add_option("--prompt", f->prompt, "prompt text");
  cmd->add_option("--prompt-ids", f->prompt_ids, "prompt as token ids, e.g. 151644,872,198");
  cmd->add_flag("--chat", f->chat, "apply the model's chat template to --prompt as a user message");
  cmd->add_option("--system", f->system, "system message (with --chat)");
  cmd->add_option("--enable-thinking", f->enable_thinking, "chat_template_kwargs enable_thinking (true/false)");
  cmd->add_option("--chat-template", f->chat_template, "a Jinja file replacing the model's chat template");
  cmd->add_option("--input", f->input, "JSONL requests: prompt | messages | prompt_token_ids + sampling fields");
  cmd->add_option("--output", f->output, "JSONL results, in input order (default stdout)");
  cmd->add_option("--output-format", f->output_format, "text (stream) or json (one object at the end)")
      ->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("--max-tokens", f->params.max_tokens, "tokens to generate at most");
  cmd->add_option("--min-tokens", f->params.min_tokens, "tokens before EOS/stop may end the output");
  cmd->add_option("--temperature", f->params.temperature, "0 = greedy (default: the model's generation_config)");
  cmd->add_option("--top-p", f->params.top_p, "nucleus sampling mass");
  cmd->add_option("--top-k", f->params.top_k, "keep the k most likely tokens (-1: off)");
  cmd->add_option("--min-p", f->params.min_p, "drop tokens below min_p x the top probability");
  cmd->add_option("--repetition-penalty", f->params.repetition_penalty, "HF repetition penalty (> 1 discourages)");
  cmd->add_option("--presence-penalty", f->params.presence_penalty, "OpenAI presence penalty");
  cmd->add_option("--frequency-penalty", f->params.frequency_penalty, "OpenAI frequency penalty");
  cmd->add_option("--seed", f->seed, "seed: same seed, same output");
  cmd->add_option("--stop", f->params.stop, "stop string (repeatable)");
  cmd->add_option("--stop-token-ids", f->params.stop_token_ids, "extra stop token ids")->delimiter(',');
  cmd->add_flag("--ignore-eos", f->params.ignore_eos, "keep generating past EOS");
  AddEngineFlags(cmd, &f->engine);
  cmd->callback([f] {
    if (f->seed) {
      f->params.seed = *f->seed;
      f->engine.seed = *f->seed;
    }
    if (f->input.empty() && f->prompt.empty() && f->prompt_ids.empty()) {
      ReportStatus(InvalidArgumentError("give --prompt, --prompt-ids or --input"));
      return;
    }
    auto engine = LlmEngine::Create(f->engine);
    if (!ReportStatus(engine.status())) return;
    ReportStatus(f->input.empty() ? RunSingle(**engine, *f) : RunBatch(**engine, *f));
  });
}

}  // namespace pagellm::cli
