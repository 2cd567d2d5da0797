#include "backend/cpu/cpu_backend.h"

#include <immintrin.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <string_view>
#include <utility>
#include <vector>

#include "backend/cpu/avx2_math.h"
#include "backend/cpu/bf16_packed.h"
#include "backend/cpu/dnnl_matmul.h"
#include "backend/cpu/gemv.h"
#include "backend/cpu/int8_gemv.h"
#include "backend/cpu/int8_linear.h"
#include "backend/int8_quant.h"
#include "backend/cpu/packed_rows.h"
#include "backend/cpu/paged_attention_cpu.h"
#include "backend/cpu/kquant_packed.h"
#include "backend/column_order.h"
#include "backend/cpu/q8_0_packed.h"
#include "common/logging.h"
#include "common/mapped_file.h"
#include "common/parallel_for.h"
#include "tensor/half.h"
#include "tensor/kquant_blocks.h"

namespace pagellm {
namespace {

class CpuLinearWeight final : public LinearWeight {
 public:
  CpuLinearWeight(const Backend* be, const TensorView& w) : LinearWeight(be, w.dim(0), w.dim(1)), weight(w) {}
  ~CpuLinearWeight() override {
    if (tally != nullptr) *tally -= counted_bytes;
    if (forget_row_source) forget_row_source();
  }
  // Whether a packed copy can give back the weight's rows (packed_rows.h), in the view's
  // column order.
  bool ReadsRows() const {
    return column_order.empty() && (q8_0 != nullptr || bf16 != nullptr || (kquant != nullptr && PackedRowReadable(*kquant)));
  }
  void ReadRow(int64_t row, float* out) const {
    if (q8_0 != nullptr) return DequantizePackedRow(*q8_0, row, out);
    if (bf16 != nullptr) return DequantizePackedRow(*bf16, row, out);
    DequantizePackedRow(*kquant, row, out);
  }
  // Adds what this weight owns to the backend's tally (once, when fully prepared).
  void Count(std::atomic<int64_t>* backend_tally) {
    counted_bytes = static_cast<int64_t>(bias.size() * sizeof(float));
    if (dnnl != nullptr) counted_bytes += static_cast<int64_t>(dnnl->packed_bytes());
    if (w8a8 != nullptr) counted_bytes += w8a8->owned_bytes();
    if (q8_0 != nullptr) counted_bytes += q8_0->owned_bytes();
    if (bf16 != nullptr) counted_bytes += bf16->owned_bytes();
    if (kquant != nullptr) counted_bytes += kquant->owned_bytes();
    for (const auto& section : kquant_more) counted_bytes += section->owned_bytes();
    counted_bytes += static_cast<int64_t>(column_order.size() * sizeof(int32_t));
    tally = backend_tally;
    *tally += counted_bytes;
  }
  TensorView weight;                  // [N, K], borrowed (GEMV reads it in place; q8_0 unless repacked)
  std::vector<float> bias;            // [N] or empty
  std::unique_ptr<DnnlMatmul> dnnl;   // packed copy for M > gemv_max_rows; may be null
  std::unique_ptr<W8A8Weight> w8a8;   // set for LinearQuantization::kInt8 (then `dnnl` is null)
  std::unique_ptr<Q8_0PackedWeight> q8_0;  // kQ8_0 weight repacked at load; may be null
  std::unique_ptr<Bf16PackedWeight> bf16;  // kBF16 weight repacked at load; may be null
  std::unique_ptr<KQuantPackedWeight> kquant;  // kQ4_K / kQ6_K weight rearranged at load
  // A stacked weight whose parts differ in type: the later runs of parts of one type
  // (`kquant` holds the first run).
  std::vector<std::unique_ptr<KQuantPackedWeight>> kquant_more;
  std::vector<int32_t> column_order;  // the weight's TensorView::column_order, copied; empty: identity
  std::atomic<int64_t>* tally = nullptr;
  int64_t counted_bytes = 0;
  std::function<void()> forget_row_source;  // drops this weight from the backend's row sources
  std::vector<int64_t> part_rows;           // a stacked weight's parts (PrepareStackedLinear); else empty
};

// ---- AVX2 helpers -------------------------------------------------------------

using avx2::Exp;
using avx2::HorizontalSum;

// 8 floats -> 8 bf16, round to nearest even (same as F32ToBf16 for non-NaN input).
inline __m128i ToBf16x8(__m256 v) {
  __m256i bits = _mm256_castps_si256(v);
  __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
  __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(bits, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
  __m128i lo = _mm256_castsi256_si128(rounded), hi = _mm256_extracti128_si256(rounded, 1);
  return _mm_packus_epi32(lo, hi);
}

// dst[i] = src[i] converted to `dtype`, i < n.
void StoreRow(const float* src, int64_t n, DType dtype, void* dst) {
  int64_t i = 0;
  if (dtype == DType::kF32) {
    std::copy(src, src + n, static_cast<float*>(dst));
    return;
  }
  auto* out = static_cast<uint16_t*>(dst);
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(src + i);
    __m128i h = dtype == DType::kBF16 ? ToBf16x8(v) : _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
  }
  for (; i < n; ++i) out[i] = dtype == DType::kBF16 ? F32ToBf16(src[i]) : F32ToF16(src[i]);
}

// dst[i] = float(src[i]), i < n.
void LoadRow(const void* src, DType dtype, int64_t n, float* dst) {
  if (dtype == DType::kF32) {
    std::copy(static_cast<const float*>(src), static_cast<const float*>(src) + n, dst);
    return;
  }
  const auto* in = static_cast<const uint16_t*>(src);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    __m256 v = dtype == DType::kF16
                   ? _mm256_cvtph_ps(h)
                   : _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    _mm256_storeu_ps(dst + i, v);
  }
  for (; i < n; ++i) dst[i] = dtype == DType::kF16 ? F16ToF32(in[i]) : Bf16ToF32(in[i]);
}

}  // namespace

