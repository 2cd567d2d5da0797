#include "backend/cpu/kquant_packed.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <type_traits>
#include <vector>

#include "backend/cpu/kquant_packed_kernels.h"
#include "backend/cpu/q8_0_packed_kernels.h"
#include "backend/int8_quant.h"
#include "backend/kquant_gemm.h"
#include "tensor/half.h"
#include "tensor/kquant_blocks.h"

namespace pagellm {
namespace {

using kquant_packed::PackedActs;

// Strips per OpenMP work item (as the Q8_0 packed kernel: a GEMV item is a 4-strip tile).
constexpr int64_t kStripsPerItem = 4;

inline int Code(const BlockQ4_K& b, int i) { return Q4_KCode(b, i); }
inline int Code(const BlockQ5_K& b, int i) { return Q5_KCode(b, i); }

// Row r of one Q4_K or Q5_K record from the file's block.
template <typename Block>
void PackQ4_KRow(const Block& b, int64_t r, uint8_t* rec) {
  constexpr bool kQ5 = std::is_same_v<Block, BlockQ5_K>;
  for (int sub = 0; sub < 8; ++sub) {
    uint8_t sc, mn;
    GetScaleMinK4(sub, b.scales, &sc, &mn);
    rec[kquant_packed::kQ4_KSc + sub * 16 + r] = sc;
    rec[kquant_packed::kQ4_KMn + (sub / 2) * 32 + r * 2 + sub % 2] = mn;
    for (int g = 0; g < 4; ++g) {
      for (int i = 0; i < 4; ++i) {
        const int lo = Code(b, 32 * sub + 4 * g + i), hi = Code(b, 32 * sub + 16 + 4 * g + i);
        rec[(sub * 4 + g) * 64 + r * 4 + i] = static_cast<uint8_t>((lo & 15) | ((hi & 15) << 4));
        if constexpr (kQ5) {
          rec[kquant_packed::kQ5_KQh + sub * 64 + r * 4 + i] |= static_cast<uint8_t>(((lo >> 4) << g) | ((hi >> 4) << (4 + g)));
        }
      }
    }
  }
  std::memcpy(rec + kquant_packed::kQ4_KD + 2 * r, &b.d, 2);
  std::memcpy(rec + kquant_packed::kQ4_KDmin + 2 * r, &b.dmin, 2);
}

void PackQ6_KRow(const BlockQ6_K& b, int64_t r, uint8_t* rec) {
  for (int blk = 0; blk < 8; ++blk) {
    for (int g = 0; g < 4; ++g) {
      for (int i = 0; i < 4; ++i) {
        const int lo = Q6_KCode(b, 32 * blk + 4 * g + i), hi = Q6_KCode(b, 32 * blk + 16 + 4 * g + i);
        rec[(blk * 4 + g) * 64 + r * 4 + i] = static_cast<uint8_t>((lo & 15) | ((hi & 15) << 4));
        rec[kquant_packed::kQ6_KQh + (blk * 2) * 64 + r * 4 + i] |= static_cast<uint8_t>((lo >> 4) << (2 * g));
        rec[kquant_packed::kQ6_KQh + (blk * 2 + 1) * 64 + r * 4 + i] |= static_cast<uint8_t>((hi >> 4) << (2 * g));
      }
    }
  }
  for (int sub = 0; sub < 16; ++sub) rec[kquant_packed::kQ6_KSc + sub * 16 + r] = static_cast<uint8_t>(b.scales[sub]);
  std::memcpy(rec + kquant_packed::kQ6_KD + 2 * r, &b.d, 2);
}

void PackIq4XsRow(const BlockIq4Xs& b, int64_t r, uint8_t* rec) {
  for (int sub = 0; sub < 8; ++sub) {
    rec[kquant_packed::kIq4XsSc + sub * 16 + r] = static_cast<uint8_t>(static_cast<int8_t>(Iq4XsScale(b, sub)));
    for (int g = 0; g < 4; ++g) {
      for (int i = 0; i < 4; ++i) {
        const int lo = Iq4XsCode(b, 32 * sub + 4 * g + i), hi = Iq4XsCode(b, 32 * sub + 16 + 4 * g + i);
        rec[(sub * 4 + g) * 64 + r * 4 + i] = static_cast<uint8_t>(lo | (hi << 4));
      }
    }
  }
  std::memcpy(rec + kquant_packed::kIq4XsD + 2 * r, &b.d, 2);
}

// The code of element i of a 32-value block (4 or 5 bits).
inline int Code(const BlockQ4_0& b, int i) { return Q4_0Code(b, i); }
inline int Code(const BlockQ5_0& b, int i) { return Q5_0Code(b, i); }
inline int Code(const BlockQ4_1& b, int i) { return Q4_1Code(b, i); }
inline int Code(const BlockQ5_1& b, int i) { return Q5_1Code(b, i); }
inline int Code(const BlockQ4_Z& b, int i) { return Q4_ZCode(b, i); }

// Row r of one 32-value block record of `kType` (Q4_0, IQ4_NL, Q5_0, Q4_1, Q5_1, or Q4_Z's
// codes: its d and z go to the group params).
template <DType kType, typename Block>
void PackBlock32Row(const Block& b, int64_t r, uint8_t* rec) {
  for (int g = 0; g < 4; ++g) {
    for (int i = 0; i < 4; ++i) {
      const int lo = Code(b, 4 * g + i), hi = Code(b, 16 + 4 * g + i);
      if constexpr (kquant_packed::Block32HasFifthBit(kType)) {
        rec[kquant_packed::kQ5_0Qh + r * 4 + i] |= static_cast<uint8_t>(((lo >> 4) << g) | ((hi >> 4) << (4 + g)));
      }
      rec[g * 64 + r * 4 + i] = static_cast<uint8_t>((lo & 15) | ((hi & 15) << 4));
    }
  }
  if constexpr (kType != DType::kQ4_Z) std::memcpy(rec + kquant_packed::Block32D(kType) + 2 * r, &b.d, 2);
  if constexpr (kquant_packed::Block32IsAffine(kType)) std::memcpy(rec + kquant_packed::Block32M(kType) + 2 * r, &b.m, 2);
}

// The longest run of blocks (a divisor of nb) over which every row of a Q4_Z weight repeats
// its (d, z): the checkpoint's group size / 32, so each group's params are stored once.
// rows[i]: row i's first block (the rows of a stacked weight come from several arrays; parts
// with different groups share the longest run common to all).
int64_t Q4_ZGroupBlocks(std::span<const uint8_t* const> rows, int64_t nb) {
  const auto same = [](const BlockQ4_Z& a, const BlockQ4_Z& b) { return a.d == b.d && a.z == b.z; };
  for (int64_t gb = nb; gb > 1; --gb) {
    if (nb % gb != 0) continue;
    bool uniform = true;
    for (size_t row = 0; row < rows.size() && uniform; ++row) {
      const auto* r = reinterpret_cast<const BlockQ4_Z*>(rows[row]);
      for (int64_t b = 0; b < nb && uniform; ++b) uniform = same(r[b], r[b - b % gb]);
    }
    if (uniform) return gb;
  }
  return 1;
}

// Q4_Z's group params: per strip and group, d [16] fp16 then z [16] (padding rows 0).
void PackQ4_ZParams(std::span<const uint8_t* const> rows, KQuantPackedWeight& p) {
  const int64_t groups = p.num_groups();
  uint8_t* base = p.group_params.get();
  std::memset(base, 0, static_cast<size_t>(p.num_strips * groups * kQ4_ZGroupParamBytes));
  for (int64_t s = 0; s < p.num_strips; ++s) {
    for (int64_t g = 0; g < groups; ++g) {
      uint8_t* out = base + (s * groups + g) * kQ4_ZGroupParamBytes;
      for (int64_t r = 0; r < kKQuantPackRows && s * kKQuantPackRows + r < p.n; ++r) {
        const BlockQ4_Z& b =
            reinterpret_cast<const BlockQ4_Z*>(rows[static_cast<size_t>(s * kKQuantPackRows + r)])[g * p.group_blocks];
        std::memcpy(out + 2 * r, &b.d, 2);
        out[kquant_packed::kQ4_ZParamZ + r] = b.z;
      }
    }
  }
}

// Rows [m_begin, m_end) of x -> q8_0 bytes, widened scales and -128 * block sums.
void QuantizeActs32(const float* x, int64_t k, int64_t m_begin, int64_t m_end, int8_t* q, float* d, int32_t* corr,
                    bool avx512) {
  if (avx512) return q8_0_packed::QuantizeActsAvx512(x, k, m_begin, m_end, q, d, corr);
  const int64_t nb = k / 32;
  thread_local std::vector<BlockQ8_0> blocks;
  blocks.resize(static_cast<size_t>(nb));
  for (int64_t m = m_begin; m < m_end; ++m) {
    QuantizeRowQ8_0(x + m * k, k, blocks.data());
    for (int64_t b = 0; b < nb; ++b) {
      int32_t sum = 0;
      for (int i = 0; i < 32; ++i) sum += q[m * k + 32 * b + i] = blocks[static_cast<size_t>(b)].qs[i];
      d[m * nb + b] = F16ToF32(blocks[static_cast<size_t>(b)].d);
      corr[m * nb + b] = -128 * sum;
    }
  }
}

// The kernel's aux sums of one activation row for `dtype` (kquant_packed_kernels.h), from
// the row's sums of 16-column blocks.
void AuxFromSums(DType dtype, const int32_t* bsum, int64_t nsb, int32_t* a) {
  for (int64_t i = 0; i < nsb * 16; ++i) {
    if (dtype == DType::kQ6_K) {
      a[i] = -32 * bsum[i];
    } else if (dtype == DType::kIQ4_XS) {  // sub-block i % 16 < 8 of 32
      const int64_t s = (i / 16) * 16 + 2 * (i % 16);
      a[i] = i % 16 < 8 ? -128 * (bsum[s] + bsum[s + 1]) : 0;
    } else if (i % 16 < 4) {  // pair p = i % 16 of super-block i / 16: sub-blocks 2p, 2p + 1 of 32
      const int64_t s = (i / 16) * 16 + 4 * (i % 16);
      const int32_t lo = bsum[s] + bsum[s + 1];
      const int32_t hi = bsum[s + 2] + bsum[s + 3];
      a[i] = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint16_t>(lo)) |
                                  (static_cast<uint32_t>(static_cast<uint16_t>(hi)) << 16));
    } else {
      a[i] = 0;
    }
  }
}

