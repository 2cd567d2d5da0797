#include "grammar/automaton.h"

#include <algorithm>

namespace pagellm::grammar {
namespace {

template <typename T>
std::string KeyOf(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

// UTF-8 decoder states for TextLoops: 0 = at a character boundary.
// kNext[state] lists (lo, hi, next state) for the bytes allowed there.
struct Utf8Edge {
  uint8_t lo, hi, next;
};
const std::vector<Utf8Edge> kUtf8[8] = {
    {{0x20, 0x21, 0}, {0x23, 0x5B, 0}, {0x5D, 0x7E, 0}, {0xC2, 0xDF, 1}, {0xE0, 0xE0, 3}, {0xE1, 0xEC, 2},
     {0xED, 0xED, 4}, {0xEE, 0xEF, 2}, {0xF0, 0xF0, 6}, {0xF1, 0xF3, 5}, {0xF4, 0xF4, 7}},
    {{0x80, 0xBF, 0}}, {{0x80, 0xBF, 1}}, {{0xA0, 0xBF, 1}}, {{0x80, 0x9F, 1}},
    {{0x80, 0xBF, 2}}, {{0x90, 0xBF, 2}}, {{0x80, 0x8F, 2}},
};

}  // namespace

Automaton::Automaton(const Nfa& nfa) : nfa_(nfa), stamp_(nfa.states.size(), 0) {
  dstates_.emplace_back();  // 0: the empty (dead) DFA state
  dtrans_.assign(256, 0);
  rule_start_dstate_.assign(nfa.rule_start.size(), -1);
  sets_.emplace_back();  // 0: the dead config set
  set_trans_.assign(256, 0);
  int32_t root = InternNode(RuleStart(nfa.root_rule), -1);
  start_ = InternSet({root});
  // Byte classes: bytes no edge range (and no UTF-8 range of TextNext) tells apart step
  // alike from every set, so TextNext steps one byte per class.
  std::vector<bool> starts(257, false);
  auto cut = [&](int lo, int hi) { starts[lo] = starts[hi + 1] = true; };
  for (const NfaState& st : nfa.states) {
    for (const ByteEdge& e : st.bytes) cut(e.lo, e.hi);
  }
  for (const auto& edges : kUtf8) {
    for (const Utf8Edge& e : edges) cut(e.lo, e.hi);
  }
  for (int b = 255, next = 256; b >= 0; --b) {
    next_class_[b] = static_cast<uint16_t>(next);
    if (starts[b]) next = b;
  }
}

std::vector<int32_t> Automaton::Closure(std::vector<int32_t> seeds) {
  if (++stamp_now_ == 0) {
    std::fill(stamp_.begin(), stamp_.end(), 0);
    stamp_now_ = 1;
  }
  std::vector<int32_t> out;
  while (!seeds.empty()) {
    int32_t s = seeds.back();
    seeds.pop_back();
    if (stamp_[s] == stamp_now_) continue;
    stamp_[s] = stamp_now_;
    out.push_back(s);
    for (int32_t e : nfa_.states[s].eps) seeds.push_back(e);
  }
  std::sort(out.begin(), out.end());
  return out;
}

int32_t Automaton::InternDState(std::vector<int32_t> closed) {
  if (closed.empty()) return 0;
  std::string key = KeyOf(closed);
  if (auto it = dstate_ids_.find(key); it != dstate_ids_.end()) return it->second;
  int32_t id = static_cast<int32_t>(dstates_.size());
  dstate_ids_.emplace(std::move(key), id);
  DState d;
  std::vector<std::pair<int32_t, int32_t>> calls;  // (rule, NFA target)
  for (int32_t s : closed) {
    d.accepting |= nfa_.states[s].final;
    for (const CallEdge& c : nfa_.states[s].calls) calls.push_back({c.rule, c.to});
  }
  std::sort(calls.begin(), calls.end());
  d.nfa = std::move(closed);
  dstates_.push_back(std::move(d));
  dtrans_.resize(dtrans_.size() + 256, -1);
  // One return state per called rule (its targets together), built after the push
  // since it may intern further states.
  std::vector<std::pair<int32_t, int32_t>> grouped;
  for (size_t i = 0; i < calls.size();) {
    std::vector<int32_t> targets;
    size_t j = i;
    for (; j < calls.size() && calls[j].first == calls[i].first; ++j) targets.push_back(calls[j].second);
    grouped.push_back({calls[i].first, InternDState(Closure(std::move(targets)))});
    i = j;
  }
  dstates_[id].calls = std::move(grouped);
  return id;
}

int32_t Automaton::DStep(int32_t d, uint8_t byte) {
  int32_t& slot = dtrans_[static_cast<size_t>(d) * 256 + byte];
  if (slot >= 0) return slot;
  std::vector<int32_t> next;
  for (int32_t s : dstates_[d].nfa) {
    for (const ByteEdge& e : nfa_.states[s].bytes) {
      if (e.lo <= byte && byte <= e.hi) next.push_back(e.to);
    }
  }
  int32_t t = InternDState(Closure(std::move(next)));
  dtrans_[static_cast<size_t>(d) * 256 + byte] = t;  // `slot` may dangle after resize
  return t;
}

int32_t Automaton::RuleStart(int32_t rule) {
  if (rule_start_dstate_[rule] < 0) rule_start_dstate_[rule] = InternDState(Closure({nfa_.rule_start[rule]}));
  return rule_start_dstate_[rule];
}

int32_t Automaton::InternNode(int32_t dstate, int32_t parent) {
  uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(dstate)) << 32) | static_cast<uint32_t>(parent);
  if (auto it = node_ids_.find(key); it != node_ids_.end()) return it->second;
  int32_t id = static_cast<int32_t>(nodes_.size());
  nodes_.push_back({dstate, parent});
  node_accepting_.push_back(-1);
  node_ids_.emplace(key, id);
  return id;
}

