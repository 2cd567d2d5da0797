#include "tokenizer/pre_tokenizer.h"

#include <algorithm>

#include <fmt/format.h>

namespace pagellm::tokenizer {
namespace {

struct Span {
  size_t begin, end;
  bool flag;  // is_match before the behavior transform, "remove" after it
};

// Mirrors tokenizers' normalizer.rs `split`: consecutive spans are merged per behavior.
std::vector<Span> ApplyBehavior(std::vector<Span> spans, SplitBehavior behavior) {
  std::vector<Span> out;
  bool previous_match = false;
  switch (behavior) {
    case SplitBehavior::kIsolated:
      for (auto& s : spans) s.flag = false;
      return spans;
    case SplitBehavior::kRemoved:
      return spans;
    case SplitBehavior::kContiguous:
      for (const Span& s : spans) {
        if (s.flag == previous_match && !out.empty()) out.back().end = s.end;
        else out.push_back({s.begin, s.end, false});
        previous_match = s.flag;
      }
      return out;
    case SplitBehavior::kMergedWithPrevious:
      for (const Span& s : spans) {
        if (s.flag && !previous_match && !out.empty()) out.back().end = s.end;
        else out.push_back({s.begin, s.end, false});
        previous_match = s.flag;
      }
      return out;
    case SplitBehavior::kMergedWithNext:
      for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
        if (it->flag && !previous_match && !out.empty()) out.back().begin = it->begin;
        else out.push_back({it->begin, it->end, false});
        previous_match = it->flag;
      }
      std::reverse(out.begin(), out.end());
      return out;
  }
  return spans;
}

StatusOr<SplitBehavior> ParseBehavior(const std::string& name) {
  if (name == "Isolated") return SplitBehavior::kIsolated;
  if (name == "Removed") return SplitBehavior::kRemoved;
  if (name == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (name == "Contiguous") return SplitBehavior::kContiguous;
  return InvalidArgumentError(fmt::format("unknown split behavior: {}", name));
}

Status ParseStep(const Json& j, PreTokenizer* out) {
  if (!j.is_object() || !j.contains("type")) return InvalidArgumentError("pre_tokenizer without a type");
  std::string type = j["type"].get<std::string>();
  using Kind = PreTokenizer::Step::Kind;
  if (type == "Sequence") {
    for (const Json& sub : j.value("pretokenizers", Json::array())) PAGELLM_RETURN_IF_ERROR(ParseStep(sub, out));
    return OkStatus();
  }
  PreTokenizer::Step step;
  step.kind = Kind::kSplit;
  if (type == "Split") {
    const Json& pattern = j.value("pattern", Json::object());
    if (pattern.contains("Regex")) {
      PAGELLM_ASSIGN_OR_RETURN(step.regex, Regex::Compile(pattern["Regex"].get<std::string>()));
    } else if (pattern.contains("String")) {
      PAGELLM_ASSIGN_OR_RETURN(step.regex, Regex::CompileLiteral(pattern["String"].get<std::string>()));
    } else {
      return InvalidArgumentError("Split pre-tokenizer without a pattern");
    }
    PAGELLM_ASSIGN_OR_RETURN(step.behavior, ParseBehavior(j.value("behavior", "Isolated")));
    step.invert = j.value("invert", false);
  } else if (type == "ByteLevel") {
    step.kind = Kind::kByteLevel;
    step.add_prefix_space = j.value("add_prefix_space", true);
    if (j.value("use_regex", true)) {
      PAGELLM_ASSIGN_OR_RETURN(step.regex, Regex::Compile(kGpt2Pattern));
    }
  } else {
    return UnimplementedError(fmt::format("unsupported pre_tokenizer: {}", type));
  }
  out->AddStep(std::move(step));
  return OkStatus();
}

}  // namespace

void SplitByRegex(std::string_view text, const Regex& regex, SplitBehavior behavior, bool invert,
                  std::vector<std::string_view>* pieces) {
  if (text.empty()) return;
  thread_local std::vector<Regex::Match> matches;
  matches.clear();
  regex.FindAll(text, &matches);
  std::vector<Span> spans;
  spans.reserve(matches.size() * 2 + 1);
  size_t prev = 0;
  for (const auto& m : matches) {
    if (prev != m.begin) spans.push_back({prev, m.begin, invert});
    spans.push_back({m.begin, m.end, !invert});
    prev = m.end;
  }
  if (prev != text.size()) spans.push_back({prev, text.size(), invert});
  for (const Span& s : ApplyBehavior(std::move(spans), behavior)) {
    if (!s.flag && s.end > s.begin) pieces->push_back(text.substr(s.begin, s.end - s.begin));
  }
}

StatusOr<PreTokenizer> PreTokenizer::FromJson(const Json& json) {
  PreTokenizer pre;
  if (!json.is_null()) PAGELLM_RETURN_IF_ERROR(ParseStep(json, &pre));
  return pre;
}

StatusOr<PreTokenizer> PreTokenizer::FromPattern(std::string_view pattern) {
  PreTokenizer pre;
  Step split;
  split.kind = Step::Kind::kSplit;
  PAGELLM_ASSIGN_OR_RETURN(split.regex, Regex::Compile(pattern));
  pre.AddStep(std::move(split));
  Step byte_level;
  byte_level.kind = Step::Kind::kByteLevel;
  pre.AddStep(std::move(byte_level));
  return pre;
}

bool PreTokenizer::has_byte_level() const {
  return std::any_of(steps_.begin(), steps_.end(), [](const Step& s) { return s.kind == Step::Kind::kByteLevel; });
}

void PreTokenizer::Split(std::string_view text, std::vector<std::string_view>* pieces,
                         std::deque<std::string>* arena) const {
  pieces->clear();
  if (text.empty()) return;
  pieces->push_back(text);
  std::vector<std::string_view> next;
  for (const Step& step : steps_) {
    if (step.kind == Step::Kind::kByteLevel && !step.add_prefix_space && !step.regex) continue;
    next.clear();
    for (std::string_view piece : *pieces) {
      if (step.kind == Step::Kind::kSplit) {
        SplitByRegex(piece, *step.regex, step.behavior, step.invert, &next);
        continue;
      }
      if (step.add_prefix_space && piece.front() != ' ') {
        arena->push_back(" " + std::string(piece));
        piece = arena->back();
      }
      if (step.regex) SplitByRegex(piece, *step.regex, SplitBehavior::kIsolated, false, &next);
      else next.push_back(piece);
    }
    pieces->swap(next);
  }
}

}  // namespace pagellm::tokenizer
