#include "gguf/gguf_quantize.h"

#include <cstring>

#include "common/status.h"
#include "gguf/gguf_quantize_blocks32.h"
#include "gguf/gguf_quantize_iq4.h"
#include "gguf/gguf_quantize_kquants.h"
#include "gguf/gguf_quants.h"
#include "tensor/half.h"

namespace pagellm {

void QuantizeRow(GgmlType type, const float* x, int64_t n, std::byte* out) {
  PAGELLM_CHECK(n % GgmlBlockSize(type) == 0);
  switch (type) {
    case GgmlType::kF32: std::memcpy(out, x, static_cast<size_t>(n) * sizeof(float)); return;
    case GgmlType::kF16:
    case GgmlType::kBF16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = type == GgmlType::kF16 ? F32ToF16(x[i]) : F32ToBf16(x[i]);
        std::memcpy(out + 2 * i, &h, sizeof(h));
      }
      return;
    case GgmlType::kQ8_0: QuantizeQ8_0(x, n, out); return;
    // The block structs are the exact byte layouts, and `out` is only ever byte-addressed.
    case GgmlType::kQ4_0: QuantizeRowQ4_0(x, n, reinterpret_cast<BlockQ4_0*>(out)); return;
    case GgmlType::kQ5_0: QuantizeRowQ5_0(x, n, reinterpret_cast<BlockQ5_0*>(out)); return;
    case GgmlType::kQ4_1: QuantizeRowQ4_1(x, n, reinterpret_cast<BlockQ4_1*>(out)); return;
    case GgmlType::kQ5_1: QuantizeRowQ5_1(x, n, reinterpret_cast<BlockQ5_1*>(out)); return;
    case GgmlType::kQ4_K: QuantizeRowQ4_K(x, n, reinterpret_cast<BlockQ4_K*>(out)); return;
    case GgmlType::kQ5_K: QuantizeRowQ5_K(x, n, reinterpret_cast<BlockQ5_K*>(out)); return;
    case GgmlType::kQ6_K: QuantizeRowQ6_K(x, n, reinterpret_cast<BlockQ6_K*>(out)); return;
    case GgmlType::kIQ4_NL: QuantizeRowIq4Nl(x, n, reinterpret_cast<BlockIq4Nl*>(out)); return;
    case GgmlType::kIQ4_XS: QuantizeRowIq4Xs(x, n, reinterpret_cast<BlockIq4Xs*>(out)); return;
  }
  PAGELLM_CHECK(false && "GgmlType value outside the enum");
}

void RoundToFloatType(GgmlType type, float* x, int64_t n) {
  PAGELLM_CHECK(type == GgmlType::kF32 || type == GgmlType::kF16 || type == GgmlType::kBF16);
  if (type == GgmlType::kF16) {
    for (int64_t i = 0; i < n; ++i) x[i] = F16ToF32(F32ToF16(x[i]));
  } else if (type == GgmlType::kBF16) {
    for (int64_t i = 0; i < n; ++i) x[i] = Bf16ToF32(F32ToBf16(x[i]));
  }
}

}  // namespace pagellm
