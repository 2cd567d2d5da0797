#include "gguf/gguf_value.h"

#include <limits>

#include <fmt/format.h>

namespace pagellm {

bool operator==(const GgufArray& a, const GgufArray& b) {
  return a.elem_type == b.elem_type && a.items == b.items;
}

GgufValue GgufValue::Array(GgufValueType elem_type, std::vector<GgufValue> items) {
  for (const GgufValue& item : items) PAGELLM_CHECK(item.type() == elem_type);
  return GgufValue(Storage(std::in_place_index<9>, GgufArray{elem_type, std::move(items)}));
}

GgufValue GgufValue::StringArray(const std::vector<std::string>& items) {
  std::vector<GgufValue> values;
  values.reserve(items.size());
  for (const std::string& s : items) values.push_back(String(s));
  return Array(GgufValueType::kString, std::move(values));
}

GgufValue GgufValue::I32Array(const std::vector<int32_t>& items) {
  std::vector<GgufValue> values;
  values.reserve(items.size());
  for (int32_t v : items) values.push_back(I32(v));
  return Array(GgufValueType::kInt32, std::move(values));
}

StatusOr<int64_t> GgufValue::AsInt() const {
  return std::visit(
      [this](const auto& v) -> StatusOr<int64_t> {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool> || !std::is_integral_v<T>) {
          return InvalidArgumentError(
              fmt::format("expected an integer, got {}", GgufValueTypeName(type())));
        } else if constexpr (std::is_same_v<T, uint64_t>) {
          if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
            return OutOfRangeError(fmt::format("uint64 value {} does not fit int64", v));
          }
          return static_cast<int64_t>(v);
        } else {
          return static_cast<int64_t>(v);
        }
      },
      storage_);
}

StatusOr<double> GgufValue::AsDouble() const {
  if (const float* f = std::get_if<float>(&storage_)) return static_cast<double>(*f);
  if (const double* d = std::get_if<double>(&storage_)) return *d;
  PAGELLM_ASSIGN_OR_RETURN(int64_t i, AsInt());
  return static_cast<double>(i);
}

StatusOr<bool> GgufValue::AsBool() const {
  if (const bool* b = std::get_if<bool>(&storage_)) return *b;
  return InvalidArgumentError(fmt::format("expected bool, got {}", GgufValueTypeName(type())));
}

StatusOr<std::string> GgufValue::AsString() const {
  if (const std::string* s = std::get_if<std::string>(&storage_)) return *s;
  return InvalidArgumentError(fmt::format("expected string, got {}", GgufValueTypeName(type())));
}

StatusOr<std::vector<std::string>> GgufValue::AsStringArray() const {
  if (!is_array() || array().elem_type != GgufValueType::kString) {
    return InvalidArgumentError(fmt::format("expected array of string, got {}", DebugString()));
  }
  std::vector<std::string> out;
  out.reserve(array().items.size());
  for (const GgufValue& item : array().items) out.push_back(std::get<std::string>(item.storage_));
  return out;
}

StatusOr<std::vector<int64_t>> GgufValue::AsIntArray() const {
  if (!is_array()) {
    return InvalidArgumentError(fmt::format("expected array of integers, got {}", DebugString()));
  }
  std::vector<int64_t> out;
  out.reserve(array().items.size());
  for (const GgufValue& item : array().items) {
    PAGELLM_ASSIGN_OR_RETURN(int64_t v, item.AsInt());
    out.push_back(v);
  }
  return out;
}

std::string GgufValue::DebugString() const {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>) {
          return v.size() > 60 ? fmt::format("\"{}...\" ({} bytes)", v.substr(0, 60), v.size())
                               : fmt::format("\"{}\"", v);
        } else if constexpr (std::is_same_v<T, GgufArray>) {
          return fmt::format("[{} x {}]", GgufValueTypeName(v.elem_type), v.items.size());
        } else if constexpr (std::is_same_v<T, bool>) {
          return v ? "true" : "false";
        } else if constexpr (std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t>) {
          return fmt::format("{}", static_cast<int>(v));
        } else {
          return fmt::format("{}", v);
        }
      },
      storage_);
}

bool GgufValue::operator==(const GgufValue& other) const { return storage_ == other.storage_; }

}  // namespace pagellm
