#include "backend/cpu/dnnl_int8_matmul.h"

#include <map>
#include <mutex>

#include <fmt/format.h>
#include <oneapi/dnnl/dnnl.hpp>

#include "common/logging.h"

namespace pagellm {
namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

dnnl::engine& CpuEngine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

constexpr int64_t kLayoutProbeRows = 64;  // M used to pick the packed layout

}  // namespace

struct DnnlInt8Matmul::Impl {
  int64_t n = 0, k = 0;
  dnnl::memory::desc packed_md;
  dnnl::memory packed;
  std::mutex mu;
  std::map<int64_t, std::unique_ptr<dnnl::matmul>> by_rows;  // guarded by mu

  // Source rows may be strided (k_padded); oneDNN only needs dims + strides.
  dnnl::matmul::primitive_desc MakePd(int64_t m, int64_t x_stride, const dnnl::memory::desc& wei_md) const {
    dnnl::memory::desc src_md({m, k}, dt::s8, dnnl::memory::dims{x_stride, 1});
    dnnl::memory::desc dst_md({m, n}, dt::s32, tag::ab);
    return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src_md, wei_md, dst_md), CpuEngine());
  }

  dnnl::matmul* Get(int64_t m, int64_t x_stride) {
    std::lock_guard<std::mutex> lock(mu);
    const int64_t key = m * (int64_t{1} << 32) + x_stride;
    auto it = by_rows.find(key);
    if (it != by_rows.end()) return it->second.get();
    std::unique_ptr<dnnl::matmul> prim;
    try {
      prim = std::make_unique<dnnl::matmul>(MakePd(m, x_stride, packed_md));
    } catch (const dnnl::error& e) {
      PLOG_WARN("oneDNN int8 matmul M={} K={} N={} unavailable: {}", m, k, n, e.what());
    }
    dnnl::matmul* raw = prim.get();
    by_rows.emplace(key, std::move(prim));
    return raw;
  }
};

DnnlInt8Matmul::DnnlInt8Matmul(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DnnlInt8Matmul::~DnnlInt8Matmul() = default;

StatusOr<std::unique_ptr<DnnlInt8Matmul>> DnnlInt8Matmul::Create(const int8_t* w, int64_t n, int64_t k,
                                                                 int64_t k_padded) {
  auto impl = std::make_unique<Impl>();
  impl->n = n;
  impl->k = k;
  try {
    dnnl::memory::desc any_md({k, n}, dt::s8, tag::any);
    impl->packed_md = impl->MakePd(kLayoutProbeRows, k_padded, any_md).weights_desc();
    // Row-major [N, K] with row stride k_padded is the {K, N} matrix with strides {1, k_padded}.
    dnnl::memory plain({{k, n}, dt::s8, dnnl::memory::dims{1, k_padded}}, CpuEngine(), const_cast<int8_t*>(w));
    impl->packed = dnnl::memory(impl->packed_md, CpuEngine());
    dnnl::stream stream(CpuEngine());
    dnnl::reorder(plain, impl->packed).execute(stream, plain, impl->packed);
    stream.wait();
  } catch (const dnnl::error& e) {
    return InternalError(fmt::format("oneDNN int8 matmul setup for [{}, {}] failed: {}", n, k, e.what()));
  }
  return std::unique_ptr<DnnlInt8Matmul>(new DnnlInt8Matmul(std::move(impl)));
}

bool DnnlInt8Matmul::Run(const int8_t* x, int64_t num_rows, int64_t x_stride, int32_t* dots) {
  dnnl::matmul* prim = impl_->Get(num_rows, x_stride);
  if (prim == nullptr) return false;
  const Impl& im = *impl_;
  dnnl::memory src({{num_rows, im.k}, dt::s8, dnnl::memory::dims{x_stride, 1}}, CpuEngine(),
                   const_cast<int8_t*>(x));
  dnnl::memory dst({{num_rows, im.n}, dt::s32, tag::ab}, CpuEngine(), dots);
  dnnl::stream stream(CpuEngine());
  prim->execute(stream, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, impl_->packed}, {DNNL_ARG_DST, dst}});
  stream.wait();
  return true;
}

size_t DnnlInt8Matmul::packed_bytes() const { return impl_->packed_md.get_size(); }

}  // namespace pagellm
