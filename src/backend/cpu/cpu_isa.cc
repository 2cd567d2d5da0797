#include "backend/cpu/cpu_isa.h"

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
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

namespace {

// Linux's arch_prctl request for a dynamically enabled state component, and AMX's.
constexpr int kArchReqXcompPerm = 0x1023;
constexpr int kXfeatureXtiledata = 18;

bool AmxInt8InCpuAndOs() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  const bool amx_tile = (edx >> 24) & 1, amx_int8 = (edx >> 25) & 1;
  if (!amx_tile || !amx_int8) return false;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || !((ecx >> 27) & 1)) return false;  // OSXSAVE
  uint32_t xcr0_lo = 0, xcr0_hi = 0;
  asm volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  const uint64_t xcr0 = (static_cast<uint64_t>(xcr0_hi) << 32) | xcr0_lo;
  constexpr uint64_t kTileState = (1ull << 17) | (1ull << 18);  // XTILECFG, XTILEDATA
  return (xcr0 & kTileState) == kTileState;
}

}  // namespace

bool CpuSupportsAmxInt8() {
  static const bool supported = [] {
    if (!CpuSupportsAvx512Vnni() || !AmxInt8InCpuAndOs()) return false;
    // Without the permission the first tile instruction faults (SIGILL).
    if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) {
      PLOG_WARN("this CPU has AMX but Linux refused this process its tile state; using AVX-512 VNNI");
      return false;
    }
    return true;
  }();
  return supported;
}

bool AmxInt8Default() {
  const char* amx = std::getenv("PAGELLM_AMX");
  if (amx != nullptr && std::string_view(amx) == "0") return false;
  return DetectCpuInt8Isa() == CpuIsa::kAvx512 && CpuSupportsAmxInt8();
}

}  // namespace pagellm