namespace {
bool EnvIsNotZero(const char* name) {
  const char* env = std::getenv(name);
  return env == nullptr || std::string_view(env) != "0";
}
}  // namespace

bool Q8_0RepackDefault() { return EnvIsNotZero("PAGELLM_Q8_0_REPACK"); }
bool Bf16RepackDefault() { return EnvIsNotZero("PAGELLM_BF16_REPACK"); }
bool BatchInvariantDefault() { return EnvIsNotZero("PAGELLM_BATCH_INVARIANT"); }
bool StackLinearsDefault() { return EnvIsNotZero("PAGELLM_STACK_LINEARS"); }

CpuBackend::CpuBackend(CpuBackendOptions options) : options_(options) {
  if (options_.isa == CpuIsa::kAvx512 && !CpuSupportsAvx512Bf16()) {
    PLOG_WARN("CpuBackend: AVX-512 BF16 requested but not supported; using avx2");
    options_.isa = CpuIsa::kAvx2;
  }
  int8_avx512_ = options_.int8_isa == CpuIsa::kAvx512 && CpuSupportsAvx512Vnni();
  // Options that pin the int8 kernels to AVX2 turn AMX off with them. Only a backend that
  // wants AMX asks Linux for the tile state (CpuSupportsAmxInt8's arch_prctl): once granted,
  // every signal frame of the process grows by 8 KB and a smaller sigaltstack fails.
  const bool amx_usable = options_.amx_int8 && int8_avx512_ && CpuSupportsAmxInt8();
  if (options_.amx_int8 && int8_avx512_ && !amx_usable) {
    PLOG_WARN("CpuBackend: AMX-INT8 requested but not usable here; using avx512-vnni");
  }
  options_.amx_int8 = options_.amx_int8 && amx_usable;
  kquant_kernels_ = options_.amx_int8 ? KQuantKernels::kAmx : int8_avx512_ ? KQuantKernels::kAvx512 : KQuantKernels::kAvx2;
}

const LinearWeight* CpuBackend::RowSourceFor(const TensorView& table) const {
  std::lock_guard<std::mutex> lock(row_sources_mu_);
  const auto it = row_sources_.find(table.data);
  if (it == row_sources_.end()) return nullptr;
  const auto& w = static_cast<const CpuLinearWeight&>(*it->second);
  // A tensor-parallel shard of the table starts at the same address with fewer rows.
  const bool same = w.weight.dtype == table.dtype && w.weight.dim(0) == table.dim(0) && w.weight.dim(1) == table.dim(1);
  return same ? &w : nullptr;
}

bool CpuBackend::EmbeddingReadsPreparedCopy(const TensorView& table) const { return RowSourceFor(table) != nullptr; }