// Rows [m_begin, m_end) of x -> q, d and, for each dtypes[i], the kernel's aux sums in
// aux[i] (one type when its blocks are of 32 columns: their activations quantize apart).
void QuantizeActs(std::span<const DType> dtypes, const float* x, int64_t k, int64_t m_begin, int64_t m_end, int8_t* q,
                  float* d, int32_t* const* aux, bool avx512) {
  if (DTypeBlockSize(dtypes[0]) == 32) return QuantizeActs32(x, k, m_begin, m_end, q, d, aux[0], avx512);
  const int64_t nsb = k / kKQuantBlockElements;
  thread_local std::vector<int32_t> bsum;
  bsum.resize(static_cast<size_t>(k / 16));
  for (int64_t m = m_begin; m < m_end; ++m) {
    if (avx512) {
      kquant_packed::QuantizeRowQ8_KAvx512(x + m * k, k, q + m * k, d + m * nsb, bsum.data());
    } else {
      QuantizeRowQ8_K(x + m * k, k, q + m * k, d + m * nsb, bsum.data());
    }
    for (size_t i = 0; i < dtypes.size(); ++i) AuxFromSums(dtypes[i], bsum.data(), nsb, aux[i] + m * nsb * 16);
  }
}

// PAGELLM_KQUANT_LOOKAHEAD=0 turns the GEMM's lookahead off (A/B runs; the same floats).
bool LookaheadEnabled() {
  static const bool enabled = [] {
    const char* env = std::getenv("PAGELLM_KQUANT_LOOKAHEAD");
    return env == nullptr || std::string_view(env) != "0";
  }();
  return enabled;
}

