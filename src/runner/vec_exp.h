// Vectorised exp for softmax-style weights over a whole vocabulary row.
//
// glibc's scalar expf costs ~1 ms over 151,936 logits; this AVX2 version (Cephes
// polynomial, max relative error ~2e-7, i.e. a couple of float ulps) costs ~0.1 ms.
// Inputs below -87.3 (including -inf) give exactly 0; the sampler only ever calls it
// with x <= 0 (logit minus row maximum).
//
//   // weights[i] = exp(z[i] / 0.7 - z_max / 0.7), min_p 0.05 applied, sum returned
//   double total = ExpWeights(z, n, 0.7f, z_max / 0.7f, 0.05f, weights);
#pragma once

#include <cstdint>

namespace pagellm {

// out[i] = exp(z[i] / temperature - shift), zeroed where it is < min_weight.
// Returns sum(out) in double. z and out may alias. Precondition: temperature > 0.
double ExpWeights(const float* z, int32_t n, float temperature, float shift, float min_weight,
                  float* out);

// sum_i exp(z[i] - shift) in double (for log-softmax normalisers).
double SumExp(const float* z, int32_t n, float shift);

}  // namespace pagellm
