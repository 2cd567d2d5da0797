#include "grammar/grammar_ir.h"

#include <algorithm>
#include <functional>

#include <fmt/format.h>

#include "grammar/char_classes.h"

namespace pagellm::grammar {
namespace {

std::string EscapeForDisplay(uint32_t cp) {
  if (cp == '"' || cp == '\\' || cp == ']' || cp == '[' || cp == '-' || cp == '^') {
    return fmt::format("\\{}", static_cast<char>(cp));
  }
  if (cp < 0x20 || cp == 0x7F) return fmt::format("\\x{:02X}", cp);
  if (cp < 0x80) return std::string(1, static_cast<char>(cp));
  return cp <= 0xFFFF ? fmt::format("\\u{:04X}", cp) : fmt::format("\\U{:08X}", cp);
}

std::string QuoteLiteral(std::string_view bytes) {
  std::string s = "\"";
  for (unsigned char c : bytes) s += (c == '"' || c == '\\') ? fmt::format("\\{}", char(c))
                                   : (c < 0x20 ? fmt::format("\\x{:02X}", c) : std::string(1, char(c)));
  return s + "\"";
}

}  // namespace

int32_t Grammar::Push(Expr e) {
  exprs_.push_back(std::move(e));
  return static_cast<int32_t>(exprs_.size()) - 1;
}

int32_t Grammar::AddEmpty() { return Push(Expr{}); }

int32_t Grammar::AddLiteral(std::string_view bytes) {
  if (bytes.empty()) return AddEmpty();
  Expr e;
  e.kind = ExprKind::kLiteral;
  e.literal = std::string(bytes);
  return Push(std::move(e));
}

int32_t Grammar::AddClass(std::vector<CodepointRange> ranges, bool negate) {
  Expr e;
  e.kind = ExprKind::kClass;
  e.ranges = negate ? NegateRanges(std::move(ranges)) : NormalizeRanges(std::move(ranges));
  return Push(std::move(e));
}

int32_t Grammar::AddSeq(std::vector<int32_t> children) {
  if (children.empty()) return AddEmpty();
  if (children.size() == 1) return children[0];
  Expr e;
  e.kind = ExprKind::kSeq;
  e.children = std::move(children);
  return Push(std::move(e));
}

int32_t Grammar::AddAlt(std::vector<int32_t> children) {
  if (children.size() == 1) return children[0];
  Expr e;
  e.kind = ExprKind::kAlt;  // an empty alternation matches nothing
  e.children = std::move(children);
  return Push(std::move(e));
}

int32_t Grammar::AddRepeat(int32_t child, int32_t min, int32_t max) {
  if (min == 1 && max == 1) return child;
  Expr e;
  e.kind = ExprKind::kRepeat;
  e.children = {child};
  e.min = min;
  e.max = max;
  return Push(std::move(e));
}

int32_t Grammar::AddRef(int32_t rule) {
  Expr e;
  e.kind = ExprKind::kRef;
  e.rule = rule;
  return Push(std::move(e));
}

int32_t Grammar::AddTextWithout(std::vector<std::string> words) {
  Expr e;
  e.kind = ExprKind::kTextWithout;
  std::sort(words.begin(), words.end());
  words.erase(std::unique(words.begin(), words.end()), words.end());
  e.words = std::move(words);
  return Push(std::move(e));
}

int32_t Grammar::DeclareRule(std::string_view name) {
  int32_t id = FindRule(name);
  if (id >= 0) return id;
  rules_.push_back(Rule{std::string(name), -1});
  return static_cast<int32_t>(rules_.size()) - 1;
}

int32_t Grammar::AddRule(std::string_view name, int32_t expr) {
  int32_t id = DeclareRule(name);
  DefineRule(id, expr);
  return id;
}

std::string Grammar::UniqueName(std::string_view base) const {
  std::string name(base);
  for (int i = 1; FindRule(name) >= 0; ++i) name = fmt::format("{}-{}", base, i);
  return name;
}

int32_t Grammar::FindRule(std::string_view name) const {
  for (size_t i = 0; i < rules_.size(); ++i) {
    if (rules_[i].name == name) return static_cast<int32_t>(i);
  }
  return -1;
}

bool Grammar::Nullable(int32_t id) const {
  if (nullable_rule_.size() != rules_.size()) {
    // Least fixpoint over rules: start with "not nullable" and grow.
    nullable_rule_.assign(rules_.size(), 0);
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t r = 0; r < rules_.size(); ++r) {
        if (!nullable_rule_[r] && rules_[r].expr >= 0 && Nullable(rules_[r].expr)) {
          nullable_rule_[r] = 1;
          changed = true;
        }
      }
    }
  }
  const Expr& e = exprs_[id];
  switch (e.kind) {
    case ExprKind::kEmpty:
    case ExprKind::kTextWithout: return true;
    case ExprKind::kLiteral:
    case ExprKind::kClass: return false;
    case ExprKind::kSeq:
      return std::all_of(e.children.begin(), e.children.end(), [&](int32_t c) { return Nullable(c); });
    case ExprKind::kAlt:
      return std::any_of(e.children.begin(), e.children.end(), [&](int32_t c) { return Nullable(c); });
    case ExprKind::kRepeat: return e.min == 0 || Nullable(e.children[0]);
    case ExprKind::kRef: return nullable_rule_[e.rule] != 0;
  }
  return false;
}

