// Quantizers of IQ4_NL and IQ4_XS (4-bit codes into the 16 non-uniform levels
// kIq4NlValues) without an importance matrix, producing the bytes llama-quantize writes:
// ggml_quantize_chunk's quantize_iq4_nl / quantize_iq4_xs, i.e. quantize_row_iq4_nl_impl
// with 7 trial scales either side. (quantize_row_iq4_nl_ref, which skips the trials, gives
// other bytes and is not what llama-quantize runs.)
//
//   std::vector<BlockIq4Xs> blocks(n / 256);
//   QuantizeRowIq4Xs(x, n, blocks.data());
//
// Each sub-block of 32 is fitted alone: d = max / 127 maps the value of largest magnitude onto
// the level -127, each x goes to its nearest level, and 15 trial scales (-127 + t) / max,
// t = -7..7, keep the best x^2-weighted least-squares d. IQ4_NL stores that d (fp16) and
// recodes with it. IQ4_XS codes the 8 d's as 6-bit ints against d_block = -max_d / 32 and
// recodes each sub-block with its coded scale. Preconditions: n % 32 == 0 (IQ4_NL),
// n % 256 == 0 (IQ4_XS).
#pragma once

#include <cstdint>

#include "tensor/kquant_blocks.h"

namespace pagellm {

void QuantizeRowIq4Nl(const float* x, int64_t n, BlockIq4Nl* out);
void QuantizeRowIq4Xs(const float* x, int64_t n, BlockIq4Xs* out);

}  // namespace pagellm
