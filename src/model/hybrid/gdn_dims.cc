#include "model/hybrid/gdn_dims.h"

#include <fmt/format.h>

namespace pagellm {

Status ValidateGdnDims(const GdnDims& d) {
  if (d.num_k_heads <= 0 || d.num_v_heads <= 0 || d.k_head_dim <= 0 || d.v_head_dim <= 0) {
    return InvalidArgumentError(fmt::format("GDN dims must be positive (nk={}, nv={}, dk={}, dv={})",
                                            d.num_k_heads, d.num_v_heads, d.k_head_dim, d.v_head_dim));
  }
  if (d.num_v_heads % d.num_k_heads != 0) {
    return InvalidArgumentError(
        fmt::format("GDN value heads ({}) must be a multiple of key heads ({})", d.num_v_heads, d.num_k_heads));
  }
  for (int64_t dim : {d.k_head_dim, d.v_head_dim}) {
    if (dim % 16 != 0 || dim > kGdnMaxHeadDim) {
      return InvalidArgumentError(
          fmt::format("GDN head dim {} must be a multiple of 16 and at most {}", dim, kGdnMaxHeadDim));
    }
  }
  if (d.conv_kernel < 1 || d.conv_kernel > 8) {
    return InvalidArgumentError(fmt::format("GDN conv kernel {} must be in [1, 8]", d.conv_kernel));
  }
  return OkStatus();
}

}  // namespace pagellm
