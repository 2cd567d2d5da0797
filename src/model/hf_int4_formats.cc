#include "model/hf_int4_formats.h"

#include <array>

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

// A packed nibble is the q4_z code as is (0..15; zero points apply later).
inline uint8_t NibbleCode(uint32_t field) { return static_cast<uint8_t>(field); }

std::vector<int64_t> Shape2(int64_t a, int64_t b) { return {a, b}; }

StatusOr<Int4Linear> ReadAwq(const TensorSource& source, const std::string& p, const HfQuantConfig& config) {
  PAGELLM_ASSIGN_OR_RETURN(const TensorView* qweight, RequireTensor(source, p + ".qweight"));
  PAGELLM_RETURN_IF_ERROR(ExpectPackedMatrix(*qweight, p + ".qweight"));
  Int4Linear lin;
  lin.name = p;
  lin.k = qweight->dim(0);
  lin.n = qweight->dim(1) * 8;
  PAGELLM_ASSIGN_OR_RETURN(lin.group, ResolveQ4_ZGroup(p + ".qweight", lin.k, config.group_size));
  const int64_t groups = lin.groups(), words = lin.n / 8;
  PAGELLM_ASSIGN_OR_RETURN(const TensorView* qzeros, RequireTensor(source, p + ".qzeros"));
  PAGELLM_RETURN_IF_ERROR(ExpectTensor(*qzeros, p + ".qzeros", DType::kI32, Shape2(groups, words)));
  PAGELLM_ASSIGN_OR_RETURN(const TensorView* scales, RequireTensor(source, p + ".scales"));
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
  PAGELLM_ASSIGN_OR_RETURN(const TensorView* qweight, RequireTensor(source, p + ".qweight"));
  PAGELLM_RETURN_IF_ERROR(ExpectPackedMatrix(*qweight, p + ".qweight"));
  Int4Linear lin;
  lin.name = p;
  lin.k = qweight->dim(0) * 8;
  lin.n = qweight->dim(1);
  PAGELLM_ASSIGN_OR_RETURN(lin.group, ResolveQ4_ZGroup(p + ".qweight", lin.k, config.group_size));
  const int64_t groups = lin.groups(), words = (lin.n + 7) / 8;
  PAGELLM_RETURN_IF_ERROR(ReadActOrder(source, p + ".g_idx", lin));  // desc_act
  PAGELLM_ASSIGN_OR_RETURN(const TensorView* scales, RequireTensor(source, p + ".scales"));
  PAGELLM_RETURN_IF_ERROR(ExpectShape(*scales, p + ".scales", Shape2(groups, lin.n)));
  PAGELLM_ASSIGN_OR_RETURN(lin.scales, ReadScalesAsF16(*scales, p + ".scales", lin.n, groups, /*groups_first=*/true));
  lin.zeros.assign(static_cast<size_t>(lin.n * groups), 8);
  const TensorView* qzeros = source.Find(p + ".qzeros");
  if (qzeros == nullptr && !config.symmetric) {
    return NotFoundError(fmt::format("quantized checkpoint is missing tensor '{}.qzeros' (sym false)", p));
  }
  if (qzeros != nullptr) {
    PAGELLM_RETURN_IF_ERROR(ExpectTensor(*qzeros, p + ".qzeros", DType::kI32, Shape2(groups, words)));
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
  lin.read_codes = ColumnPackedReader<4, uint8_t>(qweight->as<const int32_t>(), lin.k, lin.n, NibbleCode);
  return lin;
}

StatusOr<Int4Linear> ReadCompressed(const TensorSource& source, const std::string& p, const HfQuantConfig& config) {
  const TensorView* packed = nullptr;
  PAGELLM_ASSIGN_OR_RETURN(auto nk, ReadPackedWeight(source, p, 8, &packed));
  Int4Linear lin;
  lin.name = p;
  lin.n = nk.first;
  lin.k = nk.second;
  PAGELLM_ASSIGN_OR_RETURN(lin.group, ResolveQ4_ZGroup(p + ".weight_packed", lin.k, config.group_size));
  const int64_t groups = lin.groups();
  PAGELLM_RETURN_IF_ERROR(ReadActOrder(source, p + ".weight_g_idx", lin));  // actorder "group"
  PAGELLM_ASSIGN_OR_RETURN(const TensorView* scales, RequireTensor(source, p + ".weight_scale"));
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
    PAGELLM_RETURN_IF_ERROR(
        ExpectTensor(*zero_point, p + ".weight_zero_point", DType::kI32, Shape2((lin.n + 7) / 8, groups)));
    const auto* z = zero_point->as<const int32_t>();
    for (int64_t n = 0; n < lin.n; ++n) {
      for (int64_t g = 0; g < groups; ++g) {
        lin.zeros[static_cast<size_t>(n * groups + g)] = Nibble(z[(n / 8) * groups + g], static_cast<int>(n % 8));
      }
    }
  }
  lin.read_codes = RowPackedReader<4, uint8_t>(packed->as<const int32_t>(), lin.k, packed->dim(1), NibbleCode);
  return lin;
}

}  // namespace

HfModuleLayout Int4Layout(HfQuantMethod method) {
  if (method == HfQuantMethod::kCompressedTensors) {
    return {"weight_packed", {"weight_packed", "weight_scale", "weight_zero_point", "weight_shape", "weight_g_idx"}};
  }
  return {"qweight", {"qweight", "qzeros", "scales", "g_idx"}};
}

StatusOr<Int4Linear> ReadInt4Linear(const TensorSource& source, const std::string& prefix,
                                    const HfQuantConfig& config) {
  switch (config.method) {
    case HfQuantMethod::kAwq: return ReadAwq(source, prefix, config);
    case HfQuantMethod::kGptq: return ReadGptq(source, prefix, config);
    case HfQuantMethod::kCompressedTensors: return ReadCompressed(source, prefix, config);
    case HfQuantMethod::kFp8:
    case HfQuantMethod::kAscend:
    case HfQuantMethod::kNone: break;
  }
  return InvalidArgumentError(fmt::format("{}: the checkpoint has no int4 quantization_config", prefix));
}

}  // namespace pagellm
