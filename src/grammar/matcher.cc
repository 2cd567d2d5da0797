#include "grammar/matcher.h"

#include <algorithm>

namespace pagellm::grammar {
namespace {

constexpr size_t kMaxCachedMasks = 256;   // ~4.9 MB at Qwen3's vocabulary, per grammar
constexpr int32_t kMaxSharedSets = 200'000;  // config sets before matchers start a fresh automaton

}  // namespace

StatusOr<std::shared_ptr<const CompiledGrammar>> CompileGrammar(const Grammar& grammar) {
  PAGELLM_ASSIGN_OR_RETURN(Nfa nfa, BuildNfa(grammar));
  auto g = std::make_shared<CompiledGrammar>();
  g->nfa = std::move(nfa);
  g->num_rules = grammar.num_rules();
  return std::shared_ptr<const CompiledGrammar>(std::move(g));
}

std::shared_ptr<MatcherShared> CompiledGrammar::SharedFor(const TokenVocab* vocab) const {
  std::lock_guard<std::mutex> lock(shared_mu_);
  for (const auto& [v, shared] : shared_) {
    if (v != vocab) continue;
    bool small;
    {
      std::lock_guard<std::mutex> inner(shared->mu);
      small = shared->automaton->num_sets() <= kMaxSharedSets;
    }
    if (small) return shared;
  }
  // Grown too large (or none yet): matchers holding the old one keep it.
  std::erase_if(shared_, [&](const auto& e) { return e.first == vocab; });
  auto fresh = std::make_shared<MatcherShared>();
  fresh->automaton = std::make_unique<Automaton>(nfa);
  shared_.push_back({vocab, fresh});
  return fresh;
}

Matcher::Matcher(std::shared_ptr<const CompiledGrammar> grammar, const TokenVocab* vocab)
    : grammar_(std::move(grammar)), vocab_(vocab), shared_(grammar_->SharedFor(vocab)), automaton_(shared_->automaton.get()) {
  history_.push_back(automaton_->start());
  walk_states_.assign(std::max(vocab_->all().max_depth, 1) + 1, 0);
}

int32_t Matcher::Advance(int32_t set, std::string_view bytes) {
  for (char c : bytes) {
    if (set == 0) break;
    set = automaton_->Step(set, static_cast<uint8_t>(c));
  }
  return set;
}

bool Matcher::AcceptToken(int32_t token) {
  std::lock_guard<std::mutex> lock(shared_->mu);
  int32_t cur = history_.back();
  if (cur == kEnded || token < 0 || token >= vocab_->num_rows()) return false;
  if (vocab_->is_eos(token)) {
    if (!automaton_->Accepting(cur)) return false;
    history_.push_back(kEnded);
    return true;
  }
  if (vocab_->is_special(token) || vocab_->bytes(token).empty()) return false;
  int32_t next = Advance(cur, vocab_->bytes(token));
  if (next == 0) return false;
  history_.push_back(next);
  return true;
}

bool Matcher::AcceptBytes(std::string_view bytes) {
  if (history_.back() == kEnded) return false;
  std::lock_guard<std::mutex> lock(shared_->mu);
  int32_t next = Advance(history_.back(), bytes);
  if (next == 0) return false;
  history_.push_back(next);
  return true;
}

void Matcher::Rollback(int32_t n) {
  n = std::clamp(n, 0, num_tokens());
  history_.resize(history_.size() - n);
}

bool Matcher::IsAccepting() const {
  int32_t cur = history_.back();
  if (cur == kEnded) return true;
  std::lock_guard<std::mutex> lock(shared_->mu);
  return automaton_->Accepting(cur);
}

bool Matcher::IsTerminated() {
  int32_t cur = history_.back();
  if (cur == kEnded) return true;
  std::lock_guard<std::mutex> lock(shared_->mu);
  return automaton_->Terminated(cur);
}

void Matcher::Walk(const TokenTrie& trie, int32_t start, std::span<uint32_t> words) {
  const TrieNode* nodes = trie.nodes.data();
  const uint32_t n = static_cast<uint32_t>(trie.nodes.size());
  int32_t* st = walk_states_.data();
  st[0] = start;
  uint32_t i = 1;
  while (i < n) {
    const TrieNode& nd = nodes[i];
    int32_t s = st[nd.depth - 1];
    int32_t t = automaton_->table()[static_cast<size_t>(s) * 256 + nd.byte];
    if (t < 0) t = automaton_->SlowStep(s, nd.byte);
    if (t == 0) {
      i = nd.skip;
      continue;
    }
    st[nd.depth] = t;
    if (nd.token >= 0) words[nd.token >> 5] |= 1u << (nd.token & 31);
    ++i;
  }
  for (auto [in_trie, dup] : trie.dups) {
    if (words[in_trie >> 5] >> (in_trie & 31) & 1) words[dup >> 5] |= 1u << (dup & 31);
  }
}

int32_t Matcher::FreeTextRun(int32_t set) {
  // Follow the chain of sets every text character leads to. A text token of n characters
  // is allowed iff its n steps stay alive, so when the chain ends (every text character
  // rejected) after `run` sets, exactly the text tokens of at most `run` characters are.
  // Followed for kShortTextChars sets at most (each is a TextNext): a longer run allows
  // every short text token and the long ones are walked. Characters that go different
  // ways return -1.
  int32_t s = set;
  for (int32_t run = 0; run < TokenVocab::kShortTextChars; ++run) {
    const int32_t next = automaton_->TextNext(s);
    if (next == Automaton::kTextDead) return run;
    if (next == Automaton::kTextMixed) return -1;
    s = next;
  }
  return TokenVocab::kShortTextChars;
}

void Matcher::FillMask(std::span<uint32_t> words) {
  std::fill(words.begin(), words.end(), 0);
  int32_t cur = history_.back();
  if (cur == kEnded) return;
  std::lock_guard<std::mutex> lock(shared_->mu);
  auto& mask_cache = shared_->mask_cache;
  if (auto it = mask_cache.find(cur); it != mask_cache.end()) {
    std::copy(it->second.begin(), it->second.end(), words.begin());
    return;
  }
  if (automaton_->TextLoops(cur)) {
    std::span<const uint32_t> text = vocab_->text_mask();
    std::copy(text.begin(), text.end(), words.begin());
    Walk(vocab_->non_text(), cur, words);
  } else if (int32_t run = FreeTextRun(cur); run >= kMinFreeTextRun) {
    vocab_->ShortTextTokens(run, words);
    if (run >= TokenVocab::kShortTextChars) Walk(vocab_->long_text(), cur, words);
    Walk(vocab_->non_text(), cur, words);
  } else {
    Walk(vocab_->all(), cur, words);
  }
  if (automaton_->Accepting(cur)) {
    for (int32_t e : vocab_->eos_ids()) {
      if (e >= 0 && e < vocab_->num_rows()) words[e >> 5] |= 1u << (e & 31);
    }
  }
  if (mask_cache.size() >= kMaxCachedMasks) mask_cache.clear();
  mask_cache.emplace(cur, std::vector<uint32_t>(words.begin(), words.end()));
}

void Matcher::FillMaskReference(std::span<uint32_t> words) {
  std::fill(words.begin(), words.end(), 0);
  int32_t cur = history_.back();
  if (cur == kEnded) return;
  std::lock_guard<std::mutex> lock(shared_->mu);
  for (int32_t id = 0; id < vocab_->num_rows(); ++id) {
    bool ok;
    if (vocab_->is_eos(id)) {
      ok = automaton_->Accepting(cur);
    } else if (id >= vocab_->num_tokens() || vocab_->is_special(id) || vocab_->bytes(id).empty()) {
      ok = false;
    } else {
      ok = Advance(cur, vocab_->bytes(id)) != 0;
    }
    if (ok) words[id >> 5] |= 1u << (id & 31);
  }
}

}  // namespace pagellm::grammar
