// Internals of RunKQuantPacked (kquant_packed.h): the quantized activations and the
// per-ISA kernels that kquant_packed.cc drives over OpenMP work items.
#pragma once

#include <algorithm>
#include <cstdint>

#include "backend/cpu/kquant_packed.h"

namespace pagellm::kquant_packed {

// Byte offsets inside one record (see kquant_packed.h).
inline constexpr int64_t kQ4_KSc = 2048, kQ4_KMn = 2176, kQ4_KD = 2304, kQ4_KDmin = 2336, kQ5_KQh = 2368;
inline constexpr int64_t kQ6_KQh = 2048, kQ6_KSc = 3072, kQ6_KD = 3328;
inline constexpr int64_t kQ5_0Qh = 256, kQ4_0D = 256, kQ5_0D = 320;  // also Q4_1's d, Q5_1's qh and d
inline constexpr int64_t kQ4_1M = 288, kQ5_1M = 352;
inline constexpr int64_t kIq4XsSc = 2048, kIq4XsD = 2176;
inline constexpr int64_t kQ4_ZParamZ = 32;  // z [16] after d [16] fp16 in a group's params

// IQ4_NL's table plus 128, as unsigned bytes for vpdpbusd.
alignas(16) inline constexpr uint8_t kIq4NlPlus128[16] = {1,   24,  45,  63,  79,  93,  106, 118,
                                                          129, 141, 153, 166, 181, 197, 217, 241};

// 32-value block records: whether the codes have a plane of 5th bits, whether the block is
// affine (an fp16 offset m per row), and the offsets of the fp16 d and m.
inline constexpr bool Block32HasFifthBit(DType dtype) { return dtype == DType::kQ5_0 || dtype == DType::kQ5_1; }
inline constexpr bool Block32IsAffine(DType dtype) { return dtype == DType::kQ4_1 || dtype == DType::kQ5_1; }
inline constexpr int64_t Block32D(DType dtype) { return Block32HasFifthBit(dtype) ? kQ5_0D : kQ4_0D; }
inline constexpr int64_t Block32M(DType dtype) { return dtype == DType::kQ5_1 ? kQ5_1M : kQ4_1M; }

struct PackedActs {
  const int8_t* q = nullptr;     // [num_rows, k]
  const float* d = nullptr;      // [num_rows, nsb]
  const int32_t* aux = nullptr;  // [num_rows, nsb, 16]: Q6_K -32 * bsum16; Q4_K / Q5_K the 4
                                 // pairs (bsum32 of sub 2p | bsum32 of sub 2p + 1 << 16);
                                 // IQ4_XS -128 * bsum32 of the 8 sub-blocks;
                                 // 32-value blocks: [num_rows, nsb] -128 * sum (q8_0 acts)
  int64_t num_rows = 0, k = 0, nsb = 0;
  // Where the strips' results go: column c of row m at y[m * ldy + c - col0] (ldy = w.n and
  // col0 = 0, or one part of a stacked weight: its n and first column).
  int64_t ldy = 0, col0 = 0;
};

// QuantizeRowQ8_K (backend/kquant_gemm.h) bit for bit, with AVX-512.
// The records of strips [s_begin, s_end) of w as runs of consecutive bytes: `runs` runs of
// run_bytes, `stride` apart (KQuantPackedWeight::record interleaves a group's 4 strips super-
// block after super-block). Strips past the first's group are left out: a prefetch hint.
struct RecordRuns {
  const uint8_t* first = nullptr;  // null: none
  int64_t run_bytes = 0, stride = 0, runs = 0;
  int64_t bytes() const { return run_bytes * runs; }
};
inline RecordRuns StripRecords(const KQuantPackedWeight& w, int64_t s_begin, int64_t s_end) {
  if (s_begin >= s_end) return {};
  const int64_t group = s_begin / kKQuantGroupStrips * kKQuantGroupStrips;
  const int64_t width = std::min(kKQuantGroupStrips, w.num_strips - group);
  const int64_t strips = std::min(s_end, group + width) - s_begin;
  return {.first = w.record(s_begin, 0), .run_bytes = strips * w.record_bytes, .stride = width * w.record_bytes,
          .runs = w.nsb};
}

// The 64-byte lines that hold RecordRuns, in order, one per Next() (null after the last).
class RecordLines {
 public:
  explicit RecordLines(const RecordRuns& runs) : runs_(runs) { StartRun(); }
  // At most this many lines: each run's bytes plus one line where a run starts mid-line.
  int64_t max_lines() const { return runs_.bytes() / 64 + 2 * runs_.runs; }
  const uint8_t* Next() {
    if (run_ >= runs_.runs) return nullptr;
    const uint8_t* line = line_;
    line_ += 64;
    if (line_ >= run_end_) {
      ++run_;
      StartRun();
    }
    return line;
  }