int64_t RecordBytes(DType dtype) {
  switch (dtype) {
    case DType::kQ4_K: return kQ4_KPackBytes;
    case DType::kQ5_K: return kQ5_KPackBytes;
    case DType::kQ6_K: return kQ6_KPackBytes;
    case DType::kIQ4_XS: return kIq4XsPackBytes;
    case DType::kQ5_0: return kQ5_0PackBytes;
    case DType::kQ4_1: return kQ4_1PackBytes;
    case DType::kQ5_1: return kQ5_1PackBytes;
    case DType::kQ4_Z: return kQ4_ZPackBytes;
    default: return kQ4_0PackBytes;
  }
}

// Row r of a record from block `index` of the file's array w.
void PackRow(DType dtype, const void* w, int64_t index, int64_t r, uint8_t* rec) {
  switch (dtype) {
    case DType::kQ4_K: return PackQ4_KRow(static_cast<const BlockQ4_K*>(w)[index], r, rec);
    case DType::kQ5_K: return PackQ4_KRow(static_cast<const BlockQ5_K*>(w)[index], r, rec);
    case DType::kQ6_K: return PackQ6_KRow(static_cast<const BlockQ6_K*>(w)[index], r, rec);
    case DType::kIQ4_XS: return PackIq4XsRow(static_cast<const BlockIq4Xs*>(w)[index], r, rec);
    case DType::kQ5_0: return PackBlock32Row<DType::kQ5_0>(static_cast<const BlockQ5_0*>(w)[index], r, rec);
    case DType::kQ4_1: return PackBlock32Row<DType::kQ4_1>(static_cast<const BlockQ4_1*>(w)[index], r, rec);
    case DType::kQ5_1: return PackBlock32Row<DType::kQ5_1>(static_cast<const BlockQ5_1*>(w)[index], r, rec);
    case DType::kQ4_Z: return PackBlock32Row<DType::kQ4_Z>(static_cast<const BlockQ4_Z*>(w)[index], r, rec);
    default: return PackBlock32Row<DType::kQ4_0>(static_cast<const BlockQ4_0*>(w)[index], r, rec);
  }
}

}  // namespace

