// Automaton: the lazily built deterministic view of a compiled grammar that the
// matcher and the mask walk step through, one byte at a time.
//
//   Automaton a(nfa);
//   int32_t s = a.start();
//   s = a.Step(s, '{');              // 0 = no way to continue (dead)
//   bool done = a.Accepting(s);
//
// Three layers, each interned and built on first use:
//   DFA states: sets of NFA states of one rule (subset construction, eps-closed);
//   stack nodes: (DFA state, parent node), a persistent call stack;
//   config sets: sorted sets of stack nodes, the state of the whole pushdown machine.
// Step() on a config set is a table lookup once computed ([sets x 256]), so the mask
// walk over the token trie costs one load per trie node in the common case. A grammar
// whose rules are all inlined never pushes: its config sets are single nodes.
// Not thread-safe (caches fill as it runs): matchers share one per grammar and vocabulary
// and use it under MatcherShared::mu (matcher.h).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/nfa.h"

namespace pagellm::grammar {

class Automaton {
 public:
  explicit Automaton(const Nfa& nfa);

  int32_t start() const { return start_; }
  int32_t Step(int32_t set, uint8_t byte) {
    int32_t t = set_trans_[static_cast<size_t>(set) * 256 + byte];
    return t >= 0 ? t : SlowStep(set, byte);
  }
  // Pointer into the transition table; invalidated by any call that creates sets.
  const int32_t* table() const { return set_trans_.data(); }
  int32_t SlowStep(int32_t set, uint8_t byte);
  bool Accepting(int32_t set) const { return sets_[set].accepting; }
  // Where every complete text character (see IsTextToken) leads from `set`: the one set
  // they all reach, kTextDead when every one of them is rejected, kTextMixed otherwise
  // (different sets, or some rejected). Memoized per set.
  static constexpr int32_t kTextDead = 0;
  static constexpr int32_t kTextMixed = -1;
  int32_t TextNext(int32_t set);
  // Whether every complete text character leads from `set` back to it (a JSON string body).
  bool TextLoops(int32_t set) { return TextNext(set) == set; }
  // Accepting and no byte can follow.
  bool Terminated(int32_t set);
  int32_t num_sets() const { return static_cast<int32_t>(sets_.size()); }

 private:
  struct DState {
    std::vector<int32_t> nfa;                        // sorted
    std::vector<std::pair<int32_t, int32_t>> calls;  // (rule, DFA state to return to)
    bool accepting = false;
  };
  struct Node {
    int32_t dstate;
    int32_t parent;  // -1 at the bottom
  };
  struct ConfigSet {
    std::vector<int32_t> nodes;  // sorted
    bool accepting = false;
    int32_t text_next = -2;  // TextNext(), -2 unknown
  };

  int32_t InternDState(std::vector<int32_t> closed);
  std::vector<int32_t> Closure(std::vector<int32_t> seeds);
  int32_t DStep(int32_t d, uint8_t byte);
  int32_t RuleStart(int32_t rule);
  int32_t InternNode(int32_t dstate, int32_t parent);
  int32_t InternSet(std::vector<int32_t> nodes);
  int32_t SingleNodeSet(int32_t node);  // InternSet({node}), memoized by node
  bool NodeAccepting(int32_t node);
  void StepNode(int32_t node, uint8_t byte, bool fresh, int depth, std::vector<int32_t>* out);

  const Nfa& nfa_;
  std::vector<DState> dstates_;
  std::unordered_map<std::string, int32_t> dstate_ids_;
  std::vector<int32_t> dtrans_;  // [dstates x 256], -1 unknown, 0 dead
  std::vector<int32_t> rule_start_dstate_;
  std::vector<Node> nodes_;
  std::vector<int8_t> node_accepting_;
  std::unordered_map<uint64_t, int32_t> node_ids_;
  std::vector<ConfigSet> sets_;
  std::unordered_map<std::string, int32_t> set_ids_;
  std::vector<int32_t> set_trans_;  // [sets x 256], -1 unknown, 0 dead
  std::vector<int32_t> single_node_set_;  // [nodes] -> set id of {node}, -1 unknown
  std::vector<uint32_t> stamp_;     // closure visit marks, [nfa states]
  uint16_t next_class_[256];        // the first byte after b of another byte class (or 256)
  uint32_t stamp_now_ = 0;
  int32_t start_ = 0;
};

}  // namespace pagellm::grammar