void CpuBackend::Embedding(const TensorView& table, std::span<const int32_t> ids, float* out) {
  const int64_t hidden = table.dim(1), vocab = table.dim(0);
  // A tied lm_head's packed copy holds the same rows: read them there, so the table's
  // file pages (dropped when it was packed) never come back.
  const auto* packed = static_cast<const CpuLinearWeight*>(RowSourceFor(table));
  const bool q8_0 = table.dtype == DType::kQ8_0, kquant = IsPackedQuant(table.dtype);
  const size_t elem = q8_0 || kquant ? 0 : DTypeSize(table.dtype);
  const int64_t num_ids = static_cast<int64_t>(ids.size());
  // A few rows (a decode step, a verification) are cheaper than waking the other threads.
  ParallelFor(num_ids, num_ids * hidden > 32768, [&](int64_t t) {
    const int32_t id = ids[static_cast<size_t>(t)];
    PAGELLM_CHECK(id >= 0 && id < vocab);
    if (packed != nullptr) {
      packed->ReadRow(id, out + t * hidden);
      return;
    }
    if (q8_0) {
      const auto* rows = static_cast<const BlockQ8_0*>(table.data);
      DequantizeRowQ8_0(rows + id * (hidden / kQ8_0BlockElements), hidden, out + t * hidden);
      return;
    }
    if (kquant) {
      const auto* rows = static_cast<const std::byte*>(table.data);
      DequantizeRowKQuant(table.dtype, rows + DTypeBytes(table.dtype, id * hidden), hidden, out + t * hidden);
      return;
    }
    LoadRow(static_cast<const char*>(table.data) + static_cast<size_t>(id * hidden) * elem, table.dtype, hidden,
            out + t * hidden);
  });
}

void CpuBackend::RmsNorm(const float* x, const float* weight, int64_t rows, int64_t dim, float eps, float* y) {
  ParallelFor(rows, rows * dim > 16384, [&](int64_t r) {
    const float* xr = x + r * dim;
    float* yr = y + r * dim;
    __m256 acc = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= dim; i += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(xr + i), _mm256_loadu_ps(xr + i), acc);
    float sum_sq = HorizontalSum(acc);
    for (; i < dim; ++i) sum_sq += xr[i] * xr[i];
    const float inv = 1.0f / std::sqrt(sum_sq / static_cast<float>(dim) + eps);
    const __m256 vinv = _mm256_set1_ps(inv);
    for (i = 0; i + 8 <= dim; i += 8) {
      _mm256_storeu_ps(yr + i, _mm256_mul_ps(_mm256_loadu_ps(weight + i), _mm256_mul_ps(_mm256_loadu_ps(xr + i), vinv)));
    }
    for (; i < dim; ++i) yr[i] = weight[i] * (xr[i] * inv);
  });
}

