#include "parsers/qwen3_coder_tool_parser.h"

#include "parsers/param_convert.h"
#include "parsers/python_json.h"
#include "parsers/text_scan.h"

namespace pagellm::parsers {
namespace {

constexpr std::string_view kToolOpen = "<tool_call>";
constexpr std::string_view kToolClose = "</tool_call>";
constexpr std::string_view kFunctionOpen = "<function=";
constexpr std::string_view kFunctionClose = "</function>";
constexpr std::string_view kParamOpen = "<parameter=";
constexpr std::string_view kParamClose = "</parameter>";

bool IsPrefixOf(std::string_view prefix, std::string_view of) { return of.substr(0, prefix.size()) == prefix; }

}  // namespace

void Qwen3CoderToolParser::Feed(std::string_view text, ToolEvents* out) {
  buf_.append(text);
  Run(/*at_end=*/false, out);
}

void Qwen3CoderToolParser::Finish(ToolEvents* out) {
  Run(/*at_end=*/true, out);
  text_.Finish();
}

void Qwen3CoderToolParser::Run(bool at_end, ToolEvents* out) {
  while (Step(at_end, out)) {
  }
}

bool Qwen3CoderToolParser::Step(bool at_end, ToolEvents* out) {
  switch (state_) {
    case State::kText: return StepText(at_end, out);
    case State::kAwaitFunction: return StepAwaitFunction(at_end, out);
    case State::kFunctionName: return StepFunctionName(at_end, out);
    case State::kInFunction: return StepInFunction(at_end, out);
    case State::kParamName: return StepParamName(at_end, out);
    case State::kParamValue: return StepParamValue(at_end, out);
    case State::kAfterFunction: return StepAfterFunction(at_end, out);
  }
  return false;
}

bool Qwen3CoderToolParser::StepText(bool at_end, ToolEvents* out) {
  TagMatch m = FindFirstTag(buf_, {kToolOpen, kFunctionOpen});
  if (m.found()) {
    text_.Emit(std::string_view(buf_).substr(0, m.pos), out);
    std::string_view tag = m.tag_idx == 0 ? kToolOpen : kFunctionOpen;
    raw_ = std::string(tag);
    buf_.erase(0, m.pos + tag.size());
    state_ = m.tag_idx == 0 ? State::kAwaitFunction : State::kFunctionName;
    return true;
  }
  size_t safe = at_end ? buf_.size() : SafePrefixLen(buf_, {kToolOpen, kFunctionOpen});
  text_.Emit(std::string_view(buf_).substr(0, safe), out);
  buf_.erase(0, safe);
  return false;
}

bool Qwen3CoderToolParser::StepAwaitFunction(bool at_end, ToolEvents* out) {
  size_t p = SkipSpace(buf_);
  std::string_view rest = std::string_view(buf_).substr(p);
  if (IsPrefixOf(kFunctionOpen, rest)) {
    raw_.append(buf_, 0, p + kFunctionOpen.size());
    buf_.erase(0, p + kFunctionOpen.size());
    state_ = State::kFunctionName;
    return true;
  }
  if (IsPrefixOf(rest, kFunctionOpen) && !at_end) return false;  // may still become one
  Revert(out);
  return true;
}

bool Qwen3CoderToolParser::StepFunctionName(bool at_end, ToolEvents* out) {
  size_t pos = buf_.find_first_of(">\n<");
  if (pos == std::string::npos) {
    if (!at_end) return false;
    Revert(out);
    return true;
  }
  std::string name(TrimSpace(std::string_view(buf_).substr(0, pos)));
  if (buf_[pos] != '>' || name.empty()) {
    Revert(out);  // e.g. "<function=name\n<parameter=...": not a call (vLLM drops it)
    return true;
  }
  buf_.erase(0, pos + 1);
  raw_.clear();
  BeginCall(std::move(name), out);
  state_ = State::kInFunction;
  return true;
}

bool Qwen3CoderToolParser::StepInFunction(bool at_end, ToolEvents* out) {
  TagMatch m = FindFirstTag(buf_, {kParamOpen, kFunctionClose, kToolClose});
  if (!m.found()) {
    // Text between parameters (normally newlines) is not part of the call.
    if (at_end) {
      buf_.clear();
      EndCall(out);
      state_ = State::kText;
      return true;
    }
    buf_.erase(0, SafePrefixLen(buf_, {kParamOpen, kFunctionClose, kToolClose}));
    return false;
  }
  std::string_view tags[] = {kParamOpen, kFunctionClose, kToolClose};
  buf_.erase(0, m.pos + tags[m.tag_idx].size());
  if (m.tag_idx == 0) {
    state_ = State::kParamName;
    return true;
  }
  EndCall(out);
  state_ = m.tag_idx == 1 ? State::kAfterFunction : State::kText;
  return true;
}

bool Qwen3CoderToolParser::StepParamName(bool at_end, ToolEvents* out) {
  size_t pos = buf_.find_first_of("><");
  if (pos == std::string::npos) {
    if (!at_end) return false;
    buf_.clear();  // unterminated parameter header: dropped
    state_ = State::kInFunction;
    return true;
  }
  if (buf_[pos] == '<') {  // malformed header: drop it, rescan from the '<'
    buf_.erase(0, pos);
    state_ = State::kInFunction;
    return true;
  }
  param_name_ = std::string(TrimSpace(std::string_view(buf_).substr(0, pos)));
  param_value_.clear();
  buf_.erase(0, pos + 1);
  state_ = State::kParamValue;
  return true;
}

bool Qwen3CoderToolParser::StepParamValue(bool at_end, ToolEvents* out) {
  TagMatch m = FindFirstTag(buf_, {kParamClose, kParamOpen, kFunctionClose, kToolClose});
  if (!m.found()) {
    size_t take = at_end ? buf_.size() : SafePrefixLen(buf_, {kParamClose, kParamOpen, kFunctionClose, kToolClose});
    param_value_.append(buf_, 0, take);
    buf_.erase(0, take);
    if (!at_end) return false;
    EmitParam(out);
    state_ = State::kInFunction;
    return true;
  }
  param_value_.append(buf_, 0, m.pos);
  // </parameter> is consumed; the other terminators are left for kInFunction.
  buf_.erase(0, m.tag_idx == 0 ? m.pos + kParamClose.size() : m.pos);
  EmitParam(out);
  state_ = State::kInFunction;
  return true;
}

bool Qwen3CoderToolParser::StepAfterFunction(bool at_end, ToolEvents* out) {
  size_t p = SkipSpace(buf_);
  std::string_view rest = std::string_view(buf_).substr(p);
  if (IsPrefixOf(kToolClose, rest)) {
    buf_.erase(0, p + kToolClose.size());
    state_ = State::kText;
    return true;
  }
  if (IsPrefixOf(kFunctionOpen, rest)) {  // another call inside the same <tool_call>
    buf_.erase(0, p + kFunctionOpen.size());
    raw_ = std::string(kFunctionOpen);
    state_ = State::kFunctionName;
    return true;
  }
  if (!at_end && (IsPrefixOf(rest, kToolClose) || IsPrefixOf(rest, kFunctionOpen))) return false;
  state_ = State::kText;  // the text after the call is plain text again
  return true;
}

void Qwen3CoderToolParser::Revert(ToolEvents* out) {
  text_.Emit(raw_, out);
  raw_.clear();
  state_ = State::kText;
}

void Qwen3CoderToolParser::BeginCall(std::string name, ToolEvents* out) {
  properties_ = FindToolProperties(tools_, name);
  num_params_ = 0;
  text_.OnCallBegin();
  AppendEvent(out, ToolEvent::Kind::kBegin, name);
  AppendEvent(out, ToolEvent::Kind::kArgs, "{");
}

void Qwen3CoderToolParser::EmitParam(ToolEvents* out) {
  std::string_view value = param_value_;
  if (!value.empty() && value.front() == '\n') value.remove_prefix(1);
  if (!value.empty() && value.back() == '\n') value.remove_suffix(1);
  std::string piece = num_params_ > 0 ? ", " : "";
  piece += PythonJsonDumps(OrderedJson(param_name_));
  piece += ": ";
  piece += PythonJsonDumps(ConvertParamValue(value, properties_, param_name_));
  AppendEvent(out, ToolEvent::Kind::kArgs, piece);
  ++num_params_;
  param_name_.clear();
  param_value_.clear();
}

void Qwen3CoderToolParser::EndCall(ToolEvents* out) {
  AppendEvent(out, ToolEvent::Kind::kArgs, "}");
  text_.OnCallEnd();
}

}  // namespace pagellm::parsers
