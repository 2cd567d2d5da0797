#include "model/hf_int4_formats.h"

#include <array>
#include <cstring>

#include <fmt/format.h>

namespace pagellm {
namespace {

// AutoAWQ packs columns 8c..8c+7 into one int32 in the order {0, 2, 4, 6, 1, 3, 5, 7}
// (nibble i holds column 8c + kAwqOrder[i]); this is where column 8c + j went.
constexpr int kAwqOrder[8] = {0, 2, 4, 6, 1, 3, 5, 7};
constexpr auto kAwqNibbleOfColumn = [] {
  std::array<int, 8> nibble{};
  for (int i = 0; i < 8; ++i) nibble[static_cast<size_t>(kAwqOrder[i])] = i;
  return nibble;
}();
static_assert(kAwqNibbleOfColumn[1] == 4 && kAwqNibbleOfColumn[2] == 1);  // vLLM's {0, 4, 1, 5, 2, 6, 3, 7}

inline uint8_t Nibble(int32_t word, int i) {
  return static_cast<uint8_t>((static_cast<uint32_t>(word) >> (4 * i)) & 15u);
}

std::vector<int64_t> Shape2(int64_t a, int64_t b) { return {a, b}; }

StatusOr<const TensorView*> Require(const TensorSource& source, const std::string& name) {
  const TensorView* t = source.Find(name);
  if (t == nullptr) return NotFoundError(fmt::format("quantized checkpoint is missing tensor '{}'", name));
  return t;
}

Status ExpectInt32(const TensorView& t, const std::string& name, const std::vector<int64_t>& shape) {
  if (t.dtype != DType::kI32) {
    return InvalidArgumentError(fmt::format("tensor '{}' has dtype {}; expected packed int32", name, DTypeName(t.dtype)));
  }
  if (t.shape != shape) {
    return InvalidArgumentError(fmt::format("tensor '{}' has shape {}; expected {}", name, ShapeToString(t.shape),
                                            ShapeToString(shape)));
  }
  return OkStatus();
}

// Packed int32 tensors of rank 2 whose shape gives N and K.
Status ExpectPackedMatrix(const TensorView& t, const std::string& name) {
  if (t.dtype != DType::kI32 || t.rank() != 2) {
    return InvalidArgumentError(fmt::format("tensor '{}' is {} {}; expected a packed int32 matrix", name,
                                            DTypeName(t.dtype), ShapeToString(t.shape)));
  }
  return OkStatus();
}

Status ExpectShape(const TensorView& t, const std::string& name, const std::vector<int64_t>& shape) {
  if (t.shape == shape) return OkStatus();
  return InvalidArgumentError(fmt::format("tensor '{}' has shape {}; expected {}", name, ShapeToString(t.shape),
                                          ShapeToString(shape)));
}

// g_idx[k] names the group of input column k. Q4_Z's groups are runs of G consecutive
// columns, so only the trivial g_idx[k] = k / G maps onto it; act-order permutes the
// columns and would need the activations permuted too.
Status CheckTrivialGroupIndex(const TensorSource& source, const std::string& name, int64_t k, int64_t group,
                              const char* what) {
  const TensorView* g_idx = source.Find(name);
  if (g_idx == nullptr) return OkStatus();
  PAGELLM_RETURN_IF_ERROR(ExpectInt32(*g_idx, name, {k}));
  const auto* idx = g_idx->as<const int32_t>();
  for (int64_t i = 0; i < k; ++i) {
    if (idx[i] != i / group) {
      return InvalidArgumentError(fmt::format(
          "{} (act-order g_idx) is not supported yet: tensor {} (g_idx[{}] = {}, expected {} for group size {})",
          what, name, i, idx[i], i / group, group));
    }
  }
  return OkStatus();
}

StatusOr<Int4Linear> ReadAwq(const TensorSource& source, const std::string& p, const HfQuantConfig& config) {
  PAGELLM_ASSIGN_OR_RETURN(const TensorView* qweight, Require(source, p + ".qweight"));
  PAGELLM_RETURN_IF_ERROR(ExpectPackedMatrix(*qweight, p + ".qweight"));
  Int4Linear lin;
  lin.name = p;
  lin.k = qweight->dim(0);
  lin.n = qweight->dim(1) * 8;
  PAGELLM_ASSIGN_OR_RETURN(lin.group, ResolveQ4_ZGroup(p + ".qweight", lin.k, config.group_size));
  const int64_t groups = lin.groups(), words = lin.n / 8;
  PAGELLM_ASSIGN_OR_RETURN(const TensorView* qzeros, Require(source, p + ".qzeros"));
  PAGELLM_RETURN_IF_ERROR(ExpectInt32(*qzeros, p + ".qzeros", Shape2(groups, words)));
  PAGELLM_ASSIGN_OR_RETURN(const TensorView* scales, Require(source, p + ".scales"));
  PAGELLM_RETURN_IF_ERROR(ExpectShape(*scales, p + ".scales", Shape2(groups, lin.n)));
  PAGELLM_ASSIGN_OR_RETURN(lin.scales, ReadScalesAsF16(*scales, p + ".scales", lin.n, groups, /*groups_first=*/true));
  lin.zeros.resize(static_cast<size_t>(lin.n * groups));
  const auto* z = qzeros->as<const int32_t>();
  for (int64_t n = 0; n < lin.n; ++n) {
    for (int64_t g = 0; g < groups; ++g) {
      lin.zeros[static_cast<size_t>(n * groups + g)] = Nibble(z[g * words + n / 8], kAwqNibbleOfColumn[n % 8]);
    }
  }
  const auto* q = qweight->as<const int32_t>();
  const int64_t k = lin.k;
  lin.read_codes = [q, k, words](int64_t row0, int64_t rows, uint8_t* codes) {
    for (int64_t kk = 0; kk < k; ++kk) {  // input row kk holds every column's code: read it once
      const int32_t* line = q + kk * words;
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t n = row0 + r;
        codes[r * k + kk] = Nibble(line[n / 8], kAwqNibbleOfColumn[n % 8]);
      }
    }
  };
  return lin;
}

StatusOr<Int4Linear> ReadGptq(const TensorSource& source, const std::string& p, const HfQuantConfig& config) {
  PAGELLM_ASSIGN_OR_RETURN(const TensorView* qweight, Require(source, p + ".qweight"));
  PAGELLM_RETURN_IF_ERROR(ExpectPackedMatrix(*qweight, p + ".qweight"));
  Int4Linear lin;
  lin.name = p;
  lin.k = qweight->dim(0) * 8;
  lin.n = qweight->dim(1);
  PAGELLM_ASSIGN_OR_RETURN(lin.group, ResolveQ4_ZGroup(p + ".qweight", lin.k, config.group_size));
  const int64_t groups = lin.groups(), words = (lin.n + 7) / 8;
  PAGELLM_RETURN_IF_ERROR(
      CheckTrivialGroupIndex(source, p + ".g_idx", lin.k, lin.group, "GPTQ desc_act"));
  PAGELLM_ASSIGN_OR_RETURN(const TensorView* scales, Require(source, p + ".scales"));
  PAGELLM_RETURN_IF_ERROR(ExpectShape(*scales, p + ".scales", Shape2(groups, lin.n)));
  PAGELLM_ASSIGN_OR_RETURN(lin.scales, ReadScalesAsF16(*scales, p + ".scales", lin.n, groups, /*groups_first=*/true));
  lin.zeros.assign(static_cast<size_t>(lin.n * groups), 8);
  const TensorView* qzeros = source.Find(p + ".qzeros");
  if (qzeros == nullptr && !config.symmetric) {
    return NotFoundError(fmt::format("quantized checkpoint is missing tensor '{}.qzeros' (sym false)", p));
  }
  if (qzeros != nullptr) {
    PAGELLM_RETURN_IF_ERROR(ExpectInt32(*qzeros, p + ".qzeros", Shape2(groups, words)));
    // v1 ("gptq") stores zero - 1 (AutoGPTQ's convention, undone by vLLM's kernels with + 1).
    const int offset = config.gptq_v2 ? 0 : 1;
    const auto* z = qzeros->as<const int32_t>();
    for (int64_t n = 0; n < lin.n; ++n) {
      for (int64_t g = 0; g < groups; ++g) {
        const int zero = Nibble(z[g * words + n / 8], static_cast<int>(n % 8)) + offset;
        if (zero > 15) {
          return InvalidArgumentError(fmt::format(
              "tensor '{}.qzeros': zero point {} (stored 15, checkpoint_format gptq adds 1) at group {}, column {} "
              "does not fit q4_z's 0..15", p, zero, g, n));
        }
        lin.zeros[static_cast<size_t>(n * groups + g)] = static_cast<uint8_t>(zero);
      }
    }
  }
  const auto* q = qweight->as<const int32_t>();
  const int64_t k = lin.k, n_total = lin.n;
  lin.read_codes = [q, k, n_total](int64_t row0, int64_t rows, uint8_t* codes) {
    for (int64_t i = 0; i < k / 8; ++i) {  // word row i holds inputs 8i..8i+7 of every column
      const int32_t* line = q + i * n_total;
      for (int64_t r = 0; r < rows; ++r) {
        const int32_t word = line[row0 + r];
        for (int j = 0; j < 8; ++j) codes[r * k + 8 * i + j] = Nibble(word, j);
      }
    }
  };
  return lin;
}

// weight_shape {N, K}, int32 or int64 (compressed-tensors writes torch.tensor(shape)).
StatusOr<std::pair<int64_t, int64_t>> ReadWeightShape(const TensorView& t, const std::string& name) {
  if ((t.dtype != DType::kI32 && t.dtype != DType::kI64) || t.shape != std::vector<int64_t>{2}) {
    return InvalidArgumentError(fmt::format("tensor '{}' is {} {}; expected int32 or int64 [2]", name,
                                            DTypeName(t.dtype), ShapeToString(t.shape)));
  }
  int64_t dims[2];
  for (int i = 0; i < 2; ++i) {
    if (t.dtype == DType::kI64) {
      std::memcpy(&dims[i], static_cast<const int64_t*>(t.data) + i, sizeof(int64_t));
    } else {
      dims[i] = t.as<const int32_t>()[i];
    }
  }
  return std::make_pair(dims[0], dims[1]);
}

StatusOr<Int4Linear> ReadCompressed(const TensorSource& source, const std::string& p, const HfQuantConfig& config) {
  PAGELLM_ASSIGN_OR_RETURN(const TensorView* packed, Require(source, p + ".weight_packed"));
  PAGELLM_RETURN_IF_ERROR(ExpectPackedMatrix(*packed, p + ".weight_packed"));
  Int4Linear lin;
  lin.name = p;
  lin.n = packed->dim(0);
  lin.k = packed->dim(1) * 8;
  if (const TensorView* shape = source.Find(p + ".weight_shape"); shape != nullptr) {
    PAGELLM_ASSIGN_OR_RETURN(auto nk, ReadWeightShape(*shape, p + ".weight_shape"));
    if (nk.first != lin.n || (nk.second + 7) / 8 != packed->dim(1)) {
      return InvalidArgumentError(fmt::format("tensor '{}.weight_shape' says [{}, {}] but {}.weight_packed is {}", p,
                                              nk.first, nk.second, p, ShapeToString(packed->shape)));
    }
    lin.k = nk.second;
  }
  PAGELLM_ASSIGN_OR_RETURN(lin.group, ResolveQ4_ZGroup(p + ".weight_packed", lin.k, config.group_size));
  const int64_t groups = lin.groups();
  PAGELLM_RETURN_IF_ERROR(CheckTrivialGroupIndex(source, p + ".weight_g_idx", lin.k, lin.group,
                                                 "compressed-tensors actorder group"));
  PAGELLM_ASSIGN_OR_RETURN(const TensorView* scales, Require(source, p + ".weight_scale"));
  PAGELLM_RETURN_IF_ERROR(ExpectShape(*scales, p + ".weight_scale", Shape2(lin.n, groups)));
  PAGELLM_ASSIGN_OR_RETURN(lin.scales,
                           ReadScalesAsF16(*scales, p + ".weight_scale", lin.n, groups, /*groups_first=*/false));
  // Symmetric: signed codes around 0, stored + 8, so the zero is 8.
  lin.zeros.assign(static_cast<size_t>(lin.n * groups), 8);
  const TensorView* zero_point = source.Find(p + ".weight_zero_point");
  if (zero_point == nullptr && !config.symmetric) {
    return NotFoundError(fmt::format("quantized checkpoint is missing tensor '{}.weight_zero_point' (symmetric false)", p));
  }
  if (zero_point != nullptr) {
    // Packed along N (packed_dim 0): nibble j of [r, g] is row 8r + j's zero, + 8 as the codes.
    PAGELLM_RETURN_IF_ERROR(ExpectInt32(*zero_point, p + ".weight_zero_point", Shape2((lin.n + 7) / 8, groups)));
    const auto* z = zero_point->as<const int32_t>();
    for (int64_t n = 0; n < lin.n; ++n) {
      for (int64_t g = 0; g < groups; ++g) {
        lin.zeros[static_cast<size_t>(n * groups + g)] = Nibble(z[(n / 8) * groups + g], static_cast<int>(n % 8));
      }
    }
  }
  const auto* q = packed->as<const int32_t>();
  const int64_t k = lin.k, words = packed->dim(1);
  lin.read_codes = [q, k, words](int64_t row0, int64_t rows, uint8_t* codes) {
    for (int64_t r = 0; r < rows; ++r) {
      const int32_t* line = q + (row0 + r) * words;
      for (int64_t c = 0; c < k / 8; ++c) {
        for (int j = 0; j < 8; ++j) codes[r * k + 8 * c + j] = Nibble(line[c], j);
      }
    }
  };
  return lin;
}

}  // namespace

std::string_view Int4MarkerSuffix(HfQuantMethod method) {
  return method == HfQuantMethod::kCompressedTensors ? "weight_packed" : "qweight";
}

const std::vector<std::string>& Int4TensorSuffixes(HfQuantMethod method) {
  static const std::vector<std::string> kAutoGptq = {"qweight", "qzeros", "scales", "g_idx"};
  static const std::vector<std::string> kCompressed = {"weight_packed", "weight_scale", "weight_zero_point",
                                                       "weight_shape", "weight_g_idx"};
  return method == HfQuantMethod::kCompressedTensors ? kCompressed : kAutoGptq;
}

StatusOr<Int4Linear> ReadInt4Linear(const TensorSource& source, const std::string& prefix,
                                    const HfQuantConfig& config) {
  switch (config.method) {
    case HfQuantMethod::kAwq: return ReadAwq(source, prefix, config);
    case HfQuantMethod::kGptq: return ReadGptq(source, prefix, config);
    case HfQuantMethod::kCompressedTensors: return ReadCompressed(source, prefix, config);
    case HfQuantMethod::kNone: break;
  }
  return InvalidArgumentError(fmt::format("{}: the checkpoint has no int4 quantization_config", prefix));
}

}  // namespace pagellm