bool Automaton::NodeAccepting(int32_t node) {
  if (node_accepting_[node] < 0) {
    const Node& n = nodes_[node];
    node_accepting_[node] = dstates_[n.dstate].accepting && (n.parent < 0 || NodeAccepting(n.parent));
  }
  return node_accepting_[node] != 0;
}

int32_t Automaton::SingleNodeSet(int32_t node) {
  if (node >= static_cast<int32_t>(single_node_set_.size())) single_node_set_.resize(node + 1, -1);
  if (single_node_set_[node] < 0) single_node_set_[node] = InternSet({node});
  return single_node_set_[node];
}

int32_t Automaton::InternSet(std::vector<int32_t> nodes) {
  if (nodes.empty()) return 0;
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  std::string key = KeyOf(nodes);
  if (auto it = set_ids_.find(key); it != set_ids_.end()) return it->second;
  int32_t id = static_cast<int32_t>(sets_.size());
  set_ids_.emplace(std::move(key), id);
  ConfigSet c;
  for (int32_t n : nodes) c.accepting |= NodeAccepting(n);
  c.nodes = std::move(nodes);
  sets_.push_back(std::move(c));
  set_trans_.resize(set_trans_.size() + 256, -1);
  return id;
}

void Automaton::StepNode(int32_t node, uint8_t byte, bool fresh, int depth, std::vector<int32_t>* out) {
  if (depth > 256) return;  // only reachable by pathological chains of calls
  const int32_t d = nodes_[node].dstate;
  const int32_t parent = nodes_[node].parent;
  int32_t next = DStep(d, byte);
  if (next != 0) out->push_back(InternNode(next, parent));
  // Copy: interning below may grow dstates_.
  std::vector<std::pair<int32_t, int32_t>> calls = dstates_[d].calls;
  for (auto [rule, ret] : calls) {
    int32_t caller = InternNode(ret, parent);
    StepNode(InternNode(RuleStart(rule), caller), byte, /*fresh=*/true, depth + 1, out);
  }
  // A rule that just started and is nullable was already skipped by an eps edge.
  if (!fresh && parent >= 0 && dstates_[d].accepting) StepNode(parent, byte, false, depth + 1, out);
}

int32_t Automaton::SlowStep(int32_t set, uint8_t byte) {
  // Fast path, the common case of a grammar whose rules are all inlined: one node at
  // the bottom of the stack and no calls, so the step is the DFA's and the result is
  // that node's own single-node set (no vectors, no hashing of a set key).
  if (sets_[set].nodes.size() == 1) {
    const Node n = nodes_[sets_[set].nodes[0]];
    if (n.parent < 0 && dstates_[n.dstate].calls.empty()) {
      const int32_t next = DStep(n.dstate, byte);
      const int32_t t = next == 0 ? 0 : SingleNodeSet(InternNode(next, -1));
      set_trans_[static_cast<size_t>(set) * 256 + byte] = t;
      return t;
    }
  }
  std::vector<int32_t> out;
  std::vector<int32_t> nodes = sets_[set].nodes;
  for (int32_t n : nodes) StepNode(n, byte, false, 0, &out);
  int32_t t = InternSet(std::move(out));
  set_trans_[static_cast<size_t>(set) * 256 + byte] = t;
  return t;
}

int32_t Automaton::TextNext(int32_t set) {
  if (sets_[set].text_next != -2) return sets_[set].text_next;
  // Walk (config set, UTF-8 decoder state) pairs over every text byte sequence; a
  // character boundary records where the character led.
  std::vector<std::pair<int32_t, uint8_t>> todo = {{set, 0}}, seen;
  int32_t target = -2;  // none seen yet
  bool any_dead = false, mixed = false;
  while (!todo.empty() && !mixed) {
    auto [s, u] = todo.back();
    todo.pop_back();
    if (std::find(seen.begin(), seen.end(), std::make_pair(s, u)) != seen.end()) continue;
    seen.push_back({s, u});
    for (const Utf8Edge& e : kUtf8[u]) {
      for (int b = e.lo; b <= e.hi && !mixed; b = next_class_[b]) {
        const int32_t t = Step(s, static_cast<uint8_t>(b));
        if (t == 0) {
          any_dead = true;
        } else if (e.next != 0) {
          todo.push_back({t, e.next});
        } else if (target == -2) {
          target = t;
        } else if (t != target) {
          mixed = true;
        }
        // Both outcomes seen, or too many partial characters in flight to follow.
        if ((any_dead && target != -2) || seen.size() > 64) mixed = true;
      }
    }
  }
  const int32_t next = mixed ? kTextMixed : target == -2 ? kTextDead : target;
  sets_[set].text_next = next;
  return next;
}

bool Automaton::Terminated(int32_t set) {
  if (!Accepting(set)) return false;
  for (int b = 0; b < 256; ++b) {
    if (Step(set, static_cast<uint8_t>(b)) != 0) return false;
  }
  return true;
}

}  // namespace pagellm::grammar
