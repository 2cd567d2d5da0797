// ceilings: the machine's ceilings for the CPU benchmark (bench/cpu/run.py), measured in
// the same run as the engines so they see the same load.
//   gcc -O2 -march=native -fopenmp ceilings.c -o ceilings && OMP_NUM_THREADS=2 ./ceilings
// Prints one JSON object:
//   read_gbps   DRAM read bandwidth: sum of a 1 GiB buffer (far larger than L3), median of 5
//   triad_gbps  STREAM-style triad a = b + s*c over 3 x 256 MiB (bytes counted: 3 per element x 4 B)
//   bf16_gflops vdpbf16ps peak (64 flops per instruction, 16 independent chains per thread),
//               the compute ceiling of bf16 prefill when AMX is not available (0 without AVX512-BF16)
//   vnni_gmacs  vpdpbusd peak in int8 multiply-adds (64 per instruction, 24 independent chains
//               per thread: 16 reached 0.9 of it on a Zen 5, 8 only 0.55), the compute ceiling
//               of the int8 and k-quant kernels' batches and prefill without AMX (0 without
//               AVX512-VNNI)
//   amx         whether the kernel grants AMX tile data (arch_prctl ARCH_REQ_XCOMP_PERM)
#include <immintrin.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double Now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int CmpDouble(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static double Median(double* v, int n) {
  qsort(v, (size_t)n, sizeof(double), CmpDouble);
  return v[n / 2];
}

// Sum of n floats with AVX2 loads (the kernels' GEMVs are read-bound the same way).
static double ReadGbps(const float* buf, int64_t n) {
  double t0 = Now();
  float total = 0.0f;
#pragma omp parallel for schedule(static) reduction(+ : total)
  for (int64_t c = 0; c < n / 4096; ++c) {
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    const float* p = buf + c * 4096;
    for (int i = 0; i < 4096; i += 16) {
      acc0 = _mm256_add_ps(acc0, _mm256_loadu_ps(p + i));
      acc1 = _mm256_add_ps(acc1, _mm256_loadu_ps(p + i + 8));
    }
    float tmp[8];
    _mm256_storeu_ps(tmp, _mm256_add_ps(acc0, acc1));
    for (int i = 0; i < 8; ++i) total += tmp[i];
  }
  double dt = Now() - t0;
  if (total == 12345.0f) printf(" ");  // keep the sum alive
  return (double)n * 4.0 / dt / 1e9;
}

static double TriadGbps(float* a, const float* b, const float* c, int64_t n) {
  double t0 = Now();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) a[i] = b[i] + 3.0f * c[i];
  return (double)n * 12.0 / (Now() - t0) / 1e9;
}

static double Bf16Gflops(void) {
#ifdef __AVX512BF16__
  const int64_t iters = 20000000;
  double t0 = Now();
  float sink = 0.0f;
#pragma omp parallel reduction(+ : sink)
  {
    __m512 acc[16];
    for (int i = 0; i < 16; ++i) acc[i] = _mm512_setzero_ps();
    __m512bh a = (__m512bh)_mm512_set1_epi16(0x3f80), b = (__m512bh)_mm512_set1_epi16(0x3c00);
    for (int64_t it = 0; it < iters / 16; ++it) {
      for (int i = 0; i < 16; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
    }
    for (int i = 1; i < 16; ++i) acc[0] = _mm512_add_ps(acc[0], acc[i]);
    sink += _mm512_reduce_add_ps(acc[0]);
  }
  double dt = Now() - t0;
  if (sink == 12345.0f) printf(" ");
  return (double)omp_get_max_threads() * (double)(iters / 16 * 16) * 64.0 / dt / 1e9;
#else
  return 0.0;
#endif
}

static double VnniGmacs(void) {
#ifdef __AVX512VNNI__
  const int64_t iters = 20000000;
  double t0 = Now();
  int sink = 0;
#pragma omp parallel reduction(+ : sink)
  {
    __m512i acc[24];
    for (int i = 0; i < 24; ++i) acc[i] = _mm512_setzero_si512();
    __m512i a = _mm512_set1_epi8(1), b = _mm512_set1_epi8(2);
    for (int64_t it = 0; it < iters / 24; ++it) {
      for (int i = 0; i < 24; ++i) acc[i] = _mm512_dpbusd_epi32(acc[i], a, b);
      __asm__ volatile("" : "+v"(a), "+v"(b));  // no hoisting: every iteration issues 24
    }
    for (int i = 1; i < 24; ++i) acc[0] = _mm512_add_epi32(acc[0], acc[i]);
    sink += _mm512_reduce_add_epi32(acc[0]);
  }
  double dt = Now() - t0;
  if (sink == 12345) printf(" ");
  return (double)omp_get_max_threads() * (double)(iters / 24 * 24) * 64.0 / dt / 1e9;
#else
  return 0.0;
#endif
}

int main(void) {
  const int64_t n_read = (int64_t)1 << 28;  // 1 GiB of floats
  float* buf = aligned_alloc(64, (size_t)n_read * 4);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n_read; ++i) buf[i] = 1.0f;  // first touch by the reading threads
  double read[5], triad[5];
  for (int r = 0; r < 5; ++r) read[r] = ReadGbps(buf, n_read);
  const int64_t n3 = n_read / 4;  // 3 x 256 MiB inside the same allocation
  for (int r = 0; r < 5; ++r) triad[r] = TriadGbps(buf, buf + n3, buf + 2 * n3, n3);
  free(buf);
  const double bf16 = Bf16Gflops();
  const double vnni = VnniGmacs();
  const int amx = syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XTILEDATA */) == 0;
  printf("{\"threads\": %d, \"read_gbps\": %.2f, \"triad_gbps\": %.2f, \"bf16_gflops\": %.1f, "
         "\"vnni_gmacs\": %.1f, \"amx\": %s}\n",
         omp_get_max_threads(), Median(read, 5), Median(triad, 5), bf16, vnni, amx ? "true" : "false");
  return 0;
}
