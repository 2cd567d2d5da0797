// Test helpers for the hybrid (GDN) kernels: seeded random inputs in the shapes the
// kernels read, per-ISA drivers and error metrics. Test-only.
//
//   GdnTestData data = MakeRandomGdnData(dims, /*num_tokens=*/200, /*seed=*/7);
//   GdnRecurrentReference(dims, data.inputs(), state.data(), out.data());
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "backend/cpu/cpu_isa.h"
#include "model/hybrid/gdn_prepare.h"

namespace pagellm {

std::vector<float> RandomUniform(int64_t n, uint32_t seed, float lo, float hi);
float MaxAbsDiff(std::span<const float> a, std::span<const float> b);
float MaxAbs(std::span<const float> a);

// Delta-rule inputs of one sequence, contiguous rows: q [T, nk, dk] (l2-normalised and
// scaled by dk^-0.5), k [T, nk, dk] (l2-normalised), v [T, nv, dv] in [-1, 1],
// beta [T, nv] in (0, 1), g [T, nv] in [g_min, 0].
struct GdnTestData {
  GdnDims dims;
  int64_t num_tokens = 0;
  std::vector<float> q, k, v, beta, g;

  // Rows [t0, t0 + n) as kernel inputs.
  GdnInputs inputs(int64_t t0 = 0, int64_t n = -1) const;
};

GdnTestData MakeRandomGdnData(const GdnDims& dims, int64_t num_tokens, uint32_t seed, float g_min = -1.0f);

// GdnChunked / GdnRecurrent forced onto one ISA's kernels (head by head, serial).
void RunChunkedWithIsa(CpuIsa isa, const GdnDims& dims, const GdnInputs& in, float* state, float* out,
                       int64_t chunk_size = kGdnChunkSize);
void RunRecurrentWithIsa(CpuIsa isa, const GdnDims& dims, const GdnInputs& in, float* state, float* out);

// The ISAs this CPU can run (always kAvx2; kAvx512 when supported).
std::vector<CpuIsa> SupportedIsas();

}  // namespace pagellm