 private:
  void StartRun() {
    if (run_ >= runs_.runs) return;
    const uint8_t* begin = runs_.first + run_ * runs_.stride;
    line_ = reinterpret_cast<const uint8_t*>(reinterpret_cast<uintptr_t>(begin) & ~uintptr_t{63});
    run_end_ = begin + runs_.run_bytes;
  }
  RecordRuns runs_;
  int64_t run_ = 0;
  const uint8_t* line_ = nullptr;
  const uint8_t* run_end_ = nullptr;
};

// Batches of up to kLookaheadRows activation rows run their GEMM with lookahead: each thread
// claims its next work item before it runs the current one (ShareItemsClaimingAhead), and
// the tiles that compute from the cache prefetch the records it reads next (the next item's,
// or the next two strips' where the GEMM unpacks codes), so the memory works while the
// vector units do. Above, an item's compute hides its own reads and the prefetched lines
// only crowd the caches. Measured with decode_pass_bench --rows M (a Qwen3-0.6B Q4_K_M
// model's stacked linears, 28 layers, and its Q6_K lm_head; 2-core Zen 5, 2 threads; time
// with / without, in-process alternating passes): M = 5-16 layers 0.85-0.89, lm_head
// 0.82-0.88; M = 32 0.94 / 0.88; 48 0.96 / 0.96; 64 0.94 / 0.98; 128 1.06 / 1.04; 512
// 1.05-1.11 / 1.09-1.13. Per type at M = 16: Q4_K 0.85, Q5_K 0.71, Q6_K 0.80, IQ4_XS 0.88,
// Q4_0 0.90.
inline constexpr int64_t kLookaheadRows = 64;
struct Lookahead {
  bool on = false;                        // whether the tiles prefetch what comes next
  const KQuantPackedWeight* w = nullptr;  // the thread's next item (null: none)
  int64_t s_begin = 0, s_end = 0;
};

void QuantizeRowQ8_KAvx512(const float* x, int64_t k, int8_t* q, float* d, int32_t* bsum16);

// y[:, 16 * s_begin .. min(n, 16 * s_end)) for every activation row.
void StripsAvx512(const PackedActs& x, const KQuantPackedWeight& w, int64_t s_begin, int64_t s_end,
                  const float* bias, float* y, const Lookahead& next);
void StripsAvx2(const PackedActs& x, const KQuantPackedWeight& w, int64_t s_begin, int64_t s_end,
                const float* bias, float* y);
// Strips [s_begin, s_end) of w with one byte per weight (Q6_K's top bits and Q5's 5th bits
// joined, IQ4 codes as table value + 128), [k / 4][16 rows][4] per strip (strip i at
// i * 16 * w.k): the B layout of tdpbsud and the operand of one vpdpbusd per 4 columns. In a
// buffer of the calling thread's, valid until its next call. AVX-512.
const uint8_t* UnpackStripsAvx512(const KQuantPackedWeight& w, int64_t s_begin, int64_t s_end);

// The same on AMX tiles (kquant_packed_amx.cc), bit for bit StripsAvx512; x.q padded with
// rows to a multiple of 16. model_tiles: on the software model of the tiles (amx_tiles.h),
// for machines without AMX (tests); otherwise needs CpuSupportsAmxInt8().
void StripsAmx(const PackedActs& x, const KQuantPackedWeight& w, int64_t s_begin, int64_t s_end, const float* bias,
               float* y, bool model_tiles);

}  // namespace pagellm::kquant_packed
