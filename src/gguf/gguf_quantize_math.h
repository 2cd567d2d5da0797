// Scalar helpers shared by the GGUF quantizers (gguf_quantize_*.cc): llama.cpp's rounding
// trick and the all-zero threshold, with the same results bit for bit.
//
//   int q = QuantNearestInt(iscale * x);  // as ggml-quants.c's nearest_int
//
// Byte identity with llama.cpp needs every float operation of its reference quantizers in
// the same order and precision. Our baseline flags include -mfma and GCC contracts a*b+c
// into one fused multiply-add by default (-ffp-contract=fast, also with -std=c++20), which
// rounds once instead of twice; llama.cpp's libggml-base is built without FMA, so its
// quantizers always round the product. The quantizer sources are therefore compiled with
// -ffp-contract=off (src/gguf/CMakeLists.txt); the libggml cross-check
// (tests/gguf/check_quantizers_with_libggml.py) fails if that is lost.
#pragma once

#include <cstdint>
#include <cstring>

namespace pagellm {

// ggml's GROUP_MAX_EPS: a group whose largest |x| is below this is treated as all zeros.
inline constexpr float kQuantGroupMaxEps = 1e-15f;

// Round to nearest, ties to even, by adding 1.5 * 2^23 and reading the mantissa: exact for
// |v| <= 2^22 - 1 (the quantizers stay far inside that); for larger or NaN inputs it returns
// what llama.cpp's nearest_int returns, so odd inputs still give llama.cpp's bytes.
inline int QuantNearestInt(float v) {
  const float biased = v + 12582912.0f;
  int32_t bits;
  std::memcpy(&bits, &biased, sizeof(bits));
  return (bits & 0x007fffff) - 0x00400000;
}

}  // namespace pagellm
