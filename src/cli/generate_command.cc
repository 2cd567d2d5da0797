// `pagellm generate`: offline generation through the full engine.
//   single prompt: --prompt TEXT [--chat] | --prompt-ids 1,2,3 -> streams text to stdout
//   many prompts:  --input prompts.jsonl --output results.jsonl (run concurrently)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/engine_flags.h"
#include "cli/prompt_input.h"
#include "common/logging.h"
#include "common/mapped_file.h"
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

// Keys an input line may hold: the prompt forms and the sampling fields that
// SamplingParamsFromJson reads (vLLM's names). Anything else is a typo to report, not
// to ignore silently (a misspelt "max_token" would otherwise run with the default).
Status CheckKnownKeys(const OrderedJson& line) {
  static const std::set<std::string> kKnown = {
      "prompt", "messages", "prompt_token_ids", "chat_template_kwargs", "n", "temperature", "top_p", "top_k",
      "min_p", "presence_penalty", "frequency_penalty", "repetition_penalty", "seed", "max_tokens",
      "min_tokens", "stop", "stop_token_ids", "ignore_eos", "skip_special_tokens",
      "include_stop_str_in_output", "logprobs"};
  for (const auto& [key, value] : line.items()) {
    if (!kKnown.count(key)) return InvalidArgumentError(fmt::format("unknown field \"{}\"", key));
  }
  int forms = line.contains("prompt") + line.contains("messages") + line.contains("prompt_token_ids");
  if (forms > 1) return InvalidArgumentError("give only one of \"prompt\", \"messages\" and \"prompt_token_ids\"");
  return OkStatus();
}

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

// One input line's outcome, filled by the engine's callbacks (one entry per sample).
struct BatchSample {
  std::string text;
  std::vector<int32_t> token_ids;
  std::vector<float> logprobs;  // chosen tokens' logprobs, when the line asked for logprobs
  int32_t num_cached_tokens = 0;
  std::string finish_reason;
  Status error;
};
struct BatchLine {
  int line_no = 0;
  size_t num_prompt_tokens = 0;
  std::vector<BatchSample> samples;  // [n]
};

// Parses and queues every line; any invalid line fails the whole run, naming it.
Status QueueBatch(LlmEngine& engine, const GenerateFlags& f, std::vector<BatchLine>* lines) {
  std::ifstream in(f.input);
  if (!in) return NotFoundError(fmt::format("cannot open {}", f.input));
  std::vector<std::pair<int, std::vector<int32_t>>> prompts;
  std::vector<SamplingParams> params;
  std::string text;
  for (int line_no = 1; std::getline(in, text); ++line_no) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto where = [&](const Status& s) { return s.WithPrefix(fmt::format("{}:{}", f.input, line_no)); };
    OrderedJson j = OrderedJson::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return InvalidArgumentError(fmt::format("{}:{}: not a JSON object", f.input, line_no));
    if (Status known = CheckKnownKeys(j); !known.ok()) return where(known);
    auto ids = PromptIdsFromJson(engine.core(), j, f.chat_template);
    if (!ids.ok()) return where(ids.status());
    auto p = SamplingParamsFromJson(j);
    if (!p.ok()) return where(p.status());
    // Validate before queueing anything, so a bad line 7 does not leave 6 running.
    if (Status valid = engine.core().ValidateRequest(*ids, *p); !valid.ok()) return where(valid);
    prompts.emplace_back(line_no, std::move(*ids));
    params.push_back(*p);
  }
  // Sized once: the callbacks below keep indices into it.
  lines->resize(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    BatchLine& line = (*lines)[i];
    line.line_no = prompts[i].first;
    line.num_prompt_tokens = prompts[i].second.size();
    line.samples.resize(static_cast<size_t>(params[i].n));
    Status added = engine.AddRequest(fmt::format("line-{}", line.line_no), std::move(prompts[i].second), params[i],
                                     [lines, i](RequestOutput&& d) {
      BatchSample& s = (*lines)[i].samples.at(static_cast<size_t>(d.index));
      s.text += d.text;
      s.token_ids.insert(s.token_ids.end(), d.new_token_ids.begin(), d.new_token_ids.end());
      for (const TokenLogprob& lp : d.logprobs) s.logprobs.push_back(lp.logprob);
      s.num_cached_tokens = std::max(s.num_cached_tokens, d.num_cached_tokens);
      if (d.finished) {
        s.finish_reason = d.finish_reason;
        s.error = d.error;
      }
    });
    if (!added.ok()) return added.WithPrefix(fmt::format("{}:{}", f.input, line.line_no));
  }
  return OkStatus();
}

// vLLM-style flat fields (the first sample's) plus every sample under "outputs".
OrderedJson BatchLineJson(size_t index, const BatchLine& line) {
  OrderedJson outputs = OrderedJson::array();
  for (const BatchSample& s : line.samples) {
    OrderedJson o = OrderedJson::object();
    o["text"] = s.text;
    o["token_ids"] = s.token_ids;
    o["finish_reason"] = s.finish_reason;
    o["num_completion_tokens"] = s.token_ids.size();
    if (!s.logprobs.empty()) o["logprobs"] = s.logprobs;
    outputs.push_back(std::move(o));
  }
  OrderedJson r = OrderedJson::object();
  r["index"] = index;
  r["text"] = outputs[0]["text"];
  r["token_ids"] = outputs[0]["token_ids"];
  r["finish_reason"] = outputs[0]["finish_reason"];
  r["num_prompt_tokens"] = line.num_prompt_tokens;
  r["num_completion_tokens"] = outputs[0]["num_completion_tokens"];
  r["num_cached_tokens"] = line.samples[0].num_cached_tokens;
  if (outputs[0].contains("logprobs")) r["logprobs"] = outputs[0]["logprobs"];
  r["outputs"] = std::move(outputs);
  return r;
}

Status RunBatch(LlmEngine& engine, const GenerateFlags& f) {
  std::vector<BatchLine> lines;
  PAGELLM_RETURN_IF_ERROR(QueueBatch(engine, f, &lines));
  double start = Seconds();
  PAGELLM_RETURN_IF_ERROR(engine.RunUntilIdle());
  double elapsed = Seconds() - start;
  int64_t generated = 0;
  for (const BatchLine& line : lines) {
    for (const BatchSample& s : line.samples) {
      // Lines were validated up front, so this is an engine failure.
      if (!s.error.ok()) return s.error.WithPrefix(fmt::format("{}:{}", f.input, line.line_no));
      generated += static_cast<int64_t>(s.token_ids.size());
    }
  }
  std::string text;
  for (size_t i = 0; i < lines.size(); ++i) text += BatchLineJson(i, lines[i]).dump() + "\n";
  if (f.output.empty()) {
    std::cout << text << std::flush;
  } else {
    PAGELLM_RETURN_IF_ERROR(WriteStringToFile(f.output, text));
  }
  PLOG_INFO("{} requests, {} generated tokens in {:.2f} s ({:.1f} tokens/s)", lines.size(), generated, elapsed,
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
    if (RunIfMpiWorkerRank(f->engine)) return;
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
