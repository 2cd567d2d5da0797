#include "gguf/gguf_types.h"

#include <algorithm>
#include <cctype>
#include <string>

#include <fmt/format.h>

namespace pagellm {
namespace {

struct TypeTraits {
  GgmlType type;
  std::string_view name;
  int64_t block_size;
  size_t type_size;
};

// Block sizes and byte sizes from ggml-common.h (block_q8_0 = 2 + 32, block_q4_0 = 2 + 16,
// block_q4_K = 2*2 + 12 + 128, block_q5_K = 2*2 + 12 + 32 + 128, block_q6_K = 128 + 64 + 16 + 2,
// block_q5_0 = 2 + 4 + 16, block_q4_1 = 2*2 + 16, block_q5_1 = 2*2 + 4 + 16, block_iq4_nl = 2 + 16, block_iq4_xs = 2 + 2 + 4 + 128).
constexpr TypeTraits kTraits[] = {
    {GgmlType::kF32, "f32", 1, 4},        {GgmlType::kF16, "f16", 1, 2},
    {GgmlType::kQ4_0, "q4_0", 32, 18},    {GgmlType::kQ8_0, "q8_0", 32, 34},
    {GgmlType::kQ4_K, "q4_K", 256, 144},  {GgmlType::kQ5_K, "q5_K", 256, 176},
    {GgmlType::kQ6_K, "q6_K", 256, 210},  {GgmlType::kBF16, "bf16", 1, 2},
    {GgmlType::kQ5_0, "q5_0", 32, 22},    {GgmlType::kIQ4_NL, "iq4_nl", 32, 18},
    {GgmlType::kIQ4_XS, "iq4_xs", 256, 136}, {GgmlType::kQ5_1, "q5_1", 32, 24},
    {GgmlType::kQ4_1, "q4_1", 32, 20},
};

const TypeTraits& Traits(GgmlType type) {
  for (const TypeTraits& t : kTraits) {
    if (t.type == type) return t;
  }
  PAGELLM_CHECK(false && "GgmlType value outside the enum");
  return kTraits[0];
}

// ggml's names for ids pagellm does not read, so errors can say what the file holds.
std::string_view UnsupportedGgmlName(uint32_t id) {
  switch (id) {
    case 9: return "q8_1";
    case 10: return "q2_K";
    case 11: return "q3_K";
    case 15: return "q8_K";
    case 16: return "iq2_xxs";
    case 17: return "iq2_xs";
    case 18: return "iq3_xxs";
    case 19: return "iq1_s";
    case 21: return "iq3_s";
    case 22: return "iq2_s";
    case 24: return "i8";
    case 25: return "i16";
    case 26: return "i32";
    case 27: return "i64";
    case 28: return "f64";
    case 29: return "iq1_m";
    case 34: return "tq1_0";
    case 35: return "tq2_0";
    case 39: return "mxfp4";
    default: return "";
  }
}

}  // namespace

StatusOr<GgmlType> GgmlTypeFromId(uint32_t id) {
  for (const TypeTraits& t : kTraits) {
    if (static_cast<uint32_t>(t.type) == id) return t.type;
  }
  std::string_view known = UnsupportedGgmlName(id);
  if (!known.empty()) {
    return UnimplementedError(fmt::format("ggml type {} ({}) is not supported", id, known));
  }
  return InvalidArgumentError(fmt::format("unknown ggml type id {}", id));
}

std::string_view GgmlTypeName(GgmlType type) { return Traits(type).name; }

StatusOr<GgmlType> GgmlTypeFromName(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const TypeTraits& t : kTraits) {
    std::string candidate(t.name);
    std::transform(candidate.begin(), candidate.end(), candidate.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (candidate == lower) return t.type;
  }
  return InvalidArgumentError(fmt::format("unknown ggml type name '{}'", name));
}

int64_t GgmlBlockSize(GgmlType type) { return Traits(type).block_size; }
size_t GgmlTypeSize(GgmlType type) { return Traits(type).type_size; }

size_t GgmlRowBytes(GgmlType type, int64_t num_elements) {
  const TypeTraits& t = Traits(type);
  PAGELLM_CHECK(num_elements >= 0 && num_elements % t.block_size == 0);
  return static_cast<size_t>(num_elements / t.block_size) * t.type_size;
}

std::string_view GgufValueTypeName(GgufValueType type) {
  switch (type) {
    case GgufValueType::kUint8: return "uint8";
    case GgufValueType::kInt8: return "int8";
    case GgufValueType::kUint16: return "uint16";
    case GgufValueType::kInt16: return "int16";
    case GgufValueType::kUint32: return "uint32";
    case GgufValueType::kInt32: return "int32";
    case GgufValueType::kFloat32: return "float32";
    case GgufValueType::kBool: return "bool";
    case GgufValueType::kString: return "string";
    case GgufValueType::kArray: return "array";
    case GgufValueType::kUint64: return "uint64";
    case GgufValueType::kInt64: return "int64";
    case GgufValueType::kFloat64: return "float64";
  }
  return "unknown";
}

size_t GgufValueTypeSize(GgufValueType type) {
  switch (type) {
    case GgufValueType::kUint8:
    case GgufValueType::kInt8:
    case GgufValueType::kBool: return 1;
    case GgufValueType::kUint16:
    case GgufValueType::kInt16: return 2;
    case GgufValueType::kUint32:
    case GgufValueType::kInt32:
    case GgufValueType::kFloat32: return 4;
    case GgufValueType::kUint64:
    case GgufValueType::kInt64:
    case GgufValueType::kFloat64: return 8;
    case GgufValueType::kString:
    case GgufValueType::kArray: return 0;
  }
  return 0;
}

}  // namespace pagellm
