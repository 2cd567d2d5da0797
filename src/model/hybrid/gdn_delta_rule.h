// The gated delta rule of a GDN layer (docs/qwen-architectures.md §4.4, §4.5): the
// recurrent form for decode and the chunked (WY / UT-transform, C = 64) form for prefill.
// Both keep the per-sequence state in fp32 [nv, dk, dv] (HF/FLA order: head, key, value)
// and continue it exactly, so prefill(a) + prefill(b) == prefill(a + b) and
// prefill(n) + decode(1) x m == prefill(n + m) up to fp32 rounding.
//
// Kernels are allocation-free (the chunked form takes caller scratch), SIMD over dv
// (AVX2, or AVX-512 when the CPU backend's DetectCpuIsa() says so) and parallel over
// value heads (OpenMP). Value head j reads q/k head dims.KeyHeadOf(j).
//
//   std::vector<float> scratch(GdnChunkedScratchFloats(dims) * GdnMaxThreads());
//   GdnChunked(dims, inputs, state, out, scratch);            // prefill, T tokens
//   GdnRecurrent(dims, one_token_inputs, state, out_row);     // decode, 1 token
//   GdnDecodeBatch(dims, batch_inputs, state_ptrs, out);      // 1 token x many seqs
#pragma once

#include <cstdint>
#include <span>

#include "model/hybrid/gdn_dims.h"
#include "model/hybrid/gdn_prepare.h"

namespace pagellm {

// Token-by-token recurrence over one sequence's inputs.num_tokens tokens.
//   state [nv, dk, dv] fp32, in/out (zeros for a fresh sequence)
//   out   [T, nv, dv]
void GdnRecurrent(const GdnDims& dims, const GdnInputs& inputs, float* state, float* out);

// One new token for each of inputs.num_tokens sequences: row s of q/k/v/beta/g belongs to
// sequence s, whose state is states[s] ([nv, dk, dv], in/out). out [num_seqs, nv, dv].
// Parallel over (sequence, value head) pairs.
void GdnDecodeBatch(const GdnDims& dims, const GdnInputs& inputs, std::span<float* const> states, float* out);

// Scratch floats per OpenMP thread for GdnChunked.
int64_t GdnChunkedScratchFloats(const GdnDims& dims);
// omp_get_max_threads(), so callers can size scratch without including omp.h.
int GdnMaxThreads();

// Chunked prefill of one sequence; same contract as GdnRecurrent.
// scratch: >= GdnChunkedScratchFloats(dims) * GdnMaxThreads() floats (CHECKed).
// chunk_size: C of §4.5, a multiple of 16 <= 64 (CHECKed). The result does not depend on
// it beyond fp32 rounding; the work per token grows with C (C^2 terms), and on this CPU
// C = 16 runs ~1.5x faster than the reference C = 64 (see gdn_bench).
void GdnChunked(const GdnDims& dims, const GdnInputs& inputs, float* state, float* out,
                std::span<float> scratch, int64_t chunk_size = kGdnChunkSize);

// Scalar reference twin of GdnRecurrent (obviously-correct loops of §4.4, fp32): the
// oracle the tests compare the SIMD and chunked kernels against.
void GdnRecurrentReference(const GdnDims& dims, const GdnInputs& inputs, float* state, float* out);

}  // namespace pagellm
