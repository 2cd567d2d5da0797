// bf16 weights repacked once at load (CpuBackend::PrepareLinear) into strips that one
// kernel per ISA streams for every batch size: the decode GEMV (M <= 4) at memory
// bandwidth and the batched-decode / prefill GEMM near the vdpbf16ps (or FMA) peak.
//
// Layout. A strip is 16 consecutive weight rows (rows past N are zero). For strip s and
// column pair p (columns 2p, 2p + 1; a missing last column is zero):
//   data [s][p][16 rows][2]   bf16, exactly the checkpoint's values
// One 64-byte zmm load holds the pair of all 16 rows, so one vdpbf16ps against a
// broadcast pair of activations adds two products into 16 output lanes: no horizontal
// sums, no masks in the k loop, and each weight byte is read once per call for any M.
// Same 2 bytes per weight as the file.
//
// AVX2 (no vdpbf16ps) widens each pair with a shift and a mask and runs two fp32 FMAs.
//
// Numerics: each output accumulates its pairs in k order in one fp32 lane (odd element
// first, as vdpbf16ps does), so row m of the result does not depend on M or on which
// other rows share the call (batch invariant), then adds bias. AVX-512 rounds x to bf16
// (RNE) as the other AVX-512 bf16 paths do; AVX2 keeps x in fp32.
//
//   auto packed = Bf16PackedWeight::Pack(w, n, k);            // load time
//   RunBf16Packed(*packed, x, num_rows, bias, y, /*avx512=*/CpuSupportsAvx512Bf16());
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>

namespace pagellm {

inline constexpr int64_t kBf16PackRows = 16;  // weight rows per strip

struct Bf16PackedWeight {
  struct FreeDeleter {
    void operator()(void* p) const { std::free(p); }
  };
  int64_t n = 0, k = 0, num_pairs = 0, num_strips = 0;  // num_pairs = ceil(k / 2), num_strips = ceil(n / 16)
  std::unique_ptr<uint16_t, FreeDeleter> data;          // [num_strips][num_pairs][16][2], 64-byte aligned

  // Elements (bf16) from one strip to the next.
  int64_t strip_stride() const { return num_pairs * 2 * kBf16PackRows; }
  // Bytes of the array (the memory plan counts them).
  int64_t owned_bytes() const { return num_strips * strip_stride() * 2; }

  // w: bf16 [n, k] row-major. Strips are packed in parallel (OpenMP). Null when the
  // array cannot be allocated.
  static std::unique_ptr<Bf16PackedWeight> Pack(const uint16_t* w, int64_t n, int64_t k);
};

// y [M, N] = x [M, K] · W^T (+ bias [N], or null). avx512 needs CpuSupportsAvx512Bf16().
void RunBf16Packed(const Bf16PackedWeight& w, const float* x, int64_t num_rows, const float* bias, float* y,
                   bool avx512);

// The kernels' arithmetic in plain C++ (the test oracle): per output, fused adds of the
// pair products in k order, odd element first; x rounded to bf16 when round_x_to_bf16
// (the AVX-512 kernel) or kept in fp32 (AVX2).
void GemmBf16PackedReference(const uint16_t* w, int64_t n, int64_t k, const float* x, int64_t num_rows,
                             const float* bias, float* y, bool round_x_to_bf16);

}  // namespace pagellm
