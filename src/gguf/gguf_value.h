// GgufValue: one GGUF metadata value (any scalar type, string, or typed array, arrays may
// nest), used by both the reader and the writer.
//
//   GgufValue v = GgufValue::U32(28);                    // "qwen3.block_count"
//   GgufValue toks = GgufValue::StringArray({"a", "b"});  // "tokenizer.ggml.tokens"
//   PAGELLM_ASSIGN_OR_RETURN(int64_t n, v.AsInt());       // any integer type -> int64
//
// The variant index equals the GGUF type id, so type() is exact and a value written
// back keeps the type it was read with.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "common/status.h"
#include "gguf/gguf_types.h"

namespace pagellm {

class GgufValue;

// A homogeneous array: every item has type `elem_type` (itself an array for nested arrays).
struct GgufArray {
  GgufValueType elem_type = GgufValueType::kUint8;
  std::vector<GgufValue> items;
};
bool operator==(const GgufArray& a, const GgufArray& b);

class GgufValue {
 public:
  // Alternative i holds GGUF type id i.
  using Storage = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool,
                               std::string, GgufArray, uint64_t, int64_t, double>;

  GgufValue() = default;
  explicit GgufValue(Storage storage) : storage_(std::move(storage)) {}

  static GgufValue U8(uint8_t v) { return GgufValue(Storage(std::in_place_index<0>, v)); }
  static GgufValue I8(int8_t v) { return GgufValue(Storage(std::in_place_index<1>, v)); }
  static GgufValue U16(uint16_t v) { return GgufValue(Storage(std::in_place_index<2>, v)); }
  static GgufValue I16(int16_t v) { return GgufValue(Storage(std::in_place_index<3>, v)); }
  static GgufValue U32(uint32_t v) { return GgufValue(Storage(std::in_place_index<4>, v)); }
  static GgufValue I32(int32_t v) { return GgufValue(Storage(std::in_place_index<5>, v)); }
  static GgufValue F32(float v) { return GgufValue(Storage(std::in_place_index<6>, v)); }
  static GgufValue Bool(bool v) { return GgufValue(Storage(std::in_place_index<7>, v)); }
  static GgufValue String(std::string v) { return GgufValue(Storage(std::in_place_index<8>, std::move(v))); }
  static GgufValue U64(uint64_t v) { return GgufValue(Storage(std::in_place_index<10>, v)); }
  static GgufValue I64(int64_t v) { return GgufValue(Storage(std::in_place_index<11>, v)); }
  static GgufValue F64(double v) { return GgufValue(Storage(std::in_place_index<12>, v)); }
  // Precondition: every item has type `elem_type`.
  static GgufValue Array(GgufValueType elem_type, std::vector<GgufValue> items);
  static GgufValue StringArray(const std::vector<std::string>& items);
  static GgufValue I32Array(const std::vector<int32_t>& items);

  GgufValueType type() const { return static_cast<GgufValueType>(storage_.index()); }
  const Storage& storage() const { return storage_; }
  bool is_array() const { return type() == GgufValueType::kArray; }
  // Precondition: is_array().
  const GgufArray& array() const { return std::get<GgufArray>(storage_); }

  // Typed access with conversion only where it is lossless; errors name the actual type.
  StatusOr<int64_t> AsInt() const;     // any integer type (uint64 above INT64_MAX is an error)
  StatusOr<double> AsDouble() const;   // float32/float64 or any integer
  StatusOr<bool> AsBool() const;
  StatusOr<std::string> AsString() const;
  StatusOr<std::vector<std::string>> AsStringArray() const;
  StatusOr<std::vector<int64_t>> AsIntArray() const;

  // Short human-readable form for logs and dumps: `28`, `"gpt2"`, `[string x 151936]`.
  std::string DebugString() const;

  bool operator==(const GgufValue& other) const;

 private:
  Storage storage_;
};

}  // namespace pagellm
