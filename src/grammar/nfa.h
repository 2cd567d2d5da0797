// Nfa: a grammar compiled to byte-level automata, one per rule that is not inlined.
//
//   PAGELLM_ASSIGN_OR_RETURN(Nfa nfa, BuildNfa(grammar));
//   int32_t s = nfa.rule_start[nfa.root_rule];   // a state; follow bytes/eps/calls
//
// Thompson construction over UTF-8 bytes. A reference to a rule that is not recursive
// and not large is inlined (copied), so a typical JSON Schema becomes one automaton
// with no calls at all; recursive or large rules stay separate and are reached by
// call edges, which the matcher runs with a stack (grammar/matcher.h).
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "grammar/grammar_ir.h"

namespace pagellm::grammar {

struct ByteEdge {
  uint8_t lo, hi;  // inclusive byte range
  int32_t to;
};

struct CallEdge {
  int32_t rule;  // run this rule's automaton, then continue at `to`
  int32_t to;
};

struct NfaState {
  std::vector<ByteEdge> bytes;
  std::vector<int32_t> eps;
  std::vector<CallEdge> calls;
  bool final = false;  // the end of its rule
};

struct Nfa {
  std::vector<NfaState> states;
  std::vector<int32_t> rule_start;  // [num_rules]; -1 for rules that are always inlined
  int32_t root_rule = -1;
};

// Fails for an invalid grammar (Grammar::Validate) or one above `max_states`.
StatusOr<Nfa> BuildNfa(const Grammar& grammar, int32_t max_states = 2'000'000);

// UTF-8 byte-range sequences covering exactly the scalar values in [lo, hi]
// (surrogates excluded). Each inner vector is one sequence of (lo, hi) byte ranges.
std::vector<std::vector<std::pair<uint8_t, uint8_t>>> Utf8Sequences(uint32_t lo, uint32_t hi);

}  // namespace pagellm::grammar
