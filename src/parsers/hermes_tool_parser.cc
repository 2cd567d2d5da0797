#include "parsers/hermes_tool_parser.h"

#include "parsers/python_json.h"
#include "parsers/text_scan.h"

namespace pagellm::parsers {
namespace {

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";

}  // namespace

void HermesToolParser::Feed(std::string_view text, ToolEvents* out) {
  buf_.append(text);
  Run(/*at_end=*/false, out);
}

void HermesToolParser::Finish(ToolEvents* out) {
  Run(/*at_end=*/true, out);
  text_.Finish();
}

void HermesToolParser::Run(bool at_end, ToolEvents* out) {
  bool progress = true;
  while (progress) {
    progress = state_ == State::kText ? StepText(at_end, out) : StepInCall(at_end, out);
  }
}

bool HermesToolParser::StepText(bool at_end, ToolEvents* out) {
  TagMatch m = FindFirstTag(buf_, {kOpen});
  if (m.found()) {
    text_.Emit(std::string_view(buf_).substr(0, m.pos), out);
    buf_.erase(0, m.pos + kOpen.size());
    state_ = State::kInCall;
    return true;
  }
  size_t safe = at_end ? buf_.size() : SafePrefixLen(buf_, {kOpen});
  text_.Emit(std::string_view(buf_).substr(0, safe), out);
  buf_.erase(0, safe);
  return false;
}

bool HermesToolParser::StepInCall(bool at_end, ToolEvents* out) {
  // Early rejection: a hermes body starts with '{'. Anything else is text, and the
  // rest of the buffer is rescanned as text (it may hold a real call).
  size_t first = SkipSpace(buf_);
  if (first < buf_.size() && buf_[first] != '{') {
    text_.Emit(kOpen, out);
    state_ = State::kText;
    return true;
  }
  TagMatch m = FindFirstTag(buf_, {kClose});
  if (!m.found() && !at_end) return false;  // body still streaming in
  size_t body_len = m.found() ? m.pos : buf_.size();
  std::string_view body = std::string_view(buf_).substr(0, body_len);
  if (!TryEmitCall(body, out)) {
    std::string raw = std::string(kOpen) + std::string(body);
    if (m.found()) raw.append(kClose);
    text_.Emit(raw, out);
  }
  buf_.erase(0, m.found() ? m.pos + kClose.size() : buf_.size());
  state_ = State::kText;
  return true;
}

bool HermesToolParser::TryEmitCall(std::string_view body, ToolEvents* out) {
  std::string_view trimmed = TrimSpace(body);
  OrderedJson call = OrderedJson::parse(trimmed.begin(), trimmed.end(), nullptr,
                                        /*allow_exceptions=*/false);
  if (!call.is_object()) return false;  // also covers parse failure (discarded)
  auto name_it = call.find("name");
  if (name_it == call.end() || !name_it->is_string() || name_it->get<std::string>().empty()) {
    return false;
  }
  OrderedJson args = OrderedJson::object();
  auto args_it = call.find("arguments");
  if (args_it != call.end()) {
    args = *args_it;
    if (args.is_string()) {
      // Already-serialized arguments: decode once if they hold an object.
      const std::string& s = args.get_ref<const std::string&>();
      OrderedJson inner = OrderedJson::parse(s, nullptr, /*allow_exceptions=*/false);
      if (inner.is_object()) args = std::move(inner);
    }
  }
  text_.OnCallBegin();
  AppendEvent(out, ToolEvent::Kind::kBegin, name_it->get<std::string>());
  AppendEvent(out, ToolEvent::Kind::kArgs, PythonJsonDumps(args));
  text_.OnCallEnd();
  return true;
}

}  // namespace pagellm::parsers