namespace {

// The records of the rows whose first blocks are at row_blocks[0..n) (Q4_Z: its group
// params found over all of them).
std::unique_ptr<KQuantPackedWeight> PackRows(DType dtype, std::span<const uint8_t* const> row_blocks, int64_t k) {
  PAGELLM_CHECK(IsPackedQuant(dtype) && k % DTypeBlockSize(dtype) == 0);
  const int64_t n = static_cast<int64_t>(row_blocks.size());
  auto p = std::make_unique<KQuantPackedWeight>();
  p->dtype = dtype;
  p->n = n;
  p->k = k;
  p->nsb = k / DTypeBlockSize(dtype);
  p->num_strips = (n + kKQuantPackRows - 1) / kKQuantPackRows;
  p->record_bytes = RecordBytes(dtype);
  const size_t bytes = static_cast<size_t>(std::max<int64_t>((p->owned_bytes() + 63) / 64 * 64, 64));
  p->data.reset(static_cast<uint8_t*>(std::aligned_alloc(64, bytes)));
  if (p->data == nullptr) return nullptr;
  if (dtype == DType::kQ4_Z) {
    p->group_blocks = Q4_ZGroupBlocks(row_blocks, p->nsb);
    const int64_t param_bytes = p->num_strips * p->num_groups() * kQ4_ZGroupParamBytes;
    p->group_params.reset(static_cast<uint8_t*>(std::aligned_alloc(64, static_cast<size_t>((param_bytes + 63) / 64 * 64))));
    if (p->group_params == nullptr) return nullptr;
    PackQ4_ZParams(row_blocks, *p);
  }
  const int64_t nsb = p->nsb, num_strips = p->num_strips, rec_bytes = p->record_bytes;
#pragma omp parallel for schedule(static)
  for (int64_t s = 0; s < num_strips; ++s) {
    for (int64_t sb = 0; sb < nsb; ++sb) {
      uint8_t* rec = p->data.get() + p->record_offset(s, sb);
      std::memset(rec, 0, static_cast<size_t>(rec_bytes));
      for (int64_t r = 0; r < kKQuantPackRows && s * kKQuantPackRows + r < n; ++r) {
        PackRow(dtype, row_blocks[static_cast<size_t>(s * kKQuantPackRows + r)], sb, r, rec);
      }
    }
  }
  return p;
}

// The address of each row's first block, part after part.
std::vector<const uint8_t*> RowBlocks(DType dtype, std::span<const void* const> parts, std::span<const int64_t> part_rows,
                                      int64_t k) {
  PAGELLM_CHECK(parts.size() == part_rows.size());
  const size_t row_bytes = DTypeBytes(dtype, k);
  std::vector<const uint8_t*> rows;
  for (size_t i = 0; i < parts.size(); ++i) {
    for (int64_t r = 0; r < part_rows[i]; ++r) rows.push_back(static_cast<const uint8_t*>(parts[i]) + r * row_bytes);
  }
  return rows;
}

}  // namespace

