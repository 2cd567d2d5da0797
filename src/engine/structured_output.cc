#include "engine/structured_output.h"

namespace pagellm {

grammar::GrammarRequest ToGrammarRequest(const StructuredOutputsParams& p) {
  grammar::GrammarRequest r;
  switch (p.kind) {
    case StructuredOutputKind::kJson: r.kind = grammar::GrammarKind::kJsonSchema; break;
    case StructuredOutputKind::kJsonObject: r.kind = grammar::GrammarKind::kJsonObject; break;
    case StructuredOutputKind::kRegex: r.kind = grammar::GrammarKind::kRegex; break;
    case StructuredOutputKind::kChoice: r.kind = grammar::GrammarKind::kChoice; break;
    case StructuredOutputKind::kGrammar: r.kind = grammar::GrammarKind::kGbnf; break;
    case StructuredOutputKind::kToolCalls: r.kind = grammar::GrammarKind::kToolCalls; break;
    case StructuredOutputKind::kStructuralTag: r.kind = grammar::GrammarKind::kStructuralTag; break;
  }
  r.spec = p.spec;
  r.choice = p.choice;
  r.whitespace.pattern = p.whitespace_pattern;
  r.whitespace.disable = p.disable_any_whitespace;
  return r;
}

Status StructuredOutputs::Validate(const StructuredOutputsParams& p) {
  auto compiled = cache_.Get(ToGrammarRequest(p));
  return compiled.ok() ? OkStatus() : compiled.status();
}

StatusOr<std::unique_ptr<grammar::Matcher>> StructuredOutputs::NewMatcher(const StructuredOutputsParams& p) {
  PAGELLM_ASSIGN_OR_RETURN(std::shared_ptr<const grammar::CompiledGrammar> compiled, cache_.Get(ToGrammarRequest(p)));
  return std::make_unique<grammar::Matcher>(std::move(compiled), &Vocab());
}

const grammar::TokenVocab& StructuredOutputs::Vocab() {
  std::call_once(vocab_once_, [&] { vocab_ = grammar::TokenVocab::FromTokenizer(tok_, eos_ids_, num_rows_); });
  return *vocab_;
}

}  // namespace pagellm
