// Tensor lookups, checks and packed-code readers shared by the Hugging Face quantized layouts
// (int4: hf_int4_formats.h, int8: hf_int8_formats.h, fp8: hf_fp8_linear.h). Every error
// names the tensor, and the loader prefixes the file.
//
//   PAGELLM_ASSIGN_OR_RETURN(const TensorView* qweight, RequireTensor(source, p + ".qweight"));
//   PAGELLM_RETURN_IF_ERROR(ExpectTensor(*qweight, p + ".qweight", DType::kI32, {k / 8, n}));
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "model/convert.h"
#include "model/tensor_source.h"

namespace pagellm {

// How a quantized module P of one format is stored: `marker` is the tensor whose presence
// says P is quantized (P.<marker>); `suffixes` are every tensor of P its conversion consumes
// (hidden afterwards). When "weight" is among them, P.weight is the quantized codes itself.
struct HfModuleLayout {
  std::string marker;
  std::vector<std::string> suffixes;
};

// The tensor, or NotFound "quantized checkpoint is missing tensor 'name'".
StatusOr<const TensorView*> RequireTensor(const TensorSource& source, const std::string& name);

// `t` has `dtype` and `shape`, or InvalidArgument naming `name` and both.
Status ExpectTensor(const TensorView& t, const std::string& name, DType dtype, const std::vector<int64_t>& shape);

// `t` has `shape` (any dtype).
Status ExpectShape(const TensorView& t, const std::string& name, const std::vector<int64_t>& shape);

// `t` is a rank-2 int32 tensor (packed codes whose shape gives N and K).
Status ExpectPackedMatrix(const TensorView& t, const std::string& name);

// g_idx[k] names the group of input column k. For layouts whose groups must be runs of G
// consecutive columns (GPTQ 8-bit's single group) only the trivial g_idx[k] = k / G maps
// onto them (the int4 formats take act-order: ReadActOrder). OK when `name` is absent.
Status CheckTrivialGroupIndex(const TensorSource& source, const std::string& name, int64_t k, int64_t group,
                              const char* what);

// `t` holds scales in a float dtype (f32, bf16 or f16), or InvalidArgument naming `name`.
Status ExpectFloatScales(const TensorView& t, const std::string& name);

// compressed-tensors pack-quantized: `P.weight_packed` int32 [N, ceil(K / values_per_word)]
// and its optional P.weight_shape {N, K} (int32 or int64: torch.tensor(shape)), which says K
// when the last word is partly used. Returns {N, K}; `packed` gets the packed tensor.
StatusOr<std::pair<int64_t, int64_t>> ReadPackedWeight(const TensorSource& source, const std::string& p,
                                                       int64_t values_per_word, const TensorView** packed);

// The code readers behind Int4Linear / Int8Linear::read_codes (rows [row0, row0 + rows) into
// codes[(row - row0) * k + column]) for the two ways the formats pack kBits-bit codes, 32 /
// kBits per int32 (field j = bits kBits * j ..); `decode` maps a field to the stored code
// (a nibble as is, a byte minus 128). Precondition: k % (32 / kBits) == 0.
//   along K, word rows shared by all outputs (GPTQ qweight [k / per_word, n]): field j of
//   [i, row] is input i * per_word + j of `row`;
//   along K, one output per word row (compressed-tensors weight_packed [n, words]): field j
//   of [row, c] is input c * per_word + j.
template <int kBits, typename Code, typename Decode>
auto ColumnPackedReader(const int32_t* q, int64_t k, int64_t n, Decode decode) {
  return [=](int64_t row0, int64_t rows, Code* codes) {
    constexpr int kPerWord = 32 / kBits;
    constexpr uint32_t kMask = (uint32_t{1} << kBits) - 1;
    for (int64_t i = 0; i < k / kPerWord; ++i) {  // word row i holds inputs of every output: read it once
      const int32_t* line = q + i * n;
      for (int64_t r = 0; r < rows; ++r) {
        const auto word = static_cast<uint32_t>(line[row0 + r]);
        for (int j = 0; j < kPerWord; ++j) codes[r * k + kPerWord * i + j] = decode((word >> (kBits * j)) & kMask);
      }
    }
  };
}

template <int kBits, typename Code, typename Decode>
auto RowPackedReader(const int32_t* q, int64_t k, int64_t words, Decode decode) {
  return [=](int64_t row0, int64_t rows, Code* codes) {
    constexpr int kPerWord = 32 / kBits;
    constexpr uint32_t kMask = (uint32_t{1} << kBits) - 1;
    for (int64_t r = 0; r < rows; ++r) {
      const int32_t* line = q + (row0 + r) * words;
      for (int64_t c = 0; c < k / kPerWord; ++c) {
        const auto word = static_cast<uint32_t>(line[c]);
        for (int j = 0; j < kPerWord; ++j) codes[r * k + kPerWord * c + j] = decode((word >> (kBits * j)) & kMask);
      }
    }
  };
}

// Rows decoded at once per thread by ForEachDecodedRow: their codes sit in a scratch of
// kDecodeTileRows * k values, and layouts that store a row's codes strided (AWQ, GPTQ) then
// read whole cache lines.
inline constexpr int64_t kDecodeTileRows = 64;

// For every row of an [n, k] linear, in parallel: read(row0, rows, codes) decodes the codes of
// rows [row0, row0 + rows) into codes[(row - row0) * k + column], then fill(row, codes of row).
template <typename Code, typename Read, typename Fill>
void ForEachDecodedRow(int64_t n, int64_t k, const Read& read, const Fill& fill) {
  ParallelFor(n, kDecodeTileRows, [&](int64_t begin, int64_t end) {
    std::vector<Code> codes(static_cast<size_t>(kDecodeTileRows * k));
    for (int64_t row0 = begin; row0 < end; row0 += kDecodeTileRows) {
      const int64_t rows = std::min(kDecodeTileRows, end - row0);
      read(row0, rows, codes.data());
      for (int64_t r = 0; r < rows; ++r) fill(row0 + r, codes.data() + r * k);
    }
  });
}

}  // namespace pagellm
