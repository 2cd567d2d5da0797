#include "model/hf_quant_json.h"

#include <algorithm>

#include <fmt/format.h>

namespace pagellm {

std::string HfLower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

const Json* HfFindKey(const Json& j, std::initializer_list<const char*> keys) {
  for (const char* key : keys) {
    auto it = j.find(key);
    if (it != j.end() && !it->is_null()) return &*it;
  }
  return nullptr;
}

StatusOr<std::optional<int64_t>> HfIntKey(const Json& j, std::initializer_list<const char*> keys,
                                          const std::string& where) {
  const Json* v = HfFindKey(j, keys);
  if (v == nullptr) return std::optional<int64_t>();
  if (!v->is_number_integer()) {
    return InvalidArgumentError(fmt::format("{}.{} must be an integer, got {}", where, *keys.begin(), v->dump()));
  }
  return std::optional<int64_t>(v->get<int64_t>());
}

StatusOr<std::optional<bool>> HfBoolKey(const Json& j, const char* key, const std::string& where) {
  const Json* v = HfFindKey(j, {key});
  if (v == nullptr) return std::optional<bool>();
  if (!v->is_boolean()) return InvalidArgumentError(fmt::format("{}.{} must be true or false, got {}", where, key, v->dump()));
  return std::optional<bool>(v->get<bool>());
}

StatusOr<std::optional<std::string>> HfStringKey(const Json& j, const char* key, const std::string& where) {
  const Json* v = HfFindKey(j, {key});
  if (v == nullptr) return std::optional<std::string>();
  if (!v->is_string()) return InvalidArgumentError(fmt::format("{}.{} must be a string, got {}", where, key, v->dump()));
  return std::optional<std::string>(v->get<std::string>());
}

StatusOr<std::vector<std::string>> HfStringListKey(const Json& j, const char* key, const std::string& where) {
  std::vector<std::string> out;
  const Json* v = HfFindKey(j, {key});
  if (v == nullptr) return out;
  if (!v->is_array()) return InvalidArgumentError(fmt::format("{}.{} must be a list of strings", where, key));
  for (const Json& item : *v) {
    if (!item.is_string()) return InvalidArgumentError(fmt::format("{}.{} must be a list of strings", where, key));
    out.push_back(item.get<std::string>());
  }
  return out;
}

}  // namespace pagellm
