// The software model of AMX tiles (amx_tiles.h) against tdpbsud's definition written out,
// including int32 wrap-around and rows/columns the configuration leaves out; its shape
// checks; and, on a CPU with AMX-INT8, the hardware against the model on the same tiles.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "backend/cpu/cpu_isa.h"

#pragma GCC push_options
#pragma GCC target("amx-tile,amx-int8")
#include "backend/cpu/amx_tiles.h"

namespace pagellm {
namespace {

// C (rows x n int32, stride 64 bytes) += A (rows x kb signed bytes) . B (kb / 4 x 4n unsigned).
void NaiveDpBsud(const int8_t* a, int64_t lda, const uint8_t* b, int rows, int kb, int n, int32_t* c) {
  for (int m = 0; m < rows; ++m) {
    for (int j = 0; j < n; ++j) {
      int64_t sum = c[m * 16 + j];
      for (int k = 0; k < kb; ++k) sum += static_cast<int64_t>(a[m * lda + k]) * b[(k / 4) * 64 + 4 * j + k % 4];
      c[m * 16 + j] = static_cast<int32_t>(static_cast<uint32_t>(sum));  // int32 wraps
    }
  }
}

struct Shape {
  int rows, kb, n;
};

// One chain: C = init; C += A0 . B0; C += A1 . B1 (the C tile stays in its register).
template <class Tiles>
std::vector<int32_t> Chain(const Shape& s, const std::vector<int8_t>& a, const std::vector<uint8_t>& b,
                           const std::vector<int32_t>& init) {
  TileConfig cfg;
  cfg.Set(0, s.rows, s.kb);
  cfg.Set(1, s.rows, s.kb);
  cfg.Set(2, s.kb / 4, 4 * s.n);
  cfg.Set(3, s.kb / 4, 4 * s.n);
  cfg.Set(4, s.rows, 4 * s.n);
  Tiles t;
  t.Configure(cfg);
  std::vector<int32_t> c = init;
  t.template Load<4>(c.data(), 64);
  t.template Load<0>(a.data(), 80);  // a row stride that is not the tile's width
  t.template Load<1>(a.data() + 16 * 80, 80);
  t.template Load<2>(b.data(), 64);
  t.template Load<3>(b.data() + 16 * 64, 64);
  t.template DpBsud<4, 0, 2>();
  t.template DpBsud<4, 1, 3>();
  t.template Store<4>(c.data(), 64);
  t.Release();
  return c;
}

struct Data {
  std::vector<int8_t> a = std::vector<int8_t>(32 * 80);
  std::vector<uint8_t> b = std::vector<uint8_t>(32 * 64);
  std::vector<int32_t> init = std::vector<int32_t>(16 * 16);
};

Data RandomData(uint32_t seed, bool extremes) {
  std::mt19937 rng(seed);
  Data d;
  for (auto& v : d.a) v = extremes ? int8_t{-128} : static_cast<int8_t>(rng());
  for (auto& v : d.b) v = extremes ? uint8_t{255} : static_cast<uint8_t>(rng());
  for (auto& v : d.init) v = extremes ? INT32_MIN + 5 : static_cast<int32_t>(rng() % 2000001) - 1000000;
  return d;
}

std::vector<int32_t> NaiveChain(const Shape& s, const Data& d) {
  std::vector<int32_t> c = d.init;
  NaiveDpBsud(d.a.data(), 80, d.b.data(), s.rows, s.kb, s.n, c.data());
  NaiveDpBsud(d.a.data() + 16 * 80, 80, d.b.data() + 16 * 64, s.rows, s.kb, s.n, c.data());
  return c;
}

const Shape kShapes[] = {{16, 64, 16}, {16, 32, 16}, {16, 16, 16}, {5, 32, 16}, {16, 32, 7}, {1, 4, 1}};

TEST(ModelTiles, DpBsudIsItsDefinition) {
  uint32_t seed = 1;
  for (const Shape& s : kShapes) {
    for (bool extremes : {false, true}) {
      const Data d = RandomData(seed++, extremes);
      const std::vector<int32_t> got = Chain<ModelTiles>(s, d.a, d.b, d.init), want = NaiveChain(s, d);
      for (int m = 0; m < 16; ++m) {
        for (int j = 0; j < 16; ++j) {
          // Rows and columns outside the tile are not stored: they keep their initial values.
          const int32_t expect = m < s.rows && j < s.n ? want[m * 16 + j] : d.init[m * 16 + j];
          ASSERT_EQ(got[m * 16 + j], expect) << "rows " << s.rows << " kb " << s.kb << " n " << s.n << " at " << m
                                             << "," << j << (extremes ? " extremes" : "");
        }
      }
    }
  }
}

// Where the hardware raises #UD the model stops the process: shapes that do not chain.
TEST(ModelTilesDeathTest, ShapesThatDoNotChainStop) {
  TileConfig cfg;
  cfg.Set(0, 16, 64);
  cfg.Set(2, 8, 64);  // 8 rows of B: K = 32, but A's rows hold 64 bytes
  cfg.Set(4, 16, 64);
  const auto unchained = [&cfg] {
    ModelTiles t;
    t.Configure(cfg);
    t.Zero<4>();
    t.DpBsud<4, 0, 2>();
  };
  const auto unconfigured = [] {
    ModelTiles t;
    t.Zero<4>();
  };
  EXPECT_DEATH(unchained(), "");
  EXPECT_DEATH(unconfigured(), "");
}

// Where ldtilecfg raises #GP the model stops too: reserved bytes, a start row, a tile with
// rows but no bytes (or the reverse), tiles 8-15 of palette 1.
TEST(ModelTilesDeathTest, ConfigurationsLdtilecfgRefusesStop) {
  const auto configure = [](const TileConfig& cfg) {
    ModelTiles t;
    t.Configure(cfg);
  };
  TileConfig good;
  good.Set(0, 16, 64);
  configure(good);  // accepted
  TileConfig reserved = good, start_row = good, rows_only = good, bytes_only = good, ninth = good;
  reserved.reserved[3] = 1;
  start_row.start_row = 2;
  rows_only.rows[5] = 4;
  bytes_only.colsb[5] = 16;
  ninth.Set(8, 16, 64);
  EXPECT_DEATH(configure(reserved), "");
  EXPECT_DEATH(configure(start_row), "");
  EXPECT_DEATH(configure(rows_only), "");
  EXPECT_DEATH(configure(bytes_only), "");
  EXPECT_DEATH(configure(ninth), "");
}

// As the hardware, a new configuration (and a release) zeroes the tiles: a kernel cannot
// pass on the model by reading a tile's data across one.
TEST(ModelTiles, ConfigureAndReleaseZeroTheTiles) {
  TileConfig cfg;
  cfg.Set(0, 16, 64);
  cfg.Set(4, 16, 64);
  std::vector<uint8_t> ones(16 * 64, 1), out(16 * 64, 7);
  ModelTiles t;
  t.Configure(cfg);
  t.Load<0>(ones.data(), 64);
  t.Configure(cfg);
  t.Store<0>(out.data(), 64);
  EXPECT_EQ(out, std::vector<uint8_t>(16 * 64, 0));
  t.Load<0>(ones.data(), 64);
  t.Release();
  t.Configure(cfg);
  std::fill(out.begin(), out.end(), 7);
  t.Store<0>(out.data(), 64);
  EXPECT_EQ(out, std::vector<uint8_t>(16 * 64, 0));
}

TEST(AmxTiles, HardwareEqualsTheModel) {
  if (!CpuSupportsAmxInt8()) {
    GTEST_SKIP() << "this CPU (or OS) has no AMX-INT8: the model alone is tested here";
  }
  uint32_t seed = 100;
  for (const Shape& s : kShapes) {
    for (bool extremes : {false, true}) {
      const Data d = RandomData(seed++, extremes);
      EXPECT_EQ(Chain<AmxTiles>(s, d.a, d.b, d.init), Chain<ModelTiles>(s, d.a, d.b, d.init))
          << "rows " << s.rows << " kb " << s.kb << " n " << s.n;
    }
  }
}

}  // namespace
}  // namespace pagellm

#pragma GCC pop_options
