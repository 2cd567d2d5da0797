#include "backend/cpu/linear_output.h"

#include <algorithm>

#include "common/status.h"

namespace pagellm {

void SplitIntoItems(std::span<const LinearOutput> outs, int64_t strip_rows, int64_t strips_per_item,
                    int64_t total_n, std::vector<PartItem>* items) {
  items->clear();
  int64_t col0 = 0;
  for (size_t o = 0; o < outs.size(); ++o) {
    PAGELLM_CHECK(col0 % strip_rows == 0);  // every output but the last is whole strips
    const int64_t s_end = (col0 + outs[o].n + strip_rows - 1) / strip_rows;
    for (int64_t s = col0 / strip_rows; s < s_end; s += strips_per_item) {
      items->push_back({static_cast<int32_t>(o), col0, s, std::min(s_end, s + strips_per_item)});
    }
    col0 += outs[o].n;
  }
  PAGELLM_CHECK(col0 == total_n);
}

}  // namespace pagellm
