// Grammar IR: what every front end (regex, choice, JSON Schema, GBNF/EBNF) compiles to
// and what grammar/nfa.h turns into a byte-level automaton.
//
//   Grammar g;
//   int32_t digit = g.AddClass({{'0', '9'}});
//   int32_t num = g.AddRepeat(digit, 1, -1);            // [0-9]+
//   g.SetRoot(g.AddRule("root", g.AddSeq({g.AddLiteral("n="), num})));
//
// Expressions live in one arena (ids are indexes); rules are named expressions that
// other expressions reference by rule id (kRef), which is how recursion is written.
// Character classes hold Unicode code point ranges; the NFA encodes them as UTF-8.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace pagellm::grammar {

// Inclusive code point range.
using CodepointRange = std::pair<uint32_t, uint32_t>;

// kTextWithout: any byte string that contains none of `words` (free text between the
// tagged parts of a structural tag; built as an Aho-Corasick automaton, so it costs no
// recursion however long the text runs).
enum class ExprKind { kEmpty, kLiteral, kClass, kSeq, kAlt, kRepeat, kRef, kTextWithout };

struct Expr {
  ExprKind kind = ExprKind::kEmpty;
  std::string literal;                  // kLiteral: raw bytes
  std::vector<CodepointRange> ranges;   // kClass: sorted, disjoint, non-empty
  std::vector<int32_t> children;        // kSeq / kAlt; kRepeat has one child
  int32_t min = 0, max = -1;            // kRepeat: max -1 = unbounded
  int32_t rule = -1;                    // kRef
  std::vector<std::string> words;       // kTextWithout: non-empty byte strings
};

struct Rule {
  std::string name;
  int32_t expr = -1;  // -1 while declared but not yet defined
};

class Grammar {
 public:
  int32_t AddEmpty();
  int32_t AddLiteral(std::string_view bytes);
  // Normalizes (sorts, merges); `negate` complements over all scalar values.
  int32_t AddClass(std::vector<CodepointRange> ranges, bool negate = false);
  int32_t AddSeq(std::vector<int32_t> children);
  int32_t AddAlt(std::vector<int32_t> children);
  int32_t AddRepeat(int32_t child, int32_t min, int32_t max);
  int32_t AddOptional(int32_t child) { return AddRepeat(child, 0, 1); }
  int32_t AddRef(int32_t rule);
  // Any text containing none of `words` (each non-empty); matches the empty string.
  int32_t AddTextWithout(std::vector<std::string> words);

  // Declares a rule (or returns the existing id of that name) without a body.
  int32_t DeclareRule(std::string_view name);
  void DefineRule(int32_t rule, int32_t expr) { rules_[rule].expr = expr; }
  int32_t AddRule(std::string_view name, int32_t expr);
  // A fresh name "base", "base-1", ... not used by any rule yet.
  std::string UniqueName(std::string_view base) const;
  int32_t FindRule(std::string_view name) const;  // -1 if absent

  void SetRoot(int32_t rule) { root_ = rule; }
  int32_t root() const { return root_; }
  const Expr& expr(int32_t id) const { return exprs_[id]; }
  const Rule& rule(int32_t id) const { return rules_[id]; }
  int32_t num_rules() const { return static_cast<int32_t>(rules_.size()); }
  int32_t num_exprs() const { return static_cast<int32_t>(exprs_.size()); }

  // Every rule defined, root set, no left recursion (a rule reaching itself before
  // consuming a byte, which the matcher cannot run).
  Status Validate() const;
  // Whether `expr` can match the empty string.
  bool Nullable(int32_t expr) const;

  // GBNF-like text for debugging and tests.
  std::string ToString() const;

 private:
  int32_t Push(Expr e);
  std::vector<Expr> exprs_;
  std::vector<Rule> rules_;
  int32_t root_ = -1;
  mutable std::vector<int8_t> nullable_rule_;  // -1 unknown, 0/1; filled by Nullable
};

// Decodes one UTF-8 scalar at text[*pos] (advancing *pos); invalid bytes decode as
// themselves (so Latin-1 style input still round-trips).
uint32_t DecodeUtf8(std::string_view text, size_t* pos);

}  // namespace pagellm::grammar
