// Act-order int4 checkpoints (GPTQ desc_act g_idx, compressed-tensors actorder "group"
// weight_g_idx) repacked as q4_z: the stored weight is, byte for byte, the same weight
// written without act-order with its input columns permuted logically (sorted stably by
// group), its column_order is that permutation, and every stored column dequantizes exactly
// to the logical w[k, n] = s[g_idx[k], n] * (q[k, n] - z[g_idx[k], n]). (That a linear with a
// column order equals the unordered weight on the gathered input, bit for bit, on every
// backend: tests/conformance/column_order_conformance_test.cc and
// arch/hf_act_order_linear_test.cc.)
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "model/hf_int4_test_util.h"
#include "model/hf_quant_source.h"
#include "model/hf_quant_test_util.h"

namespace pagellm {
namespace {

using hf_int4_testing::CompressedJson;
using hf_int4_testing::ExpectLossless;
using hf_int4_testing::GptqJson;
using hf_int4_testing::Int4Reference;
using hf_int4_testing::Ints;
using hf_int4_testing::PutCompressed;
using hf_int4_testing::PutGptq;
using hf_int4_testing::RandomReference;
using hf_int4_testing::SetActOrder;
using hf_int4_testing::SortedColumns;
using hf_int4_testing::WithoutActOrder;
using hf_quant_testing::ErrorOf;
using hf_quant_testing::Repack;

const std::string kP = "model.layers.0.mlp.down_proj";
const std::string kW = kP + ".weight";

// `act` (loaded from an act-order checkpoint of r) against `plain` (the checkpoint of
// WithoutActOrder(r)): the same q4_z bytes, the sort as column order, r's logical values.
void ExpectSortedTwin(const TensorSource& act, const TensorSource& plain, const Int4Reference& r) {
  const TensorView* a = act.Find(kW);
  const TensorView* p = plain.Find(kW);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(a->dtype, DType::kQ4_Z);
  ASSERT_EQ(a->shape, p->shape);
  EXPECT_EQ(std::memcmp(a->data, p->data, a->nbytes()), 0) << "q4_z bytes differ from the sorted twin";
  EXPECT_TRUE(p->column_order.empty());
  const std::vector<int32_t> order = SortedColumns(r);
  ASSERT_EQ(std::vector<int32_t>(a->column_order.begin(), a->column_order.end()), order);
  ExpectLossless(act, kW, r);
}

TEST(HfActOrderTest, GptqV1AndV2SymAndAsymLoadAsTheSortedTwin) {
  for (bool v2 : {false, true}) {
    for (bool sym : {true, false}) {
      for (int64_t group : {32, 128}) {
        SCOPED_TRACE(testing::Message() << "v2 " << v2 << " sym " << sym << " group " << group);
        Int4Reference r = RandomReference(40, 256, group, sym, 21 + static_cast<uint32_t>(group), v2 ? 0 : 1);
        SetActOrder(r, 5 + static_cast<uint32_t>(group));
        TensorStore act_store, plain_store;
        PutGptq(act_store, kP, r, v2);
        PutGptq(plain_store, kP, WithoutActOrder(r, SortedColumns(r)), v2);
        auto act = Repack(act_store, GptqJson(group, sym, v2, /*desc_act=*/true));
        auto plain = Repack(plain_store, GptqJson(group, sym, v2));
        ASSERT_TRUE(act.ok()) << act.status();
        ASSERT_TRUE(plain.ok()) << plain.status();
        ExpectSortedTwin(**act, **plain, r);
        EXPECT_EQ((*act)->Find(kP + ".g_idx"), nullptr);  // consumed
        EXPECT_NE((*act)->Origin(kW).find("act-order"), std::string::npos) << (*act)->Origin(kW);
      }
    }
  }
}

TEST(HfActOrderTest, CompressedTensorsActorderGroupLoadsAsTheSortedTwin) {
  for (bool symmetric : {true, false}) {
    for (int64_t group : {32, 128}) {
      SCOPED_TRACE(testing::Message() << "sym " << symmetric << " group " << group);
      Int4Reference r = RandomReference(44, 256, group, symmetric, 31 + static_cast<uint32_t>(group));
      SetActOrder(r, 9);
      TensorStore act_store, plain_store;
      PutCompressed(act_store, kP, r, symmetric);
      PutCompressed(plain_store, kP, WithoutActOrder(r, SortedColumns(r)), symmetric);
      auto act = Repack(act_store, CompressedJson(symmetric, group, /*actorder=*/true));
      auto plain = Repack(plain_store, CompressedJson(symmetric, group));
      ASSERT_TRUE(act.ok()) << act.status();
      ASSERT_TRUE(plain.ok()) << plain.status();
      ExpectSortedTwin(**act, **plain, r);
      EXPECT_EQ((*act)->Names(), (std::vector<std::string>{kW}));
    }
  }
}

// What q4_z holds exactly is a run of whole 32-column blocks per group, so groups of uneven
// sizes (multiples of 32) load too; a g_idx in input order keeps no column order.
TEST(HfActOrderTest, UnevenWholeBlockGroupsAndSortedGIdx) {
  Int4Reference r = RandomReference(16, 128, 32, false, 41, 1);
  r.g_idx.resize(128);
  for (int64_t k = 0; k < 128; ++k) r.g_idx[static_cast<size_t>(k)] = k % 2 == 0 ? 0 : (k < 64 ? 2 : 3);  // 64, 0, 32, 32
  TensorStore store;
  PutGptq(store, kP, r, /*v2=*/false);
  auto source = Repack(store, GptqJson(32, false, false, true));
  ASSERT_TRUE(source.ok()) << source.status();
  ExpectLossless(**source, kW, r);
  EXPECT_EQ((*source)->Find(kW)->column_order.size(), 128u);

  Int4Reference in_order = RandomReference(16, 128, 32, true, 43, 1);
  in_order.g_idx = {};
  for (int64_t k = 0; k < 128; ++k) in_order.g_idx.push_back(k < 96 ? 0 : 3);  // 96, 0, 0, 32: no reordering
  TensorStore store2;
  PutGptq(store2, kP, in_order, false);
  auto source2 = Repack(store2, GptqJson(32, true, false, true));
  ASSERT_TRUE(source2.ok()) << source2.status();
  ExpectLossless(**source2, kW, in_order);
  EXPECT_TRUE((*source2)->Find(kW)->column_order.empty());
}

TEST(HfActOrderTest, RefusesWhatQ4_ZCannotHoldByName) {
  {  // A group index past the scales' groups.
    Int4Reference r = RandomReference(16, 128, 32, true, 51, 1);
    SetActOrder(r, 1);
    r.g_idx[7] = 4;
    TensorStore store;
    PutGptq(store, kP, r, false);
    const std::string error = ErrorOf(store, GptqJson(32, true, false, true));
    EXPECT_NE(error.find("tensor '" + kP + ".g_idx': g_idx[7] = 4 is not one of the 4 groups"), std::string::npos)
        << error;
  }
  {  // Negative, compressed-tensors.
    Int4Reference r = RandomReference(16, 128, 32, true, 52);
    SetActOrder(r, 2);
    TensorStore store;
    PutCompressed(store, kP, r, true);
    Ints(*const_cast<TensorView*>(store.Find(kP + ".weight_g_idx")))[3] = -1;
    const std::string error = ErrorOf(store, CompressedJson(true, 32, true));
    EXPECT_NE(error.find(kP + ".weight_g_idx': g_idx[3] = -1"), std::string::npos) << error;
  }
  {  // A group of 48 columns would share a q4_z block with another group.
    Int4Reference r = RandomReference(16, 128, 32, true, 53, 1);
    SetActOrder(r, 3);
    for (size_t k = 0; k < 128; ++k) r.g_idx[k] = r.g_idx[k] == 1 && k % 2 == 0 ? 0 : r.g_idx[k];
    TensorStore store;
    PutGptq(store, kP, r, false);
    const std::string error = ErrorOf(store, GptqJson(32, true, false, true));
    EXPECT_NE(error.find(kP + ".g_idx': act-order group 0 has"), std::string::npos) << error;
    EXPECT_NE(error.find("whole 32-column blocks"), std::string::npos) << error;
  }
  {  // g_idx of the wrong length.
    TensorStore store;
    PutGptq(store, kP, RandomReference(16, 64, 32, true, 54, 1), false, /*with_g_idx=*/false);
    store.Allocate(kP + ".g_idx", DType::kI32, {32});
    EXPECT_NE(ErrorOf(store, GptqJson(32, true, false, true)).find(kP + ".g_idx' has shape [32]"), std::string::npos);
  }
}

}  // namespace
}  // namespace pagellm
