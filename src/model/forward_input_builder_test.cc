#include "model/forward_input_builder.h"

#include <gtest/gtest.h>

#include <vector>

namespace pagellm {
namespace {

template <typename T>
std::vector<T> Vec(std::span<const T> s) {
  return {s.begin(), s.end()};
}

using I32 = std::vector<int32_t>;
using I64 = std::vector<int64_t>;

TEST(ForwardInputBuilderTest, SlotMappingCrossesBlockBoundaries) {
  ForwardInputBuilder builder(/*block_size=*/4);
  // Positions 2..7: two slots in block 7, then four in block 3.
  EXPECT_EQ(builder.AddSequence(I32{10, 11, 12, 13, 14, 15}, 2, I32{7, 3}, 1), 0);
  const ForwardInput in = builder.Build();
  EXPECT_EQ(Vec(in.token_ids), (I32{10, 11, 12, 13, 14, 15}));
  EXPECT_EQ(Vec(in.positions), (I32{2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(Vec(in.slot_mapping), (I64{30, 31, 12, 13, 14, 15}));
  EXPECT_EQ(Vec(in.seq_lens), (I32{8}));
  EXPECT_EQ(Vec(in.block_tables), (I32{7, 3}));
  EXPECT_EQ(in.max_blocks_per_seq, 2);
}

TEST(ForwardInputBuilderTest, SeveralSequencesBackToBack) {
  ForwardInputBuilder builder(/*block_size=*/16);
  EXPECT_EQ(builder.AddSequence(I32{1, 2, 3}, 0, I32{5}, 1), 0);   // a prefill chunk
  EXPECT_EQ(builder.AddSequence(I32{4}, 40, I32{1, 2, 9}, 1), 3);  // a decode row
  EXPECT_EQ(builder.AddSequence(I32{6, 7}, 17, I32{8, 6}, 0), 4);  // no logits
  EXPECT_EQ(builder.num_tokens(), 6);
  EXPECT_EQ(builder.num_seqs(), 3);
  const ForwardInput in = builder.Build();
  EXPECT_EQ(Vec(in.query_start_loc), (I32{0, 3, 4, 6}));
  EXPECT_EQ(Vec(in.seq_lens), (I32{3, 41, 19}));
  EXPECT_EQ(Vec(in.positions), (I32{0, 1, 2, 40, 17, 18}));
  EXPECT_EQ(Vec(in.slot_mapping), (I64{80, 81, 82, 9 * 16 + 8, 6 * 16 + 1, 6 * 16 + 2}));
  EXPECT_TRUE(in.state_slots.empty());
}

TEST(ForwardInputBuilderTest, BlockTablesPaddedToTheLongest) {
  ForwardInputBuilder builder(/*block_size=*/2);
  builder.AddSequence(I32{1}, 0, I32{4}, 1);
  builder.AddSequence(I32{1}, 4, I32{5, 6, 7}, 1);
  builder.AddSequence(I32{1}, 2, I32{8, 9}, 1);
  ForwardInput in = builder.Build();
  EXPECT_EQ(in.max_blocks_per_seq, 3);
  EXPECT_EQ(Vec(in.block_tables), (I32{4, 0, 0, 5, 6, 7, 8, 9, 0}));
  // A batch without blocks still has a table one block wide.
  builder.Clear();
  builder.AddSequence({}, 0, {}, 0);
  in = builder.Build();
  EXPECT_EQ(in.max_blocks_per_seq, 1);
  EXPECT_EQ(Vec(in.block_tables), (I32{0}));
}

TEST(ForwardInputBuilderTest, LogitsForTheLastRowsOfEachSequence) {
  ForwardInputBuilder builder(/*block_size=*/16);
  builder.AddSequence(I32{1, 2, 3, 4}, 0, I32{1}, 3);  // a verification: token + 2 drafts
  builder.AddSequence(I32{5, 6}, 0, I32{2}, 0);
  builder.AddSequence(I32{7, 8}, 0, I32{3}, 2);        // every row (prompt scoring)
  builder.AddSequence(I32{9}, 5, I32{4}, 1);
  EXPECT_EQ(Vec(builder.Build().logits_indices), (I32{1, 2, 3, 6, 7, 8}));
}

TEST(ForwardInputBuilderTest, StateSlotsPerSequence) {
  ForwardInputBuilder builder(/*block_size=*/16);
  builder.AddSequence(I32{1, 2}, 0, I32{1}, 1, /*state_slot=*/3);
  builder.AddSequence(I32{3}, 7, I32{2}, 1, /*state_slot=*/0);
  EXPECT_EQ(Vec(builder.Build().state_slots), (I32{3, 0}));
}

TEST(ForwardInputBuilderTest, ClearStartsOverWithoutReallocating) {
  ForwardInputBuilder builder(/*block_size=*/4);
  builder.AddSequence(I32{1, 2, 3}, 0, I32{1}, 1);
  builder.AddSequence(I32{4, 5}, 6, I32{2, 3}, 2);
  const ForwardInput first = builder.Build();
  builder.Clear();
  EXPECT_EQ(builder.num_tokens(), 0);
  EXPECT_EQ(builder.num_seqs(), 0);
  builder.AddSequence(I32{9}, 5, I32{6, 7}, 1);
  const ForwardInput second = builder.Build();
  EXPECT_EQ(Vec(second.query_start_loc), (I32{0, 1}));
  EXPECT_EQ(Vec(second.slot_mapping), (I64{29}));
  EXPECT_EQ(Vec(second.block_tables), (I32{6, 7}));
  EXPECT_EQ(Vec(second.logits_indices), (I32{0}));
  // The arrays kept their storage: a warm builder does not allocate.
  EXPECT_EQ(second.token_ids.data(), first.token_ids.data());
  EXPECT_EQ(second.slot_mapping.data(), first.slot_mapping.data());
  EXPECT_EQ(second.block_tables.data(), first.block_tables.data());
}

}  // namespace
}  // namespace pagellm