Status Grammar::Validate() const {
  if (root_ < 0 || root_ >= num_rules()) return InvalidArgumentError("grammar has no root rule");
  for (const Rule& r : rules_) {
    if (r.expr < 0) return InvalidArgumentError(fmt::format("rule '{}' is used but not defined", r.name));
  }
  nullable_rule_.clear();
  // Rules reachable at the first position of each rule, then a cycle search.
  std::vector<std::vector<int32_t>> first(rules_.size());
  std::function<void(int32_t, std::vector<int32_t>&)> firsts = [&](int32_t id, std::vector<int32_t>& out) {
    const Expr& e = exprs_[id];
    if (e.kind == ExprKind::kRef) {
      out.push_back(e.rule);
    } else if (e.kind == ExprKind::kAlt) {
      for (int32_t c : e.children) firsts(c, out);
    } else if (e.kind == ExprKind::kSeq) {
      for (int32_t c : e.children) {
        firsts(c, out);
        if (!Nullable(c)) break;
      }
    } else if (e.kind == ExprKind::kRepeat && e.max != 0) {
      firsts(e.children[0], out);
    }
  };
  for (size_t r = 0; r < rules_.size(); ++r) firsts(rules_[r].expr, first[r]);
  std::vector<int8_t> color(rules_.size(), 0);  // 0 new, 1 on stack, 2 done
  std::function<int32_t(int32_t)> dfs = [&](int32_t r) -> int32_t {
    color[r] = 1;
    for (int32_t n : first[r]) {
      if (color[n] == 1) return n;
      if (color[n] == 0) {
        if (int32_t bad = dfs(n); bad >= 0) return bad;
      }
    }
    color[r] = 2;
    return -1;
  };
  for (size_t r = 0; r < rules_.size(); ++r) {
    if (color[r] != 0) continue;
    if (int32_t bad = dfs(static_cast<int32_t>(r)); bad >= 0) {
      return InvalidArgumentError(fmt::format("rule '{}' is left-recursive (not supported)", rules_[bad].name));
    }
  }
  return OkStatus();
}

std::string Grammar::ToString() const {
  std::function<std::string(int32_t)> show = [&](int32_t id) -> std::string {
    const Expr& e = exprs_[id];
    switch (e.kind) {
      case ExprKind::kEmpty: return "\"\"";
      case ExprKind::kLiteral: return QuoteLiteral(e.literal);
      case ExprKind::kClass: {
        std::string s = "[";
        for (auto [lo, hi] : e.ranges) {
          s += EscapeForDisplay(lo);
          if (hi != lo) s += "-" + EscapeForDisplay(hi);
        }
        return s + "]";
      }
      case ExprKind::kSeq:
      case ExprKind::kAlt: {
        std::string s = "(";
        for (size_t i = 0; i < e.children.size(); ++i) {
          if (i) s += e.kind == ExprKind::kSeq ? " " : " | ";
          s += show(e.children[i]);
        }
        return s + ")";
      }
      case ExprKind::kRepeat:
        return show(e.children[0]) + (e.max < 0 ? fmt::format("{{{},}}", e.min) : fmt::format("{{{},{}}}", e.min, e.max));
      case ExprKind::kRef: return rules_[e.rule].name;
      case ExprKind::kTextWithout: {
        std::string s = "text-without(";
        for (size_t i = 0; i < e.words.size(); ++i) s += (i ? ", " : "") + QuoteLiteral(e.words[i]);
        return s + ")";
      }
    }
    return "";
  };
  std::string out;
  for (const Rule& r : rules_) out += r.name + " ::= " + (r.expr < 0 ? "?" : show(r.expr)) + "\n";
  return out;
}

uint32_t DecodeUtf8(std::string_view s, size_t* pos) {
  auto b = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  size_t i = *pos;
  unsigned char c = b(i);
  int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
  if (len <= 1 || i + len > s.size()) {
    *pos = i + 1;
    return c;
  }
  uint32_t cp = c & (0xFF >> (len + 1));
  for (int k = 1; k < len; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) {
      *pos = i + 1;
      return c;
    }
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  *pos = i + len;
  return cp;
}

}  // namespace pagellm::grammar
