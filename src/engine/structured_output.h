// StructuredOutputs: the engine's side of constrained decoding. It compiles a request's
// StructuredOutputsParams (through a shared cache) and hands each sample a matcher over
// the model's vocabulary; engine_step.cc asks the matcher for a mask before sampling
// and advances it with the sampled token.
//
//   StructuredOutputs so(tokenizer, eos_ids, /*num_rows=*/151936);
//   PAGELLM_RETURN_IF_ERROR(so.Validate(*params.structured_outputs));   // 400 on error
//   PAGELLM_ASSIGN_OR_RETURN(auto matcher, so.NewMatcher(*params.structured_outputs));
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "common/status.h"
#include "grammar/grammar_request.h"
#include "grammar/matcher.h"
#include "grammar/token_vocab.h"
#include "sched/structured_outputs_params.h"
#include "tokenizer/tokenizer.h"

namespace pagellm {

grammar::GrammarRequest ToGrammarRequest(const StructuredOutputsParams& p);

class StructuredOutputs {
 public:
  StructuredOutputs(const tokenizer::Tokenizer& tok, std::vector<int32_t> eos_ids, int32_t num_rows)
      : tok_(tok), eos_ids_(std::move(eos_ids)), num_rows_(num_rows) {}

  // Compiles (or finds) the grammar; the error names what is unsupported.
  Status Validate(const StructuredOutputsParams& p);
  StatusOr<std::unique_ptr<grammar::Matcher>> NewMatcher(const StructuredOutputsParams& p);
  int32_t num_mask_words() { return Vocab().num_words(); }

 private:
  // Built on first use (sorting 150k token strings takes ~0.1 s; unconstrained
  // deployments never pay it).
  const grammar::TokenVocab& Vocab();

  const tokenizer::Tokenizer& tok_;
  std::vector<int32_t> eos_ids_;
  int32_t num_rows_;
  grammar::GrammarCache cache_;
  std::once_flag vocab_once_;
  std::unique_ptr<grammar::TokenVocab> vocab_;
};

}  // namespace pagellm
