#include "grammar/nfa.h"

#include <algorithm>
#include <functional>

#include <fmt/format.h>

namespace pagellm::grammar {
namespace {

using Seq = std::vector<std::pair<uint8_t, uint8_t>>;

void EncodeFixed(uint32_t cp, int n, uint8_t* out) {
  static const uint8_t kLead[5] = {0, 0, 0xC0, 0xE0, 0xF0};
  for (int i = n - 1; i > 0; --i) {
    out[i] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
    cp >>= 6;
  }
  out[0] = static_cast<uint8_t>(kLead[n] | cp);
}

// [lo, hi] with both ends of the same encoded length n.
void SplitSameLength(uint32_t lo, uint32_t hi, int n, std::vector<Seq>* out) {
  for (int i = 1; i < n; ++i) {
    uint32_t m = (1u << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        SplitSameLength(lo, lo | m, n, out);
        SplitSameLength((lo | m) + 1, hi, n, out);
        return;
      }
      if ((hi & m) != m) {
        SplitSameLength(lo, (hi & ~m) - 1, n, out);
        SplitSameLength(hi & ~m, hi, n, out);
        return;
      }
    }
  }
  uint8_t a[4], b[4];
  EncodeFixed(lo, n, a);
  EncodeFixed(hi, n, b);
  Seq s;
  for (int i = 0; i < n; ++i) s.push_back({a[i], b[i]});
  out->push_back(std::move(s));
}

class Builder {
 public:
  Builder(const Grammar& g, int32_t max_states) : g_(g), max_states_(max_states) {}

  StatusOr<Nfa> Build() {
    PAGELLM_RETURN_IF_ERROR(g_.Validate());
    ChooseInlining();
    nfa_.root_rule = g_.root();
    nfa_.rule_start.assign(g_.num_rules(), -1);
    // Called rules get their own automaton; the root always does.
    inline_[g_.root()] = false;
    for (int32_t r = 0; r < g_.num_rules(); ++r) {
      if (!inline_[r]) nfa_.rule_start[r] = NewState();
    }
    for (int32_t r = 0; r < g_.num_rules(); ++r) {
      if (inline_[r]) continue;
      int32_t end = Emit(g_.rule(r).expr, nfa_.rule_start[r]);
      if (too_big_) break;
      nfa_.states[end].final = true;
    }
    if (too_big_) {
      return InvalidArgumentError(fmt::format("grammar too large (more than {} automaton states)", max_states_));
    }
    return std::move(nfa_);
  }

 private:
  static constexpr int64_t kInlineLimit = 3000;  // states; larger rules are called

  void ChooseInlining() {
    int32_t n = g_.num_rules();
    std::vector<std::vector<int32_t>> refs(n);
    for (int32_t r = 0; r < n; ++r) CollectRefs(g_.rule(r).expr, &refs[r]);
    inline_.assign(n, true);
    for (int32_t r = 0; r < n; ++r) {  // recursive: r reaches itself
      std::vector<int8_t> seen(n, 0);
      std::vector<int32_t> todo = refs[r];
      while (!todo.empty() && inline_[r]) {
        int32_t x = todo.back();
        todo.pop_back();
        if (x == r) inline_[r] = false;
        if (seen[x]) continue;
        seen[x] = 1;
        todo.insert(todo.end(), refs[x].begin(), refs[x].end());
      }
    }
    size_memo_.assign(n, -1);
    for (int32_t r = 0; r < n; ++r) {
      if (inline_[r] && RuleSize(r) > kInlineLimit) inline_[r] = false;
    }
  }

  void CollectRefs(int32_t id, std::vector<int32_t>* out) const {
    const Expr& e = g_.expr(id);
    if (e.kind == ExprKind::kRef) out->push_back(e.rule);
    for (int32_t c : e.children) CollectRefs(c, out);
  }

  int64_t RuleSize(int32_t r) {
    if (size_memo_[r] < 0) size_memo_[r] = ExprSize(g_.rule(r).expr);
    return size_memo_[r];
  }

