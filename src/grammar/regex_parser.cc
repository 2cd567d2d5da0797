#include "grammar/regex_parser.h"

#include <fmt/format.h>

#include "grammar/char_classes.h"

namespace pagellm::grammar {
namespace {

class RegexParser {
 public:
  RegexParser(Grammar& g, std::string_view p, const RegexOptions& o) : g_(g), p_(p), o_(o) {}

  StatusOr<int32_t> Parse() {
    std::vector<int32_t> alts;
    while (true) {
      bool start_anchor = Eat('^');
      PAGELLM_ASSIGN_OR_RETURN(int32_t seq, ParseSeq(/*top=*/true));
      bool end_anchor = Eat('$');
      if (o_.search) {
        std::vector<int32_t> parts;
        if (!start_anchor) parts.push_back(AnyText());
        parts.push_back(seq);
        if (!end_anchor) parts.push_back(AnyText());
        seq = g_.AddSeq(std::move(parts));
      }
      alts.push_back(seq);
      if (Eat('|')) continue;
      if (pos_ < p_.size()) return Error(p_[pos_] == ')' ? "unbalanced ')'" : "anchor inside the pattern");
      break;
    }
    return g_.AddAlt(std::move(alts));
  }

 private:
  Status Error(std::string_view what) const {
    return InvalidArgumentError(fmt::format("regex '{}': {} (at offset {})", p_, what, pos_));
  }
  bool Eat(char c) {
    if (pos_ < p_.size() && p_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  int32_t Emit(const std::vector<CodepointRange>& r) {
    return o_.emit_class ? o_.emit_class(g_, r) : g_.AddClass(r);
  }
  int32_t AnyText() { return g_.AddRepeat(Emit({{0, 0x10FFFF}}), 0, -1); }

  StatusOr<int32_t> ParseAlt() {
    std::vector<int32_t> alts;
    do {
      PAGELLM_ASSIGN_OR_RETURN(int32_t s, ParseSeq(false));
      alts.push_back(s);
    } while (Eat('|'));
    return g_.AddAlt(std::move(alts));
  }

  StatusOr<int32_t> ParseSeq(bool top) {
    std::vector<int32_t> items;
    while (pos_ < p_.size()) {
      char c = p_[pos_];
      if (c == '|' || c == ')') break;
      if (c == '$' && top) {
        // "$" ends an alternative only at its end.
        if (pos_ + 1 == p_.size() || p_[pos_ + 1] == '|') break;
        return Error("anchor '$' inside the pattern");
      }
      if (c == '^' || c == '$') return Error("anchor inside the pattern");
      PAGELLM_ASSIGN_OR_RETURN(int32_t atom, ParseAtom());
      PAGELLM_ASSIGN_OR_RETURN(atom, ParseQuantifiers(atom));
      items.push_back(atom);
    }
    return g_.AddSeq(std::move(items));
  }

  StatusOr<int32_t> ParseQuantifiers(int32_t atom) {
    while (pos_ < p_.size()) {
      char c = p_[pos_];
      int32_t min = 0, max = -1;
      if (c == '*') {
        ++pos_;
      } else if (c == '+') {
        ++pos_;
        min = 1;
      } else if (c == '?') {
        ++pos_;
        max = 1;
      } else if (c == '{' && ParseBraces(&min, &max)) {
      } else {
        break;
      }
      if (max >= 0 && min > max) return Error("bad repetition bounds");
      if (std::max(min, max) > 10000) return Error("repetition bound above 10000");
      if (pos_ < p_.size() && (p_[pos_] == '?' || p_[pos_] == '+')) ++pos_;  // lazy / possessive
      atom = g_.AddRepeat(atom, min, max);
    }
    return atom;
  }

  // {n} {n,} {n,m}; returns false (consuming nothing) if the brace is a literal.
  bool ParseBraces(int32_t* min, int32_t* max) {
    size_t save = pos_++;
    auto number = [&](int32_t* out) {
      size_t start = pos_;
      int64_t v = 0;
      while (pos_ < p_.size() && isdigit(static_cast<unsigned char>(p_[pos_]))) {
        v = std::min<int64_t>(v * 10 + (p_[pos_++] - '0'), 1 << 30);
      }
      *out = static_cast<int32_t>(v);
      return pos_ > start;
    };
    if (!number(min)) {
      pos_ = save;
      return false;
    }
    *max = *min;
    if (Eat(',')) {
      if (!number(max)) *max = -1;
    }
    if (!Eat('}')) {
      pos_ = save;
      return false;
    }
    return true;
  }

  StatusOr<int32_t> ParseGroup() {
    if (Eat('?')) {
      if (Eat(':')) {
      } else if (pos_ < p_.size() && (p_[pos_] == '=' || p_[pos_] == '!')) {
        return Error("lookahead is not supported");
      } else if (p_.substr(pos_, 2) == "<=" || p_.substr(pos_, 2) == "<!") {
        return Error("lookbehind is not supported");
      } else if (Eat('P') || pos_ < p_.size()) {
        if (!Eat('<')) return Error("unsupported group flag");
        while (pos_ < p_.size() && p_[pos_] != '>') ++pos_;
        if (!Eat('>')) return Error("unterminated group name");
      }
    }
    PAGELLM_ASSIGN_OR_RETURN(int32_t inner, ParseAlt());
    if (!Eat(')')) return Error("missing ')'");
    return inner;
  }

  StatusOr<int32_t> ParseAtom() {
    char c = p_[pos_++];
    switch (c) {
      case '(': return ParseGroup();
      case '[': {
        PAGELLM_ASSIGN_OR_RETURN(auto ranges, ParseClass());
        return Emit(ranges);
      }
      case '.': return Emit(NegateRanges({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}}));
      case '\\': {
        PAGELLM_ASSIGN_OR_RETURN(auto ranges, ParseEscape(/*in_class=*/false));
        return Emit(ranges);
      }
      case '*':
      case '+':
      case '?': return Error("nothing to repeat");
      default: {
        --pos_;
        uint32_t cp = DecodeUtf8(p_, &pos_);
        return Emit({{cp, cp}});
      }
    }
  }

  StatusOr<std::vector<CodepointRange>> ParseEscape(bool in_class) {
    if (pos_ >= p_.size()) return Error("trailing backslash");
    char c = p_[pos_++];
    if (auto shorthand = ShorthandClass(c)) return *shorthand;
    if (c >= '1' && c <= '9') return Error("backreferences are not supported");
    if (c == 'b' && in_class) return std::vector<CodepointRange>{{8, 8}};
    if (c == 'b' || c == 'B' || c == 'A' || c == 'Z' || c == 'z') return Error("word boundaries and \\A/\\Z are not supported");
    if (c == 'x' || c == 'u') {
      uint32_t cp = 0;
      int digits = c == 'x' ? 2 : 4;
      bool braced = c == 'u' && Eat('{');
      int n = 0;
      while (pos_ < p_.size() && isxdigit(static_cast<unsigned char>(p_[pos_])) && (braced || n < digits)) {
        cp = cp * 16 + std::stoi(std::string(1, p_[pos_++]), nullptr, 16);
        ++n;
      }
      if (braced && !Eat('}')) return Error("bad \\u{...} escape");
      if (n == 0 || (!braced && n != digits) || cp > 0x10FFFF) return Error("bad hex escape");
      return std::vector<CodepointRange>{{cp, cp}};
    }
    --pos_;
    uint32_t cp = DecodeUtf8(p_, &pos_);
    cp = SimpleEscape(cp);
    return std::vector<CodepointRange>{{cp, cp}};
  }

  StatusOr<std::vector<CodepointRange>> ParseClass() {
    bool negate = Eat('^');
    std::vector<CodepointRange> ranges;
    bool first = true;
    while (true) {
      if (pos_ >= p_.size()) return Error("missing ']'");
      if (p_[pos_] == ']' && !first) {
        ++pos_;
        break;
      }
      first = false;
      PAGELLM_ASSIGN_OR_RETURN(auto lo, ClassAtom());
      if (lo.size() == 1 && lo[0].first == lo[0].second && pos_ + 1 < p_.size() && p_[pos_] == '-' &&
          p_[pos_ + 1] != ']') {
        ++pos_;
        PAGELLM_ASSIGN_OR_RETURN(auto hi, ClassAtom());
        if (hi.size() != 1 || hi[0].first != hi[0].second || hi[0].first < lo[0].first) return Error("bad class range");
        ranges.push_back({lo[0].first, hi[0].first});
      } else {
        ranges.insert(ranges.end(), lo.begin(), lo.end());
      }
    }
    return negate ? NegateRanges(ranges) : NormalizeRanges(ranges);
  }

  StatusOr<std::vector<CodepointRange>> ClassAtom() {
    if (p_[pos_] == '\\') {
      ++pos_;
      return ParseEscape(/*in_class=*/true);
    }
    if (p_.substr(pos_, 2) == "[:") return Error("POSIX classes are not supported");
    uint32_t cp = DecodeUtf8(p_, &pos_);
    return std::vector<CodepointRange>{{cp, cp}};
  }

  Grammar& g_;
  std::string_view p_;
  const RegexOptions& o_;
  size_t pos_ = 0;
};

}  // namespace

StatusOr<int32_t> CompileRegex(Grammar& g, std::string_view pattern, const RegexOptions& options) {
  return RegexParser(g, pattern, options).Parse();
}

}  // namespace pagellm::grammar
