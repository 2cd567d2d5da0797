// StopChecker: decides, token by token, whether a sequence is finished and which
// part of its text may be streamed to the client yet.
//
// It follows vLLM v1 (scheduler check_stop + detokenizer stop strings):
//   * length: num_output_tokens >= max_tokens, or prompt + output >= max_model_len.
//     Checked first, so a final token that is also EOS reports "length" (as vLLM).
//   * stop by token: EOS (unless ignore_eos; stop_reason unset) or a stop_token_id
//     (stop_reason = that id). The stop token's own text is dropped unless
//     include_stop_str_in_output.
//   * stop string: searched in the text; the output is cut before it (or after it with
//     include_stop_str_in_output); stop_reason = the string. Overrides "length".
//   * min_tokens: no token or string stop while num_output_tokens <= min_tokens, and
//     text produced during that span is not searched (a match may still start there).
// Streaming: text whose tail could still grow into a stop string is HELD BACK until it
// either completes the stop string (then it is cut) or diverges (then it is released).
// NOTE: vLLM holds back a fixed max(len(stop)) - 1 characters; we hold back only the
// longest suffix that is a proper prefix of some stop string, so streams stall less.
// Text is UTF-8 bytes; matching bytes is exact for whole UTF-8 stop strings.
// NOTE: several stop strings matching in one delta: the earliest match wins (vLLM
// takes the first in list order); ties go to the earlier-listed string.
//
//   StopChecker checker(params, eos_ids, max_model_len, num_prompt_tokens);
//   for each new token:
//     StopResult r = checker.Update(token_id, detokenizer_delta);
//     stream(r.text_to_emit);
//     if (r.finished) { report(r.reason, r.stop_reason); break; }
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "sched/sampling_params.h"

namespace pagellm {

enum class FinishReason { kNone, kStop, kLength, kAbort };

// "stop", "length", "abort" (OpenAI finish_reason); "" for kNone.
const char* FinishReasonName(FinishReason reason);

struct StopResult {
  bool finished = false;
  FinishReason reason = FinishReason::kNone;
  // New text the client may see now (may be empty while a partial match is held).
  std::string text_to_emit;
  // vLLM's stop_reason: the matched stop string, or the stop token id (unset for EOS
  // and for length).
  std::optional<std::variant<int32_t, std::string>> stop_reason;
};

class StopChecker {
 public:
  // eos_token_ids: generation_config's EOS list. max_model_len <= 0: no context limit.
  StopChecker(const SamplingParams& params, std::span<const int32_t> eos_token_ids,
              int32_t max_model_len, int32_t num_prompt_tokens);

  // Feeds one generated token and the text the detokenizer produced for it.
  // Precondition: not finished yet.
  StopResult Update(int32_t token_id, std::string_view text_delta);

  bool finished() const { return finished_; }
  int32_t num_output_tokens() const { return num_output_tokens_; }
  // Whole output text so far (truncated at the stop string once finished),
  // including any part still held back from the stream.
  const std::string& output_text() const { return text_; }
  // True while the tail of the text is held back as a possible start of a stop string.
  bool holds_back() const { return num_emitted_bytes_ < text_.size(); }
  // The sequence ended for a reason of its own (a finished grammar): no stop string can
  // complete any more, so the held-back text is the output's end. Returns it; finished.
  std::string FinishHeldBack();

 private:
  FinishReason CheckTokenStop(int32_t token_id, StopResult& result) const;
  // Returns true and truncates text_ if a stop string ends after `search_from`.
  bool CheckStopStrings(size_t search_from, StopResult& result);
  // Bytes at the end of text_ that could still begin a stop string.
  size_t HoldBackLength() const;

  std::vector<std::string> stop_strings_;  // non-empty ones only
  std::vector<int32_t> eos_token_ids_;
  std::vector<int32_t> stop_token_ids_;
  std::optional<int32_t> max_tokens_;
  int32_t min_tokens_ = 0;
  bool ignore_eos_ = false;
  bool include_stop_str_ = false;
  int64_t max_total_tokens_ = 0;  // max_model_len - num_prompt_tokens (<= 0: unlimited)

  std::string text_;
  size_t num_emitted_bytes_ = 0;
  size_t min_tokens_text_end_ = 0;  // text_ bytes produced while output <= min_tokens
  int32_t num_output_tokens_ = 0;
  bool finished_ = false;
};

}  // namespace pagellm
