// LinearOutput: one part of a stacked linear's output. Weights that read the same input
// (q|k|v, gate|up) are packed as one weight; the packed kernels (kquant_packed.h,
// q8_0_packed.h) write the columns of its next n rows straight into y [M, n].
//
//   SplitIntoItems(outs, /*strip_rows=*/16, /*strips_per_item=*/4, w.n, &items);
//   // items[i]: strips [s_begin, s_end) of outs[out], whose column 0 is w's column col0
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "backend/cpu/share_items.h"  // ShareItems, used with the items below

namespace pagellm {

struct LinearOutput {
  float* y = nullptr;
  int64_t n = 0;
};

// A work item of one packed-linear call: strips [s_begin, s_end) of w, all in output `out`.
struct PartItem {
  int32_t out = 0;
  int64_t col0 = 0;  // the output's first column of w
  int64_t s_begin = 0, s_end = 0;
};

// Items of up to strips_per_item strips of strip_rows rows each, in order, none across two
// outputs. Checks that every output but the last is whole strips and that the outputs' n
// sum to total_n (w's rows).
void SplitIntoItems(std::span<const LinearOutput> outs, int64_t strip_rows, int64_t strips_per_item,
                    int64_t total_n, std::vector<PartItem>* items);

}  // namespace pagellm
