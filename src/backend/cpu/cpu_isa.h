// CpuIsa: which SIMD code path the CPU backend runs, chosen at run time.
//
// The whole project is compiled for the AVX2+FMA+F16C baseline; AVX-512 kernels are
// compiled per function (#pragma GCC target) and only called when cpuid says so.
// PAGELLM_ISA=avx2|avx512 forces a path (tests use it to exercise the baseline on
// AVX-512 machines); asking for avx512 on a CPU without it falls back to avx2.
//
//   CpuIsa isa = DetectCpuIsa();   // honours PAGELLM_ISA
#pragma once

#include <string_view>

namespace pagellm {

enum class CpuIsa {
  kAvx2,    // AVX2 + FMA + F16C
  kAvx512,  // AVX-512 F/BW/VL + BF16 (vdpbf16ps)
};

std::string_view CpuIsaName(CpuIsa isa);

// True when this CPU can run the kAvx512 kernels.
bool CpuSupportsAvx512Bf16();

// Best supported ISA, or the one PAGELLM_ISA asks for (if supported).
CpuIsa DetectCpuIsa();

// The int8 kernels' ISA (Q8_0, k-quants, Q4_Z, W8A8): kAvx512 needs AVX-512 VNNI only, not
// BF16, so a Xeon with VNNI but no BF16 (Cascade Lake, Ice Lake) runs vpdpbusd while its
// float/bf16 kernels stay AVX2. PAGELLM_ISA=avx2 forces the baseline here too.
CpuIsa DetectCpuInt8Isa();

// True when this CPU has AMX-INT8 (and AVX-512 VNNI), the OS enables the tile state in
// XCR0 and Linux granted this process its use (arch_prctl ARCH_REQ_XCOMP_PERM, asked once
// here): the k-quant kernels may then run batches on tiles (kquant_packed.h).
bool CpuSupportsAmxInt8();

// Whether the k-quant kernels use AMX for batches: CpuSupportsAmxInt8(), unless
// PAGELLM_AMX=0 (A/B runs) or PAGELLM_ISA=avx2.
bool AmxInt8Default();

}  // namespace pagellm
