// Typed reads of quantization_config keys, shared by the Hugging Face quantization parsers
// (hf_quant_config.cc, hf_compressed_tensors_config.cc, hf_ascend_config.cc). A key that is
// absent or null reads as std::nullopt; a key of the wrong JSON type is InvalidArgument
// naming `where` and the key, so a typo in a checkpoint's config never reads as a default.
//
//   PAGELLM_ASSIGN_OR_RETURN(auto bits, HfIntKey(q, {"bits", "w_bit"}, "quantization_config (awq)"));
//   if (!bits) return InvalidArgumentError("... has no 'bits'");
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/status.h"

namespace pagellm {

// ASCII lower case ("GEMM" -> "gemm").
std::string HfLower(std::string s);

// The first of `keys` present and not null in object `j`, or nullptr. AWQ configs spell
// bits "w_bit" or "bits" depending on the tool that wrote them.
const Json* HfFindKey(const Json& j, std::initializer_list<const char*> keys);

StatusOr<std::optional<int64_t>> HfIntKey(const Json& j, std::initializer_list<const char*> keys,
                                          const std::string& where);
StatusOr<std::optional<bool>> HfBoolKey(const Json& j, const char* key, const std::string& where);
StatusOr<std::optional<std::string>> HfStringKey(const Json& j, const char* key, const std::string& where);
// An absent key is an empty list.
StatusOr<std::vector<std::string>> HfStringListKey(const Json& j, const char* key, const std::string& where);

}  // namespace pagellm