  int64_t ExprSize(int32_t id) {
    const Expr& e = g_.expr(id);
    int64_t s = 1;
    switch (e.kind) {
      case ExprKind::kEmpty: return 1;
      case ExprKind::kLiteral: return static_cast<int64_t>(e.literal.size()) + 1;
      case ExprKind::kClass: return 2 + 3 * static_cast<int64_t>(e.ranges.size());
      case ExprKind::kSeq:
      case ExprKind::kAlt:
        for (int32_t c : e.children) s += ExprSize(c);
        return std::min<int64_t>(s, 1 << 30);
      case ExprKind::kRepeat:
        return std::min<int64_t>(2 + ExprSize(e.children[0]) * std::max(1, std::max(e.min, e.max)), 1 << 30);
      case ExprKind::kRef: return inline_[e.rule] ? RuleSize(e.rule) : 2;
      case ExprKind::kTextWithout:
        for (const std::string& w : e.words) s += 2 * static_cast<int64_t>(w.size());
        return s + 2;
    }
    return s;
  }

  int32_t NewState() {
    if (static_cast<int32_t>(nfa_.states.size()) >= max_states_) {
      too_big_ = true;
      return 0;
    }
    nfa_.states.emplace_back();
    return static_cast<int32_t>(nfa_.states.size()) - 1;
  }

  void Eps(int32_t a, int32_t b) { nfa_.states[a].eps.push_back(b); }

  // Builds `id` starting at state `from`; returns its end state.
  int32_t Emit(int32_t id, int32_t from) {
    if (too_big_) return from;
    const Expr& e = g_.expr(id);
    switch (e.kind) {
      case ExprKind::kEmpty: return from;
      case ExprKind::kLiteral: {
        int32_t cur = from;
        for (unsigned char c : e.literal) {
          int32_t next = NewState();
          if (too_big_) return from;
          nfa_.states[cur].bytes.push_back({c, c, next});
          cur = next;
        }
        return cur;
      }
      case ExprKind::kClass: return EmitClass(e, from);
      case ExprKind::kSeq: {
        int32_t cur = from;
        for (int32_t c : e.children) cur = Emit(c, cur);
        return cur;
      }
      case ExprKind::kAlt: {
        int32_t end = NewState();
        for (int32_t c : e.children) {
          int32_t s = NewState();
          if (too_big_) return from;
          Eps(from, s);
          Eps(Emit(c, s), end);
        }
        return end;
      }
      case ExprKind::kRepeat: return EmitRepeat(e, from);
      case ExprKind::kTextWithout: return EmitTextWithout(e.words, from);
      case ExprKind::kRef: {
        if (inline_[e.rule]) return Emit(g_.rule(e.rule).expr, from);
        int32_t end = NewState();
        if (too_big_) return from;
        nfa_.states[from].calls.push_back({e.rule, end});
        if (g_.Nullable(g_.rule(e.rule).expr)) Eps(from, end);
        return end;
      }
    }
    return from;
  }

  int32_t EmitClass(const Expr& e, int32_t from) {
    int32_t end = NewState();
    for (auto [lo, hi] : e.ranges) {
      for (const Seq& seq : Utf8Sequences(lo, hi)) {
        int32_t cur = from;
        for (size_t i = 0; i < seq.size(); ++i) {
          int32_t next = i + 1 == seq.size() ? end : NewState();
          if (too_big_) return from;
          nfa_.states[cur].bytes.push_back({seq[i].first, seq[i].second, next});
          cur = next;
        }
      }
    }
    return end;
  }

