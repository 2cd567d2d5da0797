#include "backend/cpu/cpu_isa.h"

#include <cstdlib>
#include <string>

#include "backend/cpu/int8_gemv.h"  // CpuSupportsAvx512Vnni
#include "common/logging.h"

namespace pagellm {

std::string_view CpuIsaName(CpuIsa isa) { return isa == CpuIsa::kAvx512 ? "avx512" : "avx2"; }

bool CpuSupportsAvx512Bf16() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16");
}

CpuIsa DetectCpuIsa() {
  const bool has_avx512 = CpuSupportsAvx512Bf16();
  const char* env = std::getenv("PAGELLM_ISA");
  if (env != nullptr && *env != '\0') {
    std::string want(env);
    if (want == "avx2") return CpuIsa::kAvx2;
    if (want == "avx512") {
      if (has_avx512) return CpuIsa::kAvx512;
      PLOG_WARN("PAGELLM_ISA=avx512 but this CPU lacks AVX-512 BF16; using avx2");
      return CpuIsa::kAvx2;
    }
    PLOG_WARN("unknown PAGELLM_ISA='{}' (expected avx2 or avx512); auto-detecting", want);
  }
  return has_avx512 ? CpuIsa::kAvx512 : CpuIsa::kAvx2;
}

CpuIsa DetectCpuInt8Isa() {
  const char* env = std::getenv("PAGELLM_ISA");
  if (env != nullptr && std::string_view(env) == "avx2") return CpuIsa::kAvx2;
  return CpuSupportsAvx512Vnni() ? CpuIsa::kAvx512 : CpuIsa::kAvx2;
}

}  // namespace pagellm