std::unique_ptr<KQuantPackedWeight> KQuantPackedWeight::Pack(DType dtype, const void* w, int64_t n, int64_t k) {
  const void* parts[] = {w};
  const int64_t rows[] = {n};
  return PackRows(dtype, RowBlocks(dtype, parts, rows, k), k);
}

std::unique_ptr<KQuantPackedWeight> KQuantPackedWeight::PackStacked(DType dtype, std::span<const void* const> parts,
                                                                    std::span<const int64_t> part_rows, int64_t k) {
  return PackRows(dtype, RowBlocks(dtype, parts, part_rows, k), k);
}

void RunKQuantPacked(const KQuantPackedWeight& w, const float* x, int64_t num_rows, const float* bias, float* y,
                     KQuantKernels kernels) {
  const LinearOutput out[] = {{y, w.n}};
  RunKQuantPackedParts(w, x, num_rows, bias, out, kernels);
}

void RunKQuantPackedParts(const KQuantPackedWeight& w, const float* x, int64_t num_rows, const float* bias,
                          std::span<const LinearOutput> outs, KQuantKernels kernels) {
  const KQuantSection section{.w = &w, .outs = outs, .bias = bias};
  RunKQuantPackedSections({&section, 1}, x, num_rows, kernels);
}

void RunKQuantPackedSections(std::span<const KQuantSection> sections, const float* x, int64_t num_rows,
                             KQuantKernels kernels) {
  const bool avx512 = kernels != KQuantKernels::kAvx2;
  const bool gemv = num_rows <= kKQuantGemvRows;
  const bool amx = !gemv && (kernels == KQuantKernels::kAmx || kernels == KQuantKernels::kAmxModel);
  const int64_t num_sections = static_cast<int64_t>(sections.size());
  PAGELLM_CHECK(num_sections >= 1 && num_sections <= kMaxKQuantSections);
  const KQuantPackedWeight& w0 = *sections[0].w;
  DType dtypes[kMaxKQuantSections];
  for (int64_t s = 0; s < num_sections; ++s) {
    const KQuantPackedWeight& w = *sections[static_cast<size_t>(s)].w;
    PAGELLM_CHECK(w.k == w0.k && (num_sections == 1 || DTypeBlockSize(w.dtype) == kKQuantBlockElements));
    dtypes[s] = w.dtype;
  }
  const bool model_tiles = kernels == KQuantKernels::kAmxModel;
  const auto strips = [&](const PackedActs& acts, const KQuantPackedWeight& w, int64_t s_begin, int64_t s_end,
                          const float* bias, float* y, const kquant_packed::Lookahead& next) {
    if (amx) return kquant_packed::StripsAmx(acts, w, s_begin, s_end, bias, y, model_tiles);
    if (avx512) return kquant_packed::StripsAvx512(acts, w, s_begin, s_end, bias, y, next);
    kquant_packed::StripsAvx2(acts, w, s_begin, s_end, bias, y);
  };
  thread_local std::vector<int8_t> q;
  thread_local std::vector<float> d;
  thread_local std::vector<int32_t> aux;
  const int64_t aux_per_section = num_rows * w0.nsb * (DTypeBlockSize(w0.dtype) == 32 ? 1 : 16);
  // The AMX tiles read activation rows 16 at a time: zero rows pad x's to a multiple of 16.
  const int64_t q_rows = amx ? (num_rows + 15) / 16 * 16 : num_rows;
  q.resize(static_cast<size_t>(q_rows * w0.k));
  std::memset(q.data() + num_rows * w0.k, 0, static_cast<size_t>((q_rows - num_rows) * w0.k));
  d.resize(static_cast<size_t>(num_rows * w0.nsb));
  aux.resize(static_cast<size_t>(num_sections * aux_per_section));
  int8_t* acts_q = q.data();
  float* acts_d = d.data();
  int32_t* acts_aux[kMaxKQuantSections];
  for (int64_t s = 0; s < num_sections; ++s) acts_aux[s] = aux.data() + s * aux_per_section;
  // Work items of up to kStripsPerItem strips, none across two outputs, section after section.
  thread_local std::vector<PartItem> items, section_items;
  thread_local std::vector<int32_t> item_section;
  items.clear();
  item_section.clear();
  for (int64_t s = 0; s < num_sections; ++s) {
    const KQuantSection& sec = sections[static_cast<size_t>(s)];
    SplitIntoItems(sec.outs, kKQuantPackRows, kStripsPerItem, sec.w->n, &section_items);
    items.insert(items.end(), section_items.begin(), section_items.end());
    item_section.insert(item_section.end(), section_items.size(), static_cast<int32_t>(s));
  }
  const PartItem* item = items.data();
  const bool lookahead = !gemv && avx512 && !amx && num_rows <= kquant_packed::kLookaheadRows && LookaheadEnabled();
  const int32_t* item_sec = item_section.data();
  const int64_t num_items = static_cast<int64_t>(items.size());
  const int64_t grain = gemv ? std::max<int64_t>(1, num_items / 64) : 1;
  // Item i, then (-1: none) the item the same thread runs next.
  auto run_item = [&](int64_t i, int64_t next) {
    const KQuantSection& sec = sections[static_cast<size_t>(item_sec[i])];
    const LinearOutput& out = sec.outs[static_cast<size_t>(item[i].out)];
    const PackedActs acts{.q = acts_q, .d = acts_d, .aux = acts_aux[item_sec[i]], .num_rows = num_rows, .k = w0.k,
                          .nsb = w0.nsb, .ldy = out.n, .col0 = item[i].col0};
    kquant_packed::Lookahead after{.on = lookahead};
    if (next >= 0) {
      after.w = sections[static_cast<size_t>(item_sec[next])].w;
      after.s_begin = item[next].s_begin;
      after.s_end = item[next].s_end;
    }
    strips(acts, *sec.w, item[i].s_begin, item[i].s_end, sec.bias, out.y, after);
  };
  const std::span<const DType> types(dtypes, static_cast<size_t>(num_sections));
  // As RunQ8_0Packed: the GEMM quantizes its rows inside the one parallel region.
  if (gemv) QuantizeActs(types, x, w0.k, 0, num_rows, acts_q, acts_d, acts_aux, avx512);
  std::atomic<int64_t> claimed{0};  // ShareItemsClaimingAhead's
#pragma omp parallel
  {
    if (gemv) {
      ShareItems(num_items, /*gemv=*/true, grain, [&](int64_t i) { run_item(i, -1); });
    } else {
#pragma omp for schedule(static)
      for (int64_t m = 0; m < num_rows; ++m) QuantizeActs(types, x, w0.k, m, m + 1, acts_q, acts_d, acts_aux, avx512);
      if (lookahead) ShareItemsClaimingAhead(num_items, claimed, run_item);
      else ShareItems(num_items, /*gemv=*/false, grain, [&](int64_t i) { run_item(i, -1); });
    }
  }
}

}  // namespace pagellm
