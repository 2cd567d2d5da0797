// The whole GDN mixer core (conv + SiLU, q/k l2norm, gates, delta rule, gated norm) and
// Qwen3-Next un-grouping against tests/golden/gdn_reference.py, an independent float64
// PyTorch implementation of docs/qwen-architectures.md §4, run live on random inputs.
// The C++ side splits the sequence into a chunked prefill and 1-token decode steps, so
// the conv-state and recurrent-state hand-offs are checked too.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "model/hybrid/gdn_mixer.h"
#include "model/hybrid/gdn_test_util.h"
#include "model/hybrid/qwen3_next_layout.h"

namespace pagellm {
namespace {

namespace fs = std::filesystem;

const GdnDims kDims{.num_k_heads = 2, .num_v_heads = 4, .k_head_dim = 32, .v_head_dim = 32};
constexpr int64_t kTokens = 80, kPrefill = 70;  // then 10 decode steps
constexpr float kEps = 1e-6f;

void WriteF32(const fs::path& dir, const std::string& name, const std::vector<float>& v) {
  std::ofstream(dir / (name + ".f32"), std::ios::binary)
      .write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
}

std::vector<double> ReadF64(const fs::path& dir, const std::string& name, size_t n) {
  std::vector<double> v(n, NAN);
  std::ifstream in(dir / ("ref_" + name + ".f64"), std::ios::binary);
  in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(n * sizeof(double)));
  EXPECT_EQ(static_cast<size_t>(in.gcount()), n * sizeof(double)) << name;
  return v;
}

// max |got - want| / max(max |want|, 1e-3): scale-free so it reads the same for every tensor.
double RelErr(const std::vector<float>& got, const std::vector<double>& want) {
  double err = got.size() == want.size() ? 0.0 : INFINITY, scale = 1e-3;
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    const double d = std::fabs(got[i] - want[i]);
    if (!(d <= err)) err = d;
    scale = std::max(scale, std::fabs(want[i]));
  }
  return err / scale;
}

struct LayerInputs {
  std::map<std::string, std::vector<float>> t;
  LayerInputs() {
    const int64_t c = kDims.conv_dim(), vd = kDims.value_dim(), nv = kDims.num_v_heads, T = kTokens;
    t["mixed"] = RandomUniform(T * c, 1, -2.0f, 2.0f);
    t["z"] = RandomUniform(T * vd, 2, -3.0f, 3.0f);
    t["b"] = RandomUniform(T * nv, 3, -3.0f, 3.0f);
    t["a"] = RandomUniform(T * nv, 4, -3.0f, 3.0f);
    t["conv_weight"] = RandomUniform(c * 4, 5, -0.6f, 0.6f);
    t["a_log"] = RandomUniform(nv, 6, -1.5f, 0.5f);
    t["dt_bias"] = RandomUniform(nv, 7, -1.0f, 1.0f);
    t["norm_weight"] = RandomUniform(kDims.v_head_dim, 8, 0.5f, 1.5f);
    t["conv_state0"] = RandomUniform(3 * c, 9, -2.0f, 2.0f);
    t["state0"] = RandomUniform(kDims.state_floats(), 10, -0.5f, 0.5f);
    t["qkvz_grouped"] = RandomUniform(T * (c + vd), 11, -1.0f, 1.0f);
    t["ba_grouped"] = RandomUniform(T * 2 * nv, 12, -1.0f, 1.0f);
  }
};

struct LayerOutputs {
  std::vector<float> core = std::vector<float>(kTokens * kDims.value_dim());
  std::vector<float> y = std::vector<float>(kTokens * kDims.value_dim());
  std::vector<float> state, conv_state;
};

