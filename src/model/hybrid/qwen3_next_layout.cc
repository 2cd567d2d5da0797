#include "model/hybrid/qwen3_next_layout.h"

namespace pagellm {

std::vector<int64_t> Qwen3NextQkvzSourceIndex(const GdnDims& dims) {
  const int64_t nk = dims.num_k_heads, dk = dims.k_head_dim, dv = dims.v_head_dim, r = dims.heads_ratio();
  const int64_t group = 2 * dk + 2 * r * dv;  // one key group's row in the fused output
  std::vector<int64_t> src;
  src.reserve(dims.conv_dim() + dims.value_dim());
  for (int64_t g = 0; g < nk; ++g)  // q
    for (int64_t i = 0; i < dk; ++i) src.push_back(g * group + i);
  for (int64_t g = 0; g < nk; ++g)  // k
    for (int64_t i = 0; i < dk; ++i) src.push_back(g * group + dk + i);
  for (int64_t part = 0; part < 2; ++part) {  // v, then z; value head g*r + j
    for (int64_t g = 0; g < nk; ++g)
      for (int64_t i = 0; i < r * dv; ++i) src.push_back(g * group + 2 * dk + part * r * dv + i);
  }
  return src;
}

std::vector<int64_t> Qwen3NextBaSourceIndex(const GdnDims& dims) {
  const int64_t nk = dims.num_k_heads, r = dims.heads_ratio();
  std::vector<int64_t> src;
  src.reserve(2 * dims.num_v_heads);
  for (int64_t part = 0; part < 2; ++part)  // b, then a
    for (int64_t g = 0; g < nk; ++g)
      for (int64_t j = 0; j < r; ++j) src.push_back(g * 2 * r + part * r + j);
  return src;
}

void GatherColumns(const float* src, int64_t num_rows, const std::vector<int64_t>& source_index, float* dst) {
  const int64_t n = static_cast<int64_t>(source_index.size());
  for (int64_t t = 0; t < num_rows; ++t) {
    const float* s = src + t * n;
    float* d = dst + t * n;
    for (int64_t f = 0; f < n; ++f) d[f] = s[source_index[f]];
  }
}

}  // namespace pagellm
