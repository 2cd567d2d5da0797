// JSON parsing helpers over nlohmann::json for config files and API bodies.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace pagellm {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

// Parses `text`; errors name `what` (a file name or "request body") and the offset.
StatusOr<Json> ParseJson(std::string_view text, std::string_view what);

// Reads and parses a JSON file.
StatusOr<Json> ReadJsonFile(const std::string& path);

// obj[key] by reference, or a null value when `obj` is not an object or lacks `key`.
// Unlike Json::value(key, default), which returns a copy: copying tokenizer.json's model
// (151k vocab entries, 151k merges) cost ~0.4 s of every start.
const Json& JsonMember(const Json& obj, std::string_view key);

}  // namespace pagellm