  // Aho-Corasick over the words' bytes: one NFA state per trie node that does not end
  // a word (or have one as a suffix); a byte that would complete a word has no edge.
  // Every state may stop (eps to the end).
  int32_t EmitTextWithout(const std::vector<std::string>& words, int32_t from) {
    struct Node {
      int32_t next[256];
      int32_t fail = 0;
      bool bad = false;  // a word ends here, or at a suffix
    };
    std::vector<Node> trie(1);
    std::fill(std::begin(trie[0].next), std::end(trie[0].next), -1);
    for (const std::string& w : words) {
      int32_t cur = 0;
      for (unsigned char c : w) {
        if (trie[cur].next[c] < 0) {
          trie[cur].next[c] = static_cast<int32_t>(trie.size());
          trie.emplace_back();
          std::fill(std::begin(trie.back().next), std::end(trie.back().next), -1);
        }
        cur = trie[cur].next[c];
      }
      trie[cur].bad = true;
    }
    // Breadth-first: fail links and full goto tables.
    std::vector<int32_t> order = {0};
    for (int c = 0; c < 256; ++c) {
      int32_t t = trie[0].next[c];
      if (t < 0) {
        trie[0].next[c] = 0;
      } else {
        trie[t].fail = 0;
        order.push_back(t);
      }
    }
    for (size_t i = 1; i < order.size(); ++i) {
      const int32_t u = order[i];
      trie[u].bad = trie[u].bad || trie[trie[u].fail].bad;
      for (int c = 0; c < 256; ++c) {
        int32_t t = trie[u].next[c];
        if (t < 0) {
          trie[u].next[c] = trie[trie[u].fail].next[c];
        } else {
          trie[t].fail = trie[trie[u].fail].next[c];
          order.push_back(t);
        }
      }
    }
    std::vector<int32_t> state(trie.size(), -1);
    for (size_t u = 0; u < trie.size(); ++u) {
      if (!trie[u].bad) state[u] = NewState();
    }
    const int32_t end = NewState();
    if (too_big_) return from;
    Eps(from, state[0]);
    for (size_t u = 0; u < trie.size(); ++u) {
      if (trie[u].bad) continue;
      NfaState& st = nfa_.states[state[u]];
      st.eps.push_back(end);
      for (int lo = 0; lo < 256;) {
        const int32_t to = trie[u].next[lo];
        int hi = lo;
        while (hi + 1 < 256 && trie[u].next[hi + 1] == to) ++hi;
        if (!trie[to].bad) st.bytes.push_back({static_cast<uint8_t>(lo), static_cast<uint8_t>(hi), state[to]});
        lo = hi + 1;
      }
    }
    return end;
  }

  int32_t EmitRepeat(const Expr& e, int32_t from) {
    int32_t child = e.children[0];
    int32_t cur = from;
    for (int32_t i = 0; i < e.min && !too_big_; ++i) cur = Emit(child, cur);
    if (e.max < 0) {  // star: loop state L, body from L back to L
      int32_t loop = NewState();
      int32_t body = NewState();
      if (too_big_) return from;
      Eps(cur, loop);
      Eps(loop, body);
      Eps(Emit(child, body), loop);
      return loop;
    }
    if (e.max == e.min) return cur;
    int32_t end = NewState();
    for (int32_t i = e.min; i < e.max && !too_big_; ++i) {
      Eps(cur, end);
      cur = Emit(child, cur);
    }
    if (!too_big_) Eps(cur, end);
    return end;
  }

  const Grammar& g_;
  int32_t max_states_;
  bool too_big_ = false;
  Nfa nfa_;
  std::vector<bool> inline_;
  std::vector<int64_t> size_memo_;
};

}  // namespace

std::vector<Seq> Utf8Sequences(uint32_t lo, uint32_t hi) {
  std::vector<Seq> out;
  auto add = [&](uint32_t a, uint32_t b) {
    static const uint32_t kMax[4] = {0x7F, 0x7FF, 0xFFFF, 0x10FFFF};
    for (int n = 1; n <= 4 && a <= b; ++n) {
      uint32_t top = std::min(b, kMax[n - 1]);
      if (a <= top) {
        SplitSameLength(a, top, n, &out);
        a = top + 1;
      }
    }
  };
  hi = std::min<uint32_t>(hi, 0x10FFFF);
  if (lo > hi) return out;
  if (hi < 0xD800 || lo > 0xDFFF) {
    add(lo, hi);
  } else {
    if (lo < 0xD800) add(lo, 0xD7FF);
    if (hi > 0xDFFF) add(0xE000, hi);
  }
  return out;
}

StatusOr<Nfa> BuildNfa(const Grammar& grammar, int32_t max_states) {
  return Builder(grammar, max_states).Build();
}

}  // namespace pagellm::grammar
