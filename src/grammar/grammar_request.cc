#include "grammar/grammar_request.h"

#include <fmt/format.h>

#include "common/json.h"
#include "grammar/gbnf_parser.h"
#include "grammar/json_schema.h"
#include "grammar/regex_parser.h"
#include "grammar/structural_tag.h"

namespace pagellm::grammar {

StatusOr<Grammar> BuildGrammar(const GrammarRequest& r) {
  switch (r.kind) {
    case GrammarKind::kJsonSchema: {
      OrderedJson schema = OrderedJson::parse(r.spec, nullptr, /*allow_exceptions=*/false);
      if (schema.is_discarded()) return InvalidArgumentError("the JSON schema is not valid JSON");
      return JsonSchemaToGrammar(schema, r.whitespace);
    }
    case GrammarKind::kJsonObject: return JsonObjectGrammar(r.whitespace);
    case GrammarKind::kRegex: {
      Grammar g;
      PAGELLM_ASSIGN_OR_RETURN(int32_t e, CompileRegex(g, r.spec, {}));
      g.SetRoot(g.AddRule("root", e));
      PAGELLM_RETURN_IF_ERROR(g.Validate());
      return g;
    }
    case GrammarKind::kChoice: {
      if (r.choice.empty()) return InvalidArgumentError("choice must list at least one string");
      Grammar g;
      std::vector<int32_t> alts;
      for (const std::string& c : r.choice) alts.push_back(g.AddLiteral(c));
      g.SetRoot(g.AddRule("root", g.AddAlt(std::move(alts))));
      return g;
    }
    case GrammarKind::kGbnf: return ParseGbnf(r.spec);
    case GrammarKind::kToolCalls: return ToolCallGrammar(r.spec, r.whitespace);
    case GrammarKind::kStructuralTag: return StructuralTagGrammar(r.spec, r.whitespace);
  }
  return InvalidArgumentError("unknown structured output kind");
}

StatusOr<std::shared_ptr<const CompiledGrammar>> GrammarCache::Get(const GrammarRequest& r) {
  std::string key = fmt::format("{}\x1f{}\x1f{}\x1f{}\x1f", static_cast<int>(r.kind), r.spec, r.whitespace.pattern,
                                r.whitespace.disable);
  for (const std::string& c : r.choice) key += c + '\x1e';
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = entries_.find(key); it != entries_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second.pos);
      return it->second.grammar;
    }
  }
  // Compile outside the lock; a racing duplicate compile is harmless.
  PAGELLM_ASSIGN_OR_RETURN(Grammar g, BuildGrammar(r));
  PAGELLM_ASSIGN_OR_RETURN(std::shared_ptr<const CompiledGrammar> compiled, CompileGrammar(g));
  std::lock_guard<std::mutex> lock(mu_);
  if (entries_.count(key) == 0) {
    lru_.push_front(key);
    entries_[key] = Entry{compiled, lru_.begin()};
    if (entries_.size() > capacity_) {
      entries_.erase(lru_.back());
      lru_.pop_back();
    }
  }
  return compiled;
}

}  // namespace pagellm::grammar
