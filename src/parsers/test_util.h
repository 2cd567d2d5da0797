// Test helpers for the parsers: drive a ResponseParser with a given split of the text
// into deltas, rebuild the message from the deltas alone (as a streaming client
// would), and check that every split gives the non-streaming result.
//
//   ExpectSplitIndependent(opts, text);   // 1-byte, all 2- and 3-way, random splits
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "parsers/response_parser.h"

namespace pagellm::parsers::testing {

// Feeds text cut at `cuts` (ascending byte offsets), rebuilds the message from the
// emitted deltas, checks the delta invariants (id+name once per index, on its first
// delta; indices in order) and that it equals parser.message().
ParsedMessage StreamWithCuts(const ResponseParserOptions& opts, std::string_view text,
                             const std::vector<size_t>& cuts);

// Same message up to tool-call ids (which are random).
void ExpectSameMessage(const ParsedMessage& expected, const ParsedMessage& actual, const std::string& where);

// Parse(text) vs. streaming with: 1-byte deltas, every 2-way split, every 3-way split
// (texts up to `max_len_3way` bytes), and `num_random` random splits. Also checks that
// every tool call's arguments are valid JSON. Returns the non-streaming message.
ParsedMessage ExpectSplitIndependent(const ResponseParserOptions& opts, std::string_view text,
                                     size_t max_len_3way = 160, int num_random = 200);

ResponseParserOptions Options(ReasoningParserKind reasoning, ToolParserKind tools,
                              const char* tools_json = "[]", bool starts_in_reasoning = true);

// The arguments JSON text parsed (fails the test when invalid).
OrderedJson Args(const ToolCall& call);

}  // namespace pagellm::parsers::testing
