// Closest-name suggestion for mistyped command-line flags ("did you mean ...?"),
// by Damerau-Levenshtein (optimal string alignment) distance.
//
//   ClosestName("--max-model-length", {"--max-model-len", "--port"})  // "--max-model-len"
//
// Returns "" when nothing is close enough: the distance must be at most
// max(2, length/3) of the typed name, so unrelated words get no suggestion.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pagellm::server {

int EditDistance(std::string_view a, std::string_view b);
std::string ClosestName(std::string_view typed, const std::vector<std::string>& candidates);

}  // namespace pagellm::server
