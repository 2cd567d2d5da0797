// Helpers shared by the Hugging Face int4 checkpoint tests (hf_quant_test.cc,
// hf_act_order_test.cc, arch/hf_act_order_linear_test.cc): a linear in its unpacked meaning
// (Int4Reference), packed into each format's tensors by the format's definition (written
// independently of the loader's unpacking), the quantization_config JSON of each format,
// and the check that a q4_z tensor dequantizes to the reference value for value.
//
//   Int4Reference r = RandomReference(40, 256, 128, /*symmetric=*/false, /*seed=*/7);
//   SetActOrder(r, 3);                      // optional: a desc_act g_idx
//   PutGptq(store, "model.layers.0.mlp.down_proj", r, /*v2=*/true);
//   ExpectLossless(*source, "model.layers.0.mlp.down_proj.weight", r);
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "common/json.h"
#include "model/hf_quant_config.h"
#include "model/tensor_source.h"
#include "tensor/element_access.h"
#include "tensor/half.h"
#include "tensor/kquant_blocks.h"

namespace pagellm::hf_int4_testing {

inline constexpr int kAwqPackOrder[8] = {0, 2, 4, 6, 1, 3, 5, 7};  // AutoAWQ: nibble i <- column 8c + order[i]

// A linear [n, k] in its unpacked meaning.
struct Int4Reference {
  int64_t n = 0, k = 0, group = 0;  // group: the resolved G (k for -1)
  std::vector<uint8_t> codes;       // [n, k]
  std::vector<uint8_t> zeros;       // [n, k / group]
  std::vector<float> scales;        // [n, k / group]
  std::vector<int32_t> g_idx;       // [k]: the group of each input column (act-order); empty: col / group
  int64_t groups() const { return k / group; }
  int64_t GroupOf(int64_t col) const { return g_idx.empty() ? col / group : g_idx[static_cast<size_t>(col)]; }
  float Expected(int64_t row, int64_t col) const {
    const size_t g = static_cast<size_t>(row * groups() + GroupOf(col));
    return static_cast<float>(codes[static_cast<size_t>(row * k + col)] - zeros[g]) * scales[g];
  }
};

// Random codes, zeros in [zero_min, 15] (or all 8 when symmetric) and scales exact in
// fp16 (and in bf16 when `bf16_exact`, for checkpoints that store bf16 scales).
inline Int4Reference RandomReference(int64_t n, int64_t k, int64_t group, bool symmetric, uint32_t seed, int zero_min = 0,
                              bool bf16_exact = false) {
  std::mt19937 rng(seed);
  Int4Reference r;
  r.n = n;
  r.k = k;
  r.group = group < 0 ? k : group;
  r.codes.resize(static_cast<size_t>(n * k));
  for (uint8_t& c : r.codes) c = static_cast<uint8_t>(rng() % 16);
  const size_t num_groups = static_cast<size_t>(n * r.groups());
  r.zeros.resize(num_groups);
  r.scales.resize(num_groups);
  std::uniform_real_distribution<float> scale(-0.05f, 0.2f);
  for (size_t g = 0; g < num_groups; ++g) {
    r.zeros[g] = symmetric ? 8 : static_cast<uint8_t>(zero_min + static_cast<int>(rng() % (16 - zero_min)));
    const float s = scale(rng);
    r.scales[g] = bf16_exact ? Bf16ToF32(F32ToBf16(s)) : F16ToF32(F32ToF16(s));
  }
  return r;
}

inline int32_t* Ints(TensorView& t) { return t.as<int32_t>(); }

inline void FillScales(TensorView& t, const Int4Reference& r, bool groups_first) {
  for (int64_t row = 0; row < r.n; ++row) {
    for (int64_t g = 0; g < r.groups(); ++g) {
      const int64_t index = groups_first ? g * r.n + row : row * r.groups() + g;
      StoreElementFromF32(t.data, t.dtype, index, r.scales[static_cast<size_t>(row * r.groups() + g)]);
    }
  }
}

inline void PutAwq(TensorStore& store, const std::string& p, const Int4Reference& r) {
  const int64_t words = r.n / 8;
  TensorView& qweight = store.Allocate(p + ".qweight", DType::kI32, {r.k, words});
  for (int64_t kk = 0; kk < r.k; ++kk) {
    for (int64_t c = 0; c < words; ++c) {
      uint32_t word = 0;
      for (int i = 0; i < 8; ++i) word |= uint32_t{r.codes[static_cast<size_t>((8 * c + kAwqPackOrder[i]) * r.k + kk)]} << (4 * i);
      Ints(qweight)[kk * words + c] = static_cast<int32_t>(word);
    }
  }
  TensorView& qzeros = store.Allocate(p + ".qzeros", DType::kI32, {r.groups(), words});
  for (int64_t g = 0; g < r.groups(); ++g) {
    for (int64_t c = 0; c < words; ++c) {
      uint32_t word = 0;
      for (int i = 0; i < 8; ++i) word |= uint32_t{r.zeros[static_cast<size_t>((8 * c + kAwqPackOrder[i]) * r.groups() + g)]} << (4 * i);
      Ints(qzeros)[g * words + c] = static_cast<int32_t>(word);
    }
  }
  FillScales(store.Allocate(p + ".scales", DType::kF16, {r.groups(), r.n}), r, /*groups_first=*/true);
}

// GPTQ: qweight packed along K; qzeros along N, stored zero - 1 in v1 (AutoGPTQ).
inline void PutGptq(TensorStore& store, const std::string& p, const Int4Reference& r, bool v2, bool with_g_idx = true) {
  TensorView& qweight = store.Allocate(p + ".qweight", DType::kI32, {r.k / 8, r.n});
  for (int64_t i = 0; i < r.k / 8; ++i) {
    for (int64_t col = 0; col < r.n; ++col) {
      uint32_t word = 0;
      for (int j = 0; j < 8; ++j) word |= uint32_t{r.codes[static_cast<size_t>(col * r.k + 8 * i + j)]} << (4 * j);
      Ints(qweight)[i * r.n + col] = static_cast<int32_t>(word);
    }
  }
  TensorView& qzeros = store.Allocate(p + ".qzeros", DType::kI32, {r.groups(), r.n / 8});
  for (int64_t g = 0; g < r.groups(); ++g) {
    for (int64_t c = 0; c < r.n / 8; ++c) {
      uint32_t word = 0;
      for (int j = 0; j < 8; ++j) {
        const int zero = r.zeros[static_cast<size_t>((8 * c + j) * r.groups() + g)] - (v2 ? 0 : 1);
        word |= static_cast<uint32_t>(zero & 15) << (4 * j);
      }
      Ints(qzeros)[g * (r.n / 8) + c] = static_cast<int32_t>(word);
    }
  }
  FillScales(store.Allocate(p + ".scales", DType::kF16, {r.groups(), r.n}), r, /*groups_first=*/true);
  if (with_g_idx) {
    TensorView& g_idx = store.Allocate(p + ".g_idx", DType::kI32, {r.k});
    for (int64_t kk = 0; kk < r.k; ++kk) Ints(g_idx)[kk] = static_cast<int32_t>(r.GroupOf(kk));
  }
}

// compressed-tensors pack_to_int32: codes along K, zero points along N (packed_dim 0).
inline void PutCompressed(TensorStore& store, const std::string& p, const Int4Reference& r, bool symmetric,
                   DType scale_dtype = DType::kF16) {
  TensorView& packed = store.Allocate(p + ".weight_packed", DType::kI32, {r.n, r.k / 8});
  for (int64_t row = 0; row < r.n; ++row) {
    for (int64_t c = 0; c < r.k / 8; ++c) {
      uint32_t word = 0;
      for (int j = 0; j < 8; ++j) word |= uint32_t{r.codes[static_cast<size_t>(row * r.k + 8 * c + j)]} << (4 * j);
      Ints(packed)[row * (r.k / 8) + c] = static_cast<int32_t>(word);
    }
  }
  TensorView& shape = store.Allocate(p + ".weight_shape", DType::kI64, {2});
  shape.as<int64_t>()[0] = r.n;
  shape.as<int64_t>()[1] = r.k;
  FillScales(store.Allocate(p + ".weight_scale", scale_dtype, {r.n, r.groups()}), r, /*groups_first=*/false);
  if (!r.g_idx.empty()) {  // actorder "group"
    TensorView& g_idx = store.Allocate(p + ".weight_g_idx", DType::kI32, {r.k});
    for (int64_t kk = 0; kk < r.k; ++kk) Ints(g_idx)[kk] = r.g_idx[static_cast<size_t>(kk)];
  }
  if (symmetric) return;
  TensorView& zp = store.Allocate(p + ".weight_zero_point", DType::kI32, {(r.n + 7) / 8, r.groups()});
  for (int64_t row = 0; row < r.n; ++row) {
    for (int64_t g = 0; g < r.groups(); ++g) {
      Ints(zp)[(row / 8) * r.groups() + g] |=
          static_cast<int32_t>(uint32_t{r.zeros[static_cast<size_t>(row * r.groups() + g)]} << (4 * (row % 8)));
    }
  }
}

inline HfQuantConfig Parse(const Json& quantization_config) {
  auto c = ParseHfQuantConfig(Json{{"quantization_config", quantization_config}});
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *c : HfQuantConfig{};
}

inline Json AwqJson(int64_t group) {
  return {{"quant_method", "awq"}, {"bits", 4}, {"group_size", group}, {"zero_point", true}, {"version", "gemm"},
          {"modules_to_not_convert", nullptr}};
}
inline Json GptqJson(int64_t group, bool sym, bool v2, bool desc_act = false) {
  return {{"quant_method", "gptq"}, {"bits", 4},   {"group_size", group},
          {"sym", sym},             {"desc_act", desc_act}, {"checkpoint_format", v2 ? "gptq_v2" : "gptq"}};
}
inline Json CompressedJson(bool symmetric, int64_t group, bool actorder = false) {
  Json weights = {{"num_bits", 4}, {"type", "int"}, {"symmetric", symmetric}, {"dynamic", false},
                  {"strategy", group < 0 ? "channel" : "group"}, {"group_size", group < 0 ? Json(nullptr) : Json(group)},
                  {"actorder", actorder ? Json("group") : Json(nullptr)}};
  return {{"quant_method", "compressed-tensors"},
          {"format", "pack-quantized"},
          {"quantization_status", "compressed"},
          {"ignore", {"lm_head"}},
          {"config_groups",
           {{"group_0", {{"targets", {"Linear"}}, {"weights", weights}, {"input_activations", nullptr},
                         {"output_activations", nullptr}}}}}};
}

// Every row of the q4_z tensor `name` of `source` dequantizes to exactly r's values (an
// act-order tensor's stored columns taken in its column_order).
inline void ExpectLossless(const TensorSource& source, const std::string& name, const Int4Reference& r) {
  const TensorView* w = source.Find(name);
  ASSERT_NE(w, nullptr) << name;
  ASSERT_EQ(w->dtype, DType::kQ4_Z);
  ASSERT_EQ(w->shape, (std::vector<int64_t>{r.n, r.k}));
  std::vector<float> row(static_cast<size_t>(r.k));
  const size_t row_bytes = DTypeBytes(DType::kQ4_Z, r.k);
  int mismatches = 0;
  for (int64_t n = 0; n < r.n; ++n) {
    DequantizeRowKQuant(DType::kQ4_Z, static_cast<const std::byte*>(w->data) + n * row_bytes, r.k, row.data());
    for (int64_t k = 0; k < r.k; ++k) {  // stored column k multiplies input column column_order[k]
      const float want = r.Expected(n, w->column_order.empty() ? k : w->column_order[static_cast<size_t>(k)]);
      if (std::memcmp(&row[static_cast<size_t>(k)], &want, sizeof(float)) != 0 && mismatches++ < 5) {
        ADD_FAILURE() << name << " [" << n << ", " << k << "]: " << row[static_cast<size_t>(k)] << " != " << want;
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
  const auto* blocks = static_cast<const BlockQ4_Z*>(w->data);
  for (int64_t b = 0; b < r.n * r.k / 32; ++b) ASSERT_EQ(blocks[b].reserved, 0);
}

// GPTQ desc_act's g_idx (AutoGPTQ fasterquant: columns quantized in the order perm, then
// stored back in input order): g_idx[perm[i]] = i / G for a random permutation perm.
inline void SetActOrder(Int4Reference& r, uint32_t seed) {
  std::vector<int32_t> perm(static_cast<size_t>(r.k));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), std::mt19937(seed));
  r.g_idx.assign(static_cast<size_t>(r.k), 0);
  for (int64_t i = 0; i < r.k; ++i) r.g_idx[static_cast<size_t>(perm[static_cast<size_t>(i)])] = static_cast<int32_t>(i / r.group);
}

// The input columns sorted by group, stably (Marlin's g_idx_sort_indices: torch.argsort(g_idx)
// on distinct keys per run): stored column j is input column SortedColumns(r)[j].
inline std::vector<int32_t> SortedColumns(const Int4Reference& r) {
  std::vector<int32_t> order(static_cast<size_t>(r.k));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return r.GroupOf(a) < r.GroupOf(b); });
  return order;
}

// The same weight without act-order, input columns permuted logically: column j of the result
// is column order[j] of r (order = SortedColumns(r), each group G consecutive columns again).
inline Int4Reference WithoutActOrder(const Int4Reference& r, const std::vector<int32_t>& order) {
  Int4Reference out = r;
  out.g_idx.clear();
  for (int64_t row = 0; row < r.n; ++row) {
    for (int64_t j = 0; j < r.k; ++j) {
      out.codes[static_cast<size_t>(row * r.k + j)] = r.codes[static_cast<size_t>(row * r.k + order[static_cast<size_t>(j)])];
    }
  }
  return out;
}

}  // namespace pagellm::hf_int4_testing