StatusOr<std::unique_ptr<LinearWeight>> CpuBackend::PrepareLinear(const TensorView& weight, const TensorView& bias,
                                                                  const LinearOptions& options) {
  PAGELLM_RETURN_IF_ERROR(ValidateLinearWeight(weight, bias));
  PAGELLM_RETURN_IF_ERROR(ValidateColumnOrder(weight));
  auto prepared = std::make_unique<CpuLinearWeight>(this, weight);
  prepared->column_order.assign(weight.column_order.begin(), weight.column_order.end());
  if (!bias.empty()) {
    prepared->bias.resize(static_cast<size_t>(bias.numel()));
    LoadRow(bias.data, bias.dtype, bias.numel(), prepared->bias.data());
  }
  if (weight.dtype == DType::kQ8_0) {
    // The original blocks stay mapped: Embedding reads them (tied lm_head / embed_tokens).
    if (options_.repack_q8_0) {
      prepared->q8_0 = Q8_0PackedWeight::Pack(static_cast<const BlockQ8_0*>(weight.data), weight.dim(0), weight.dim(1));
      if (prepared->q8_0 == nullptr) {
        return ResourceExhaustedError(fmt::format("linear {}: cannot allocate the repacked q8_0 copy",
                                                  ShapeToString(weight.shape)));
      }
    }
  } else if (IsPackedQuant(weight.dtype)) {
    // Rearranged losslessly (no float copy); the blocks stay mapped for Embedding, as Q8_0's.
    prepared->kquant = KQuantPackedWeight::Pack(weight.dtype, weight.data, weight.dim(0), weight.dim(1));
    if (prepared->kquant == nullptr) {
      return ResourceExhaustedError(fmt::format("linear {}: cannot allocate the rearranged {} copy",
                                                ShapeToString(weight.shape), DTypeName(weight.dtype)));
    }
  } else if (options.quantization == LinearQuantization::kInt8 || weight.dtype == DType::kQ8_S) {
    PAGELLM_ASSIGN_OR_RETURN(prepared->w8a8, W8A8Weight::Create(weight, options_.use_dnnl));
  } else {
    if (weight.dtype == DType::kBF16 && options_.repack_bf16) {
      prepared->bf16 = Bf16PackedWeight::Pack(static_cast<const uint16_t*>(weight.data), weight.dim(0), weight.dim(1));
      if (prepared->bf16 == nullptr) {
        return ResourceExhaustedError(fmt::format("linear {}: cannot allocate the repacked bf16 copy",
                                                  ShapeToString(weight.shape)));
      }
    }
    // The packed bf16 kernel matches oneDNN's avx512_bf16 matmul at every M (kernel_bench;
    // below AVX-512 oneDNN 2.6 has no bf16 matmul at all), so oneDNN's copy is only worth
    // its memory when it brings AMX (an AVX-512 machine's, so not under PAGELLM_ISA=avx2,
    // which runs the baseline everywhere), and only when batch invariance is off.
    const bool amx_copy = prepared->bf16 != nullptr && options_.isa == CpuIsa::kAvx512 && DnnlUsesAmx() &&
                          !options_.batch_invariant;
    if (options_.use_dnnl && (prepared->bf16 == nullptr || amx_copy)) {
      auto dnnl = DnnlMatmul::Create(weight);
      if (dnnl.ok()) {
        prepared->dnnl = std::move(dnnl).value();
      } else {
        PLOG_WARN("linear {}: {}; using the GEMV kernels for all batch sizes", ShapeToString(weight.shape),
                  dnnl.status().ToString());
      }
    }
  }
  prepared->Count(&prepared_bytes_);
  // Repacked (q8_0, bf16) and W8A8 weights never read the view again (oneDNN-only ones
  // still run the in-place GEMV for small M). If the view is a file mapping, its pages go
  // now, so loading a model never holds two copies of it at once.
  if (prepared->q8_0 != nullptr || prepared->bf16 != nullptr || prepared->w8a8 != nullptr ||
      prepared->kquant != nullptr) {
    MappedFile::ReleasePages(weight.data, weight.nbytes());
    std::lock_guard<std::mutex> lock(copied_mu_);
    copied_sources_.emplace_back(static_cast<const std::byte*>(weight.data), weight.nbytes());
  }
  if (prepared->ReadsRows()) {
    const void* data = weight.data;
    const LinearWeight* self = prepared.get();
    std::lock_guard<std::mutex> lock(row_sources_mu_);
    row_sources_[data] = self;
    prepared->forget_row_source = [this, data, self] {
      std::lock_guard<std::mutex> forget_lock(row_sources_mu_);
      const auto it = row_sources_.find(data);
      if (it != row_sources_.end() && it->second == self) row_sources_.erase(it);
    };
  }
  return std::unique_ptr<LinearWeight>(std::move(prepared));
}