// Tokens [t0, t0 + n) through GdnMixerForward, continuing out's states.
void RunSegment(LayerInputs& in, int64_t t0, int64_t n, LayerOutputs& out) {
  const int64_t c = kDims.conv_dim(), vd = kDims.value_dim(), nv = kDims.num_v_heads;
  GdnMixerWorkspace ws(kDims, n);
  const GdnLayerWeights weights{.conv_weight = in.t["conv_weight"].data(),
                                .a_log = in.t["a_log"].data(),
                                .dt_bias = in.t["dt_bias"].data(),
                                .norm_weight = in.t["norm_weight"].data(),
                                .norm_eps = kEps};
  const GdnProjections proj{.mixed = in.t["mixed"].data() + t0 * c,
                            .z = in.t["z"].data() + t0 * vd,
                            .b = in.t["b"].data() + t0 * nv,
                            .a = in.t["a"].data() + t0 * nv};
  GdnMixerForward(kDims, weights, n, proj, {out.conv_state.data(), out.state.data()}, ws, out.y.data() + t0 * vd);
  std::copy(ws.core_output(), ws.core_output() + n * vd, out.core.begin() + t0 * vd);
}

TEST(GdnGoldenTest, MatchesFloat64PyTorchReference) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("pagellm_gdn_golden_{}", getpid());
  fs::create_directories(dir);
  LayerInputs in;
  for (const auto& [name, v] : in.t) WriteF32(dir, name, v);
  std::ofstream(dir / "meta.json") << fmt::format(
      R"({{"nk": {}, "nv": {}, "dk": {}, "dv": {}, "kernel": 4, "num_tokens": {}, "eps": {}}})", kDims.num_k_heads,
      kDims.num_v_heads, kDims.k_head_dim, kDims.v_head_dim, kTokens, kEps);
  const std::string cmd = fmt::format("/usr/bin/python3 {}/tests/golden/gdn_reference.py {}", PAGELLM_SOURCE_DIR,
                                      dir.string());
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;

  LayerOutputs out;
  out.state = in.t["state0"];
  out.conv_state = in.t["conv_state0"];
  // Chunked prefill (70 >= kGdnChunkedMinTokens), a 3-token recurrent step, then decode.
  RunSegment(in, 0, kPrefill, out);
  RunSegment(in, kPrefill, 3, out);
  for (int64_t t = kPrefill + 3; t < kTokens; ++t) RunSegment(in, t, 1, out);

  const size_t nvd = kTokens * kDims.value_dim();
  const double e_core = RelErr(out.core, ReadF64(dir, "core_out", nvd));
  const double e_y = RelErr(out.y, ReadF64(dir, "y", nvd));
  const double e_state = RelErr(out.state, ReadF64(dir, "state", kDims.state_floats()));
  const double e_conv = RelErr(out.conv_state, ReadF64(dir, "conv_state", kDims.conv_state_floats()));
  std::printf("  vs float64 PyTorch (max abs err / max abs): core %.2e  y %.2e  state %.2e  conv_state %.2e\n",
              e_core, e_y, e_state, e_conv);
  EXPECT_LE(e_core, 1e-5);
  EXPECT_LE(e_y, 1e-4);  // the norm divides by rms(o): a few ulp more
  EXPECT_LE(e_state, 1e-5);
  EXPECT_EQ(e_conv, 0.0);  // a copy of the last inputs

  const int64_t c = kDims.conv_dim(), vd = kDims.value_dim(), nv = kDims.num_v_heads;
  std::vector<float> flat(kTokens * (c + vd)), ba_flat(kTokens * 2 * nv);
  GatherColumns(in.t["qkvz_grouped"].data(), kTokens, Qwen3NextQkvzSourceIndex(kDims), flat.data());
  GatherColumns(in.t["ba_grouped"].data(), kTokens, Qwen3NextBaSourceIndex(kDims), ba_flat.data());
  EXPECT_EQ(RelErr(flat, ReadF64(dir, "qkvz_flat", flat.size())), 0.0);
  EXPECT_EQ(RelErr(ba_flat, ReadF64(dir, "ba_flat", ba_flat.size())), 0.0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace pagellm
