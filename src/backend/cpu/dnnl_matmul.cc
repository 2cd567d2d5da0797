#include "backend/cpu/dnnl_matmul.h"

#include <immintrin.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <vector>

#include <fmt/format.h>
#include <oneapi/dnnl/dnnl.hpp>

#include "common/logging.h"
#include "tensor/half.h"

namespace pagellm {
namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

dnnl::engine& CpuEngine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// dst[i] = bf16(src[i]) (RNE, NaN kept quiet as F32ToBf16), i < n. Prefill converts
// [512, 3072] activations per call, so this is vectorised and split across threads.
void ConvertToBf16(const float* src, int64_t n, uint16_t* dst) {
  constexpr int64_t kChunk = 8192;
  const int64_t num_chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (num_chunks > 1)
  for (int64_t c = 0; c < num_chunks; ++c) {
    const int64_t end = std::min(n, (c + 1) * kChunk);
    int64_t i = c * kChunk;
    for (; i + 8 <= end; i += 8) {
      __m256i bits = _mm256_castps_si256(_mm256_loadu_ps(src + i));
      __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
      __m256i r = _mm256_srli_epi32(_mm256_add_epi32(bits, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
      // NaN (|bits| > 0x7f800000): keep the top half with the quiet bit set.
      __m256i abs = _mm256_and_si256(bits, _mm256_set1_epi32(0x7fffffff));
      __m256i nan = _mm256_cmpgt_epi32(abs, _mm256_set1_epi32(0x7f800000));
      __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(0x40));
      r = _mm256_blendv_epi8(r, quiet, nan);
      __m128i packed = _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), packed);
    }
    for (; i < end; ++i) dst[i] = F32ToBf16(src[i]);
  }
}

// The M used to choose the packed layout; any M works afterwards.
constexpr int64_t kLayoutProbeRows = 64;

}  // namespace

bool DnnlHasExactInt8() {
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  for (dnnl::cpu_isa vnni : {dnnl::cpu_isa::avx512_core_vnni, dnnl::cpu_isa::avx2_vnni}) {
    const auto bits = static_cast<unsigned>(vnni);
    if ((isa & bits) == bits) return true;
  }
  return false;
}

bool DnnlUsesAmx() {
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto amx = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_amx);
  return (isa & amx) == amx;
}

struct DnnlMatmul::Impl {
  int64_t n = 0, k = 0;
  dt src_dt = dt::f32;
  dnnl::memory::desc packed_md;
  dnnl::memory packed;
  std::mutex mu;
  std::map<int64_t, std::unique_ptr<dnnl::matmul>> by_rows;  // guarded by mu

  dnnl::matmul::primitive_desc MakePd(int64_t m, const dnnl::memory::desc& wei_md) const {
    dnnl::memory::desc src_md({m, k}, src_dt, tag::ab);
    dnnl::memory::desc dst_md({m, n}, dt::f32, tag::ab);
    return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src_md, wei_md, dst_md), CpuEngine());
  }

  dnnl::matmul* Get(int64_t m) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = by_rows.find(m);
    if (it != by_rows.end()) return it->second.get();
    std::unique_ptr<dnnl::matmul> prim;
    try {
      prim = std::make_unique<dnnl::matmul>(MakePd(m, packed_md));
    } catch (const dnnl::error& e) {
      PLOG_WARN("oneDNN matmul M={} K={} N={} unavailable: {}", m, k, n, e.what());
    }
    dnnl::matmul* raw = prim.get();
    by_rows.emplace(m, std::move(prim));
    return raw;
  }
};

DnnlMatmul::DnnlMatmul(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DnnlMatmul::~DnnlMatmul() = default;

StatusOr<std::unique_ptr<DnnlMatmul>> DnnlMatmul::Create(const TensorView& weight) {
  auto impl = std::make_unique<Impl>();
  impl->n = weight.dim(0);
  impl->k = weight.dim(1);
  std::vector<float> widened;  // f16 -> f32 staging, freed after packing
  void* plain_ptr = weight.data;
  dt wei_dt = dt::f32;
  if (weight.dtype == DType::kBF16) {
    wei_dt = dt::bf16;
  } else if (weight.dtype == DType::kF16) {
    widened.resize(static_cast<size_t>(weight.numel()));
    const auto* src = weight.as<const uint16_t>();
    for (size_t i = 0; i < widened.size(); ++i) widened[i] = F16ToF32(src[i]);
    plain_ptr = widened.data();
  } else if (weight.dtype != DType::kF32) {
    return UnimplementedError(fmt::format("oneDNN matmul: weight dtype {}", DTypeName(weight.dtype)));
  }
  impl->src_dt = wei_dt;
  try {
    dnnl::memory::desc any_md({impl->k, impl->n}, wei_dt, tag::any);
    impl->packed_md = impl->MakePd(kLayoutProbeRows, any_md).weights_desc();
    // PyTorch's [N, K] row-major is the {K, N} matrix with strides {1, K}: tag ba.
    dnnl::memory plain({{impl->k, impl->n}, wei_dt, tag::ba}, CpuEngine(), plain_ptr);
    impl->packed = dnnl::memory(impl->packed_md, CpuEngine());
    dnnl::stream stream(CpuEngine());
    dnnl::reorder(plain, impl->packed).execute(stream, plain, impl->packed);
    stream.wait();
  } catch (const dnnl::error& e) {
    return InternalError(fmt::format("oneDNN matmul setup for [{}, {}] failed: {}", impl->n, impl->k, e.what()));
  }
  return std::unique_ptr<DnnlMatmul>(new DnnlMatmul(std::move(impl)));
}

bool DnnlMatmul::Run(const float* x, int64_t num_rows, float* y) {
  dnnl::matmul* prim = impl_->Get(num_rows);
  if (prim == nullptr) return false;
  const Impl& im = *impl_;
  const void* src_ptr = x;
  thread_local std::vector<uint16_t> x_bf16;
  if (im.src_dt == dt::bf16) {
    const int64_t count = num_rows * im.k;
    if (x_bf16.size() < static_cast<size_t>(count)) x_bf16.resize(static_cast<size_t>(count));
    ConvertToBf16(x, count, x_bf16.data());
    src_ptr = x_bf16.data();
  }
  dnnl::memory src({{num_rows, im.k}, im.src_dt, tag::ab}, CpuEngine(), const_cast<void*>(src_ptr));
  dnnl::memory dst({{num_rows, im.n}, dt::f32, tag::ab}, CpuEngine(), y);
  dnnl::stream stream(CpuEngine());
  prim->execute(stream, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, impl_->packed}, {DNNL_ARG_DST, dst}});
  stream.wait();
  return true;
}

size_t DnnlMatmul::packed_bytes() const { return impl_->packed_md.get_size(); }

}  // namespace pagellm