StatusOr<std::unique_ptr<LinearWeight>> CpuBackend::PrepareStackedLinear(std::span<const TensorView> weights,
                                                                         std::span<const TensorView> biases,
                                                                         const LinearOptions& options) {
  (void)options;  // k-quant and Q8_0 weights keep their format, as in PrepareLinear
  // Stacked: k-quant parts of one type and width (AWQ / GPTQ's Q4_Z too), or of several of
  // the 256-column types (Q4_K_M's q, k in Q4_K and v in
  // Q6_K: one packed copy per run of one type, run in one call), or Q8_0 parts when Q8_0 is
  // repacked; each but the last whole strips (16 rows for both layouts), no act-order,
  // biases all or none.
  static_assert(kKQuantPackRows == kQ8_0PackRows);
  const auto none = [] { return std::unique_ptr<LinearWeight>(); };
  if (!options_.stack_linears || weights.size() < 2 || biases.size() != weights.size()) return none();
  const DType dtype = weights[0].dtype;
  const bool q8_0 = dtype == DType::kQ8_0 && options_.repack_q8_0;
  if (!(q8_0 || IsPackedQuant(dtype)) || weights[0].shape.size() != 2) return none();
  const auto super_block_type = [](DType t) { return IsPackedQuant(t) && DTypeBlockSize(t) == kKQuantBlockElements; };
  const int64_t k = weights[0].dim(1);
  const bool with_bias = !biases[0].empty();
  int64_t n = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    PAGELLM_RETURN_IF_ERROR(ValidateLinearWeight(weights[i], biases[i]));
    const TensorView& w = weights[i];
    const bool same_kind = w.dtype == dtype || (super_block_type(w.dtype) && super_block_type(dtype));
    if (!same_kind || w.dim(1) != k || !w.column_order.empty() || biases[i].empty() == with_bias) return none();
    if (i + 1 < weights.size() && w.dim(0) % kKQuantPackRows != 0) return none();
    n += w.dim(0);
  }
  if (static_cast<int64_t>(weights.size()) > kMaxKQuantSections) return none();
  TensorView stacked;  // the shape and type only: the parts are read through the packed copy
  stacked.dtype = dtype;
  stacked.shape = {n, k};
  auto prepared = std::make_unique<CpuLinearWeight>(this, stacked);
  std::vector<const void*> parts;
  for (size_t i = 0; i < weights.size(); ++i) {
    parts.push_back(weights[i].data);
    prepared->part_rows.push_back(weights[i].dim(0));
    if (with_bias) {
      const size_t at = prepared->bias.size();
      prepared->bias.resize(at + static_cast<size_t>(biases[i].numel()));
      LoadRow(biases[i].data, biases[i].dtype, biases[i].numel(), prepared->bias.data() + at);
    }
  }
  if (q8_0) {
    prepared->q8_0 = Q8_0PackedWeight::PackStacked(parts, prepared->part_rows, k);
  } else {
    // One packed copy per run of parts of one type.
    for (size_t begin = 0, end = 0; begin < weights.size(); begin = end) {
      while (end < weights.size() && weights[end].dtype == weights[begin].dtype) ++end;
      auto section = KQuantPackedWeight::PackStacked(
          weights[begin].dtype, std::span<const void* const>(parts).subspan(begin, end - begin),
          std::span<const int64_t>(prepared->part_rows).subspan(begin, end - begin), k);
      if (section == nullptr) {
        prepared->kquant.reset();
        break;
      }
      (begin == 0 ? prepared->kquant : prepared->kquant_more.emplace_back()) = std::move(section);
    }
  }
  if (prepared->kquant == nullptr && prepared->q8_0 == nullptr) {
    return ResourceExhaustedError(fmt::format("stacked linear {}: cannot allocate the rearranged {} copy",
                                              ShapeToString(stacked.shape), DTypeName(dtype)));
  }
  prepared->Count(&prepared_bytes_);
  std::lock_guard<std::mutex> lock(copied_mu_);
  for (const TensorView& w : weights) {  // as PrepareLinear: the parts' file pages go now
    MappedFile::ReleasePages(w.data, w.nbytes());
    copied_sources_.emplace_back(static_cast<const std::byte*>(w.data), w.nbytes());
  }
  return std::unique_ptr<LinearWeight>(std::move(prepared));
}

void CpuBackend::LinearStacked(const LinearWeight& weight, const float* x, int64_t num_rows,
                               std::span<float* const> ys) {
  PAGELLM_CHECK(weight.backend() == this);
  const auto& w = static_cast<const CpuLinearWeight&>(weight);
  PAGELLM_CHECK((w.kquant != nullptr || w.q8_0 != nullptr) && ys.size() == w.part_rows.size());
  LinearOutput outs[8];
  PAGELLM_CHECK(ys.size() <= std::size(outs));
  for (size_t i = 0; i < ys.size(); ++i) outs[i] = {ys[i], w.part_rows[i]};
  const float* bias = w.bias.empty() ? nullptr : w.bias.data();
  const std::span<const LinearOutput> parts(outs, ys.size());
  if (w.q8_0 != nullptr) return RunQ8_0PackedParts(*w.q8_0, x, num_rows, bias, parts, int8_avx512_);
  // Each packed copy takes the next parts until their rows make its n.
  KQuantSection sections[kMaxKQuantSections];
  size_t num_sections = 0, part = 0;
  int64_t row0 = 0;
  for (size_t c = 0; c <= w.kquant_more.size(); ++c) {
    const KQuantPackedWeight* packed = c == 0 ? w.kquant.get() : w.kquant_more[c - 1].get();
    const size_t first = part;
    for (int64_t rows = 0; rows < packed->n; ++part) rows += parts[part].n;
    sections[num_sections++] = {.w = packed, .outs = parts.subspan(first, part - first),
                                .bias = bias != nullptr ? bias + row0 : nullptr};
    row0 += packed->n;
  }
  RunKQuantPackedSections({sections, num_sections}, x, num_rows, kquant_kernels_);
}

