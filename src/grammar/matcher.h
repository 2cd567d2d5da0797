// CompiledGrammar and Matcher: the per-request side of structured outputs.
//
//   PAGELLM_ASSIGN_OR_RETURN(auto g, CompileGrammar(std::move(grammar_ir)));
//   Matcher m(g, vocab);                     // vocab: a shared TokenVocab
//   m.FillMask(mask_words);                  // [vocab.num_words()], bit = allowed
//   ... sample a token t with the mask applied ...
//   m.AcceptToken(t);                        // false if t was not allowed
//   if (m.IsTerminated()) ...                // only EOS can follow
//   m.Rollback(2);                           // undo the last two tokens
//
// A token is allowed when its bytes lead somewhere in the grammar; EOS ids are
// allowed exactly where the grammar accepts (and are the only choice once it is
// complete). Masks are cached per automaton state, so a state seen before (the body
// of a string, say) costs a copy.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "grammar/automaton.h"
#include "grammar/grammar_ir.h"
#include "grammar/nfa.h"
#include "grammar/token_vocab.h"

namespace pagellm::grammar {

// What the matchers of one grammar over one vocabulary share: the lazily built
// automaton and the masks of the states seen so far, so the second request with a
// schema finds the states and masks the first one built. Guarded by `mu` (matchers
// may live on different threads).
struct MatcherShared {
  std::mutex mu;
  std::unique_ptr<Automaton> automaton;
  std::unordered_map<int32_t, std::vector<uint32_t>> mask_cache;
};

// The NFA is immutable once built; shared (shared_ptr) by every matcher of the grammar,
// which also share its MatcherShared per vocabulary.
struct CompiledGrammar {
  Nfa nfa;
  int32_t num_rules = 0;
  // The runtime matchers over `vocab` share; a fresh one once the automaton has grown
  // past a bound (matchers holding the old one keep it).
  std::shared_ptr<MatcherShared> SharedFor(const TokenVocab* vocab) const;

 private:
  mutable std::mutex shared_mu_;
  mutable std::vector<std::pair<const TokenVocab*, std::shared_ptr<MatcherShared>>> shared_;
};

StatusOr<std::shared_ptr<const CompiledGrammar>> CompileGrammar(const Grammar& grammar);

class Matcher {
 public:
  Matcher(std::shared_ptr<const CompiledGrammar> grammar, const TokenVocab* vocab);

  // Advances by one token. Returns false (and changes nothing) if it is not allowed.
  bool AcceptToken(int32_t token);
  // Advances by raw bytes (tests, forced prefixes). False and no change if rejected.
  bool AcceptBytes(std::string_view bytes);
  // Undoes the last `n` accepted tokens (n <= num_tokens()).
  void Rollback(int32_t n);
  int32_t num_tokens() const { return static_cast<int32_t>(history_.size()) - 1; }

  bool IsAccepting() const;
  // Accepting with nothing more allowed, or an EOS was accepted.
  bool IsTerminated();
  // Writes the allowed-token bitset: words[i >> 5] bit (i & 31) for token i.
  // `words` has vocab.num_words() entries.
  void FillMask(std::span<uint32_t> words);
  // The same mask computed by testing every token on its own (reference for tests).
  void FillMaskReference(std::span<uint32_t> words);

 private:
  static constexpr int32_t kEnded = -1;  // history entry after an accepted EOS
  void Walk(const TokenTrie& trie, int32_t start, std::span<uint32_t> words);
  // How many characters of free text `set` takes before text must end (the body of a
  // bounded string), capped at TokenVocab::kShortTextChars, or -1 when text is not free
  // there; see FillMask.
  int32_t FreeTextRun(int32_t set);
  // Below this the full walk is as cheap: it stops at depth run + 1 anyway.
  static constexpr int32_t kMinFreeTextRun = 4;
  int32_t Advance(int32_t set, std::string_view bytes);

  std::shared_ptr<const CompiledGrammar> grammar_;
  const TokenVocab* vocab_;
  std::shared_ptr<MatcherShared> shared_;
  Automaton* automaton_ = nullptr;  // shared_->automaton, used under shared_->mu
  std::vector<int32_t> history_;  // config set after each accepted token; [0] = start
  std::vector<int32_t> walk_states_;
};

}  // namespace pagellm::grammar
