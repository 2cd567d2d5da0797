#include "common/json.h"

#include <fmt/format.h>
#include "common/mapped_file.h"

namespace pagellm {

StatusOr<Json> ParseJson(std::string_view text, std::string_view what) {
  Json parsed = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    // Re-parse with exceptions only to recover nlohmann's position message.
    try {
      [[maybe_unused]] const Json again = Json::parse(text);  // throws: the input failed above
    } catch (const Json::parse_error& e) {
      return InvalidArgumentError(fmt::format("invalid JSON in {}: {}", what, e.what()));
    }
    return InvalidArgumentError(fmt::format("invalid JSON in {}", what));
  }
  return parsed;
}

const Json& JsonMember(const Json& obj, std::string_view key) {
  static const Json kNull;
  if (!obj.is_object()) return kNull;
  auto it = obj.find(key);
  return it == obj.end() ? kNull : *it;
}

StatusOr<Json> ReadJsonFile(const std::string& path) {
  PAGELLM_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  return ParseJson(text, path);
}

}  // namespace pagellm