std::vector<std::span<const std::byte>> CpuBackend::TakeCopiedSources() {
  std::lock_guard<std::mutex> lock(copied_mu_);
  return std::exchange(copied_sources_, {});
}

void CpuBackend::Linear(const LinearWeight& weight, const float* x, int64_t num_rows, float* y) {
  PAGELLM_CHECK(weight.backend() == this);
  const auto& w = static_cast<const CpuLinearWeight&>(weight);
  if (!w.column_order.empty()) {
    // Act-order weight: the kernels see x with its columns in the stored order. The buffer
    // grows to the largest step once per thread, so the hot path does not allocate.
    thread_local std::vector<float> ordered;
    ordered.resize(static_cast<size_t>(num_rows * w.in_features()));
    GatherColumns(x, num_rows, w.column_order, ordered.data());
    x = ordered.data();
  }
  const float* bias = w.bias.empty() ? nullptr : w.bias.data();
  const Int8KernelChoice int8{.avx512 = int8_avx512_, .gemv_max_rows = options_.gemv_max_rows};
  if (w.q8_0 != nullptr) return RunQ8_0Packed(*w.q8_0, x, num_rows, bias, y, int8_avx512_);
  if (w.kquant != nullptr) {
    PAGELLM_CHECK(w.kquant_more.empty());  // a stacked weight of several types runs through LinearStacked
    return RunKQuantPacked(*w.kquant, x, num_rows, bias, y, kquant_kernels_);
  }
  if (w.weight.dtype == DType::kQ8_0) return RunQ8_0(w.weight, x, num_rows, bias, y, int8);
  if (w.w8a8 != nullptr) return RunW8A8(*w.w8a8, x, num_rows, bias, y, int8);
  if (num_rows > options_.gemv_max_rows && w.dnnl != nullptr && w.dnnl->Run(x, num_rows, y)) {
    if (!w.bias.empty()) {
      const int64_t n = w.out_features();
      ParallelFor(num_rows, num_rows * n > 65536, [&](int64_t m) {
        for (int64_t i = 0; i < n; ++i) y[m * n + i] += w.bias[static_cast<size_t>(i)];
      });
    }
    return;
  }
  if (w.bf16 != nullptr) return RunBf16Packed(*w.bf16, x, num_rows, bias, y, options_.isa == CpuIsa::kAvx512);
  GemvArgs args{.x = x, .num_rows = num_rows, .k = w.in_features(), .w = w.weight.data,
                .w_dtype = w.weight.dtype, .n = w.out_features(),
                .bias = w.bias.empty() ? nullptr : w.bias.data(), .y = y};
  if (options_.isa == CpuIsa::kAvx512) {
    GemvAvx512(args);
  } else {
    GemvAvx2(args);
  }
}

