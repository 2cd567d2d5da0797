#include "model/hybrid/gdn_delta_rule.h"

#include <omp.h>

#include <cmath>
#include <vector>

#include "backend/cpu/cpu_isa.h"
#include "common/status.h"
#include "model/hybrid/gdn_delta_rule_kernels.h"

namespace pagellm {
namespace {

using gdn_internal::HeadArgs;
using gdn_internal::MakeHeadArgs;

bool UseAvx512() {
  static const bool use = DetectCpuIsa() == CpuIsa::kAvx512;
  return use;
}

void RunRecurrentHead(const HeadArgs& a) {
  if (UseAvx512()) {
    gdn_internal::RecurrentHeadAvx512(a);
  } else {
    gdn_internal::RecurrentHeadAvx2(a);
  }
}

}  // namespace

namespace gdn_internal {

HeadArgs MakeHeadArgs(const GdnDims& dims, const GdnInputs& in, int64_t row0, int64_t num_tokens, int64_t head,
                      float* state, float* out) {
  const int64_t dk = dims.k_head_dim, dv = dims.v_head_dim, nv = dims.num_v_heads;
  const int64_t kh = dims.KeyHeadOf(head);
  HeadArgs a;
  a.num_tokens = num_tokens;
  a.dk = dk;
  a.dv = dv;
  a.q = in.q + row0 * in.q_stride + kh * dk;
  a.k = in.k + row0 * in.k_stride + kh * dk;
  a.v = in.v + row0 * in.v_stride + head * dv;
  a.q_stride = in.q_stride;
  a.k_stride = in.k_stride;
  a.v_stride = in.v_stride;
  a.beta = in.beta + row0 * nv + head;
  a.g = in.g + row0 * nv + head;
  a.gate_stride = nv;
  a.out = out + row0 * nv * dv + head * dv;
  a.out_stride = nv * dv;
  a.state = state + head * dk * dv;
  return a;
}

}  // namespace gdn_internal

void GdnRecurrent(const GdnDims& dims, const GdnInputs& inputs, float* state, float* out) {
  const int64_t nv = dims.num_v_heads;
#pragma omp parallel for schedule(static) if (nv > 1)
  for (int64_t h = 0; h < nv; ++h) RunRecurrentHead(MakeHeadArgs(dims, inputs, 0, inputs.num_tokens, h, state, out));
}

void GdnDecodeBatch(const GdnDims& dims, const GdnInputs& inputs, std::span<float* const> states, float* out) {
  const int64_t nv = dims.num_v_heads, num_seqs = inputs.num_tokens;
  PAGELLM_CHECK(static_cast<int64_t>(states.size()) == num_seqs);
#pragma omp parallel for schedule(static) if (num_seqs * nv > 1)
  for (int64_t item = 0; item < num_seqs * nv; ++item) {
    const int64_t s = item / nv, h = item % nv;
    RunRecurrentHead(MakeHeadArgs(dims, inputs, s, 1, h, states[s], out));
  }
}

int64_t GdnChunkedScratchFloats(const GdnDims& dims) {
  return gdn_internal::ChunkedHeadScratchFloats(dims.k_head_dim, dims.v_head_dim);
}

int GdnMaxThreads() { return omp_get_max_threads(); }

void GdnChunked(const GdnDims& dims, const GdnInputs& inputs, float* state, float* out,
                std::span<float> scratch, int64_t chunk_size) {
  const int64_t nv = dims.num_v_heads, per_thread = GdnChunkedScratchFloats(dims);
  PAGELLM_CHECK(static_cast<int64_t>(scratch.size()) >= per_thread * GdnMaxThreads());
  PAGELLM_CHECK(chunk_size > 0 && chunk_size % 16 == 0 && chunk_size <= gdn_internal::kChunk);
  if (inputs.num_tokens == 0) return;
  const bool avx512 = UseAvx512();
#pragma omp parallel for schedule(static) if (nv > 1)
  for (int64_t h = 0; h < nv; ++h) {
    float* my_scratch = scratch.data() + omp_get_thread_num() * per_thread;
    HeadArgs a = MakeHeadArgs(dims, inputs, 0, inputs.num_tokens, h, state, out);
    a.chunk_size = chunk_size;
    if (avx512) {
      gdn_internal::ChunkedHeadAvx512(a, my_scratch);
    } else {
      gdn_internal::ChunkedHeadAvx2(a, my_scratch);
    }
  }
}

}  // namespace pagellm
