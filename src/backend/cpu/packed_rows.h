// One weight row read back out of a packed copy (q8_0_packed.h, kquant_packed.h,
// bf16_packed.h). A tied lm_head is packed for the matmul, and its table also serves the
// embedding lookups: reading those rows from the packed copy lets the file's pages go,
// instead of holding the table twice (the Q6_K table of a Qwen3-0.6B Q4_K_M file is
// 122 MiB of its 373; a Qwen3.5-0.8B's 199 MiB).
//
// Bit for bit what the file's row gives (DequantizeRowKQuant, DequantizeRowQ8_0, or the
// bf16 value widened): the quantized types rebuild the file's blocks from the record and
// run the file's own dequantizer on them, so no second copy of its arithmetic exists.
//
//   if (PackedRowReadable(*packed)) DequantizePackedRow(*packed, token_id, out);
#pragma once

#include <cstdint>

#include "backend/cpu/bf16_packed.h"
#include "backend/cpu/kquant_packed.h"
#include "backend/cpu/q8_0_packed.h"

namespace pagellm {

// Q4_Z has no file blocks to rebuild (its (d, z) live per group); every GGUF type does.
inline bool PackedRowReadable(const KQuantPackedWeight& w) { return w.dtype != DType::kQ4_Z; }

// out [w.k] = row `row` (< w.n) of the original weight.
void DequantizePackedRow(const KQuantPackedWeight& w, int64_t row, float* out);
void DequantizePackedRow(const Q8_0PackedWeight& w, int64_t row, float* out);
void DequantizePackedRow(const Bf16PackedWeight& w, int64_t row, float* out);

}  // namespace pagellm
