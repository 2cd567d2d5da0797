#include "grammar/gbnf_parser.h"

#include <fmt/format.h>

#include "grammar/char_classes.h"
#include "tokenizer/unicode.h"

namespace pagellm::grammar {
namespace {

bool IsNameChar(char c) { return isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'; }

class GbnfParser {
 public:
  explicit GbnfParser(std::string_view t) : t_(t) {}

  StatusOr<Grammar> Parse(std::string_view root_name) {
    SkipSpace();
    while (pos_ < t_.size()) {
      std::string name = ReadName();
      if (name.empty()) return Error("expected a rule name");
      SkipSpace();
      if (t_.substr(pos_, 3) != "::=") return Error(fmt::format("expected '::=' after '{}'", name));
      pos_ += 3;
      int32_t rule = g_.DeclareRule(name);
      if (defined_.size() <= static_cast<size_t>(rule)) defined_.resize(rule + 1, false);
      if (defined_[rule]) return Error(fmt::format("rule '{}' is defined twice", name));
      defined_[rule] = true;
      PAGELLM_ASSIGN_OR_RETURN(int32_t body, ParseAlternatives());
      g_.DefineRule(rule, body);
      SkipSpace();
    }
    int32_t root = g_.FindRule(root_name);
    if (root < 0) return InvalidArgumentError(fmt::format("grammar: no '{}' rule", root_name));
    g_.SetRoot(root);
    PAGELLM_RETURN_IF_ERROR(g_.Validate().WithPrefix("grammar"));
    return std::move(g_);
  }

 private:
  Status Error(std::string_view what) const {
    size_t line = 1;
    for (size_t i = 0; i < pos_ && i < t_.size(); ++i) line += t_[i] == '\n';
    return InvalidArgumentError(fmt::format("grammar: {} (line {})", what, line));
  }

  void SkipSpace() {
    while (pos_ < t_.size()) {
      char c = t_[pos_];
      if (c == '#') {
        while (pos_ < t_.size() && t_[pos_] != '\n') ++pos_;
      } else if (isspace(static_cast<unsigned char>(c))) {
        ++pos_;
      } else {
        break;
      }
    }
  }

  std::string ReadName() {
    size_t start = pos_;
    while (pos_ < t_.size() && IsNameChar(t_[pos_])) ++pos_;
    return std::string(t_.substr(start, pos_ - start));
  }

  // Whether a `name ::=` starts at pos_ (the end of the current rule).
  bool AtRuleStart() {
    size_t save = pos_;
    bool yes = !ReadName().empty();
    if (yes) {
      SkipSpace();
      yes = t_.substr(pos_, 3) == "::=";
    }
    pos_ = save;
    return yes;
  }

  StatusOr<int32_t> ParseAlternatives() {
    std::vector<int32_t> alts;
    while (true) {
      PAGELLM_ASSIGN_OR_RETURN(int32_t seq, ParseSequence());
      alts.push_back(seq);
      SkipSpace();
      if (pos_ < t_.size() && t_[pos_] == '|') {
        ++pos_;
        continue;
      }
      return g_.AddAlt(std::move(alts));
    }
  }

  StatusOr<int32_t> ParseSequence() {
    std::vector<int32_t> items;
    while (true) {
      SkipSpace();
      if (pos_ >= t_.size() || t_[pos_] == '|' || t_[pos_] == ')' || AtRuleStart()) break;
      PAGELLM_ASSIGN_OR_RETURN(int32_t atom, ParseAtom());
      PAGELLM_ASSIGN_OR_RETURN(atom, ParseQuantifiers(atom));
      items.push_back(atom);
    }
    return g_.AddSeq(std::move(items));
  }

  StatusOr<int32_t> ParseQuantifiers(int32_t atom) {
    while (pos_ < t_.size()) {
      char c = t_[pos_];
      if (c == '*') {
        atom = g_.AddRepeat(atom, 0, -1);
      } else if (c == '+') {
        atom = g_.AddRepeat(atom, 1, -1);
      } else if (c == '?') {
        atom = g_.AddRepeat(atom, 0, 1);
      } else if (c == '{') {
        ++pos_;
        SkipSpace();
        int64_t min = ReadInt(), max = min;
        SkipSpace();
        if (min < 0) return Error("expected a number in '{}'");
        if (pos_ < t_.size() && t_[pos_] == ',') {
          ++pos_;
          SkipSpace();
          max = ReadInt();  // -1 when absent: unbounded
          SkipSpace();
        }
        if (pos_ >= t_.size() || t_[pos_] != '}') return Error("expected '}'");
        if ((max >= 0 && max < min) || std::max(min, max) > 10000) return Error("bad repetition bounds");
        atom = g_.AddRepeat(atom, static_cast<int32_t>(min), static_cast<int32_t>(max));
      } else {
        break;
      }
      ++pos_;
    }
    return atom;
  }

  int64_t ReadInt() {
    if (pos_ >= t_.size() || !isdigit(static_cast<unsigned char>(t_[pos_]))) return -1;
    int64_t v = 0;
    while (pos_ < t_.size() && isdigit(static_cast<unsigned char>(t_[pos_]))) v = std::min<int64_t>(v * 10 + (t_[pos_++] - '0'), 1 << 30);
    return v;
  }

  StatusOr<int32_t> ParseAtom() {
    char c = t_[pos_];
    if (c == '"') {
      ++pos_;
      std::string bytes;
      while (pos_ < t_.size() && t_[pos_] != '"') {
        PAGELLM_ASSIGN_OR_RETURN(uint32_t cp, ReadChar());
        tokenizer::AppendUtf8(cp, &bytes);
      }
      if (pos_ >= t_.size()) return Error("unterminated string");
      ++pos_;
      return g_.AddLiteral(bytes);
    }
    if (c == '[') return ParseClass();
    if (c == '.') {
      ++pos_;
      return g_.AddClass({{0, 0x10FFFF}});
    }
    if (c == '(') {
      ++pos_;
      PAGELLM_ASSIGN_OR_RETURN(int32_t inner, ParseAlternatives());
      SkipSpace();
      if (pos_ >= t_.size() || t_[pos_] != ')') return Error("expected ')'");
      ++pos_;
      return inner;
    }
    if (c == '<') return Error("token references (<...>) are not supported");
    std::string name = ReadName();
    if (name.empty()) return Error(fmt::format("unexpected '{}'", c));
    return g_.AddRef(g_.DeclareRule(name));
  }

  StatusOr<int32_t> ParseClass() {
    ++pos_;
    bool negate = pos_ < t_.size() && t_[pos_] == '^';
    if (negate) ++pos_;
    std::vector<CodepointRange> ranges;
    while (pos_ < t_.size() && t_[pos_] != ']') {
      PAGELLM_ASSIGN_OR_RETURN(uint32_t lo, ReadChar());
      uint32_t hi = lo;
      if (pos_ + 1 < t_.size() && t_[pos_] == '-' && t_[pos_ + 1] != ']') {
        ++pos_;
        PAGELLM_ASSIGN_OR_RETURN(hi, ReadChar());
        if (hi < lo) return Error("bad class range");
      }
      ranges.push_back({lo, hi});
    }
    if (pos_ >= t_.size()) return Error("unterminated character class");
    ++pos_;
    return g_.AddClass(std::move(ranges), negate);
  }

  // One (possibly escaped) character of a string or class.
  StatusOr<uint32_t> ReadChar() {
    if (t_[pos_] != '\\') return DecodeUtf8(t_, &pos_);
    if (++pos_ >= t_.size()) return Error("trailing backslash");
    char c = t_[pos_++];
    int digits = c == 'x' ? 2 : c == 'u' ? 4 : c == 'U' ? 8 : 0;
    if (digits == 0) return SimpleEscape(static_cast<unsigned char>(c));
    uint32_t cp = 0;
    for (int i = 0; i < digits; ++i, ++pos_) {
      if (pos_ >= t_.size() || !isxdigit(static_cast<unsigned char>(t_[pos_]))) return Error("bad hex escape");
      char h = t_[pos_];
      cp = cp * 16 + (isdigit(static_cast<unsigned char>(h)) ? h - '0' : (tolower(h) - 'a' + 10));
    }
    return cp;
  }

  std::string_view t_;
  size_t pos_ = 0;
  Grammar g_;
  std::vector<bool> defined_;
};

}  // namespace

StatusOr<Grammar> ParseGbnf(std::string_view text, std::string_view root_name) {
  return GbnfParser(text).Parse(root_name);
}

}  // namespace pagellm::grammar