void CpuBackend::Rope(const RopeTable& table, std::span<const int32_t> positions, int64_t num_heads,
                      int64_t head_dim, float* x) {
  const int64_t half = table.rotary_dim / 2;
  const int64_t num_tokens = static_cast<int64_t>(positions.size());
  PAGELLM_CHECK(table.rotary_dim <= head_dim);
  ParallelFor(num_tokens, num_tokens * num_heads * half > 16384, [&](int64_t t) {
    const int32_t pos = positions[static_cast<size_t>(t)];
    PAGELLM_CHECK(pos >= 0 && pos < table.max_positions);
    const float* c = table.cos_row(pos);
    const float* s = table.sin_row(pos);
    for (int64_t h = 0; h < num_heads; ++h) {
      float* x1 = x + (t * num_heads + h) * head_dim;
      float* x2 = x1 + half;
      int64_t j = 0;
      for (; j + 8 <= half; j += 8) {
        __m256 a = _mm256_loadu_ps(x1 + j), b = _mm256_loadu_ps(x2 + j);
        __m256 cv = _mm256_loadu_ps(c + j), sv = _mm256_loadu_ps(s + j);
        _mm256_storeu_ps(x1 + j, _mm256_fmsub_ps(a, cv, _mm256_mul_ps(b, sv)));
        _mm256_storeu_ps(x2 + j, _mm256_fmadd_ps(b, cv, _mm256_mul_ps(a, sv)));
      }
      for (; j < half; ++j) {
        float a = x1[j], b = x2[j];
        x1[j] = a * c[j] - b * s[j];
        x2[j] = b * c[j] + a * s[j];
      }
    }
  });
}

void CpuBackend::SiluMul(const float* gate, const float* up, int64_t n, float* out) {
  constexpr int64_t kChunk = 4096;
  const int64_t num_chunks = (n + kChunk - 1) / kChunk;
  // Below ~64k elements (a few rows: a decode or verification step) waking the other
  // threads costs more than the work: 15,360 elements took 5-10 us alone, 10-125 us split.
  ParallelFor(num_chunks, n > 65536, [&](int64_t c) {
    const int64_t end = std::min(n, (c + 1) * kChunk);
    int64_t i = c * kChunk;
    const __m256 one = _mm256_set1_ps(1.0f);
    for (; i + 8 <= end; i += 8) {
      __m256 g = _mm256_loadu_ps(gate + i);
      __m256 e = Exp(_mm256_sub_ps(_mm256_setzero_ps(), g));
      __m256 silu = _mm256_div_ps(g, _mm256_add_ps(one, e));
      _mm256_storeu_ps(out + i, _mm256_mul_ps(silu, _mm256_loadu_ps(up + i)));
    }
    for (; i < end; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
  });
}

void CpuBackend::AddInPlace(const float* y, int64_t n, float* x) {
  ParallelFor(n, n > 65536, [&](int64_t i) { x[i] += y[i]; });
}

void CpuBackend::WriteKv(const float* k, const float* v, std::span<const int64_t> slot_mapping,
                         const KvLayerView& cache) {
  const int64_t num_tokens = static_cast<int64_t>(slot_mapping.size());
  const int64_t nkv = cache.num_kv_heads, hd = cache.head_dim;
  const size_t elem = DTypeSize(cache.dtype);
  // Each row's stores land in another sequence's block, mostly not in any cache: the time
  // is the misses, which two threads overlap better than one (16 rows of Qwen3-0.6B, 2-core
  // Zen 5: 43-52 us serial, 28-32 us on two threads; one row stays on the calling thread).
  ParallelFor(num_tokens, num_tokens * nkv * hd >= 4096, [&](int64_t t) {
    const int64_t slot = slot_mapping[static_cast<size_t>(t)];
    if (slot < 0) return;
    PAGELLM_CHECK(slot < cache.num_slots());
    for (int64_t h = 0; h < nkv; ++h) {
      const size_t dst = static_cast<size_t>(cache.ElementIndex(slot / cache.block_size, h, slot % cache.block_size));
      StoreRow(k + (t * nkv + h) * hd, hd, cache.dtype, static_cast<char*>(cache.k) + dst * elem);
      StoreRow(v + (t * nkv + h) * hd, hd, cache.dtype, static_cast<char*>(cache.v) + dst * elem);
    }
  });
}

void CpuBackend::PagedAttention(const float* q, const KvLayerView& cache, const AttentionBatch& batch,
                                const AttentionDims& dims, float* out) {
  PAGELLM_CHECK(dims.head_dim == cache.head_dim && dims.num_kv_heads == cache.num_kv_heads &&
                dims.num_heads % dims.num_kv_heads == 0);
  if (dims.head_dim % 16 != 0 || dims.head_dim > 512 || cache.block_size > 256) {
    fallback_.PagedAttention(q, cache, batch, dims, out);
  } else if (options_.isa == CpuIsa::kAvx512) {
    PagedAttentionAvx512(q, cache, batch, dims, out);
  } else {
    PagedAttentionAvx2(q, cache, batch, dims, out);
  }
}

}  // namespace pagellm
