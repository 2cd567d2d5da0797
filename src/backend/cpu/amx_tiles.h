// AMX tiles behind one small interface, so a kernel written once runs on the hardware
// (AmxTiles: ldtilecfg, tileloadd, tdpbsud, tilestored) or on a software model of it
// (ModelTiles) that checks every shape rule the hardware enforces. The model is how the
// AMX kernels are tested, bit for bit, on machines without AMX (tdpbsud is exact integer
// math: both give the same int32 sums).
//
// Semantics (Intel SDM, "Intel AMX"): 8 tiles of up to 16 rows x 64 bytes, shapes set by a
// 64-byte configuration. tdpbsud C, A, B: C[m][n] (int32) += sum over k of
// A[m][k] (signed byte) * B[k / 4][4 n + k % 4] (unsigned byte), A of M rows x K bytes, B of
// K / 4 rows x 4 N bytes (the "VNNI" layout), C of M rows x 4 N bytes.
//
// Include only after a `#pragma GCC target("amx-tile,amx-int8,...")`; AmxTiles must only
// run where CpuSupportsAmxInt8() (cpu_isa.h) said yes, on a thread that has not changed
// the configuration since Configure.
//
//   TileConfig cfg;  cfg.Set(0, 16, 64);  ...
//   AmxTiles t;  t.Configure(cfg);  t.Zero<4>();  t.Load<0>(a, lda);  t.Load<2>(b, 64);
//   t.DpBsud<4, 0, 2>();  t.Store<4>(c, 64);  t.Release();
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "common/status.h"

namespace pagellm {

inline constexpr int kAmxTiles = 8;
inline constexpr int kAmxMaxRows = 16;
inline constexpr int kAmxMaxRowBytes = 64;

// ldtilecfg's memory operand: palette 1, then bytes per row and rows of each tile.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};

  void Set(int tile, int num_rows, int row_bytes) {
    rows[tile] = static_cast<uint8_t>(num_rows);
    colsb[tile] = static_cast<uint16_t>(row_bytes);
  }
};
static_assert(sizeof(TileConfig) == 64);

// GCC's tile intrinsics paste their tile numbers into the instruction text, so each
// template below picks its instruction from a list of literal numbers.
#define PAGELLM_AMX_EACH_TILE(OP) OP(0) OP(1) OP(2) OP(3) OP(4) OP(5) OP(6) OP(7)

// The hardware. DpBsud takes C in tiles 4-7, A in 0-1 and B in 2-3 (the k-quant kernels'
// assignment); other operand sets fail to compile.
// GCC 12's _tile_loadd and _tile_loadconfig are asm statements that do not tell the compiler
// they read memory (no memory operand for the tile's rows, 8 of the config's 64 bytes): the
// compiler barrier before each keeps stores to what they read (the activations, the unpacked
// codes, the config) from being moved past them or dropped, should they ever be written in
// the same function (LTO, a local buffer). _tile_stored has a memory clobber.
struct AmxTiles {
  void Configure(const TileConfig& cfg) {
    asm volatile("" ::: "memory");
    _tile_loadconfig(&cfg);
  }
  template <int T>
  void Load(const void* p, int64_t stride) {
    static_assert(T >= 0 && T < kAmxTiles);
    asm volatile("" ::: "memory");
#define PAGELLM_AMX_LOAD(t) \
  if constexpr (T == t) _tile_loadd(t, p, stride);
    PAGELLM_AMX_EACH_TILE(PAGELLM_AMX_LOAD)
#undef PAGELLM_AMX_LOAD
  }
  template <int T>
  void Zero() {
    static_assert(T >= 0 && T < kAmxTiles);
#define PAGELLM_AMX_ZERO(t) \
  if constexpr (T == t) _tile_zero(t);
    PAGELLM_AMX_EACH_TILE(PAGELLM_AMX_ZERO)
#undef PAGELLM_AMX_ZERO
  }
  template <int C, int A, int B>
  void DpBsud() {
    static_assert(C >= 4 && C <= 7 && A >= 0 && A <= 1 && B >= 2 && B <= 3);
#define PAGELLM_AMX_DP(c, a, b) \
  if constexpr (C == c && A == a && B == b) _tile_dpbsud(c, a, b);
#define PAGELLM_AMX_DP_C(c) PAGELLM_AMX_DP(c, 0, 2) PAGELLM_AMX_DP(c, 0, 3) PAGELLM_AMX_DP(c, 1, 2) PAGELLM_AMX_DP(c, 1, 3)
    PAGELLM_AMX_DP_C(4) PAGELLM_AMX_DP_C(5) PAGELLM_AMX_DP_C(6) PAGELLM_AMX_DP_C(7)
#undef PAGELLM_AMX_DP_C
#undef PAGELLM_AMX_DP
  }
  template <int T>
  void Store(void* p, int64_t stride) {
    static_assert(T >= 0 && T < kAmxTiles);
#define PAGELLM_AMX_STORE(t) \
  if constexpr (T == t) _tile_stored(t, p, stride);
    PAGELLM_AMX_EACH_TILE(PAGELLM_AMX_STORE)
#undef PAGELLM_AMX_STORE
  }
  // Back to the init state: a context switch then saves no tile data.
  void Release() { _tile_release(); }
};

// The same operations on 8 tiles in memory. PAGELLM_CHECKs stand where the hardware
// faults (#GP on a configuration ldtilecfg refuses, #UD on shapes that do not chain, rows
// past the configuration). As on the hardware, a configuration or a release zeroes every
// tile, so no kernel can pass here by reading a tile's data across them.
class ModelTiles {
 public:
  void Configure(const TileConfig& cfg) {
    PAGELLM_CHECK(cfg.palette == 1 && cfg.start_row == 0);
    for (uint8_t b : cfg.reserved) PAGELLM_CHECK(b == 0);
    for (int t = 0; t < 16; ++t) {
      const bool used = cfg.rows[t] != 0 || cfg.colsb[t] != 0;
      if (!used) continue;
      PAGELLM_CHECK(t < kAmxTiles && cfg.rows[t] != 0 && cfg.colsb[t] != 0);  // both set or neither
      PAGELLM_CHECK(cfg.rows[t] <= kAmxMaxRows && cfg.colsb[t] <= kAmxMaxRowBytes);
    }
    for (int t = 0; t < kAmxTiles; ++t) {
      tiles_[t].rows = cfg.rows[t];
      tiles_[t].colsb = cfg.colsb[t];
      std::memset(tiles_[t].data, 0, sizeof(tiles_[t].data));
    }
    configured_ = true;
  }
  template <int T>
  void Load(const void* p, int64_t stride) {
    Tile& t = Configured(T);
    std::memset(t.data, 0, sizeof(t.data));  // bytes past colsb read as zero
    for (int r = 0; r < t.rows; ++r) std::memcpy(t.data[r], static_cast<const uint8_t*>(p) + r * stride, t.colsb);
  }
  template <int T>
  void Zero() {
    std::memset(Configured(T).data, 0, sizeof(tiles_[T].data));
  }
  template <int C, int A, int B>
  void DpBsud() {
    static_assert(C != A && C != B && A != B);
    Tile &c = Configured(C), &a = Configured(A), &b = Configured(B);
    PAGELLM_CHECK(c.rows == a.rows && c.colsb == b.colsb && a.colsb == 4 * b.rows && c.colsb % 4 == 0);
    for (int m = 0; m < c.rows; ++m) {
      for (int n = 0; n < c.colsb / 4; ++n) {
        uint32_t sum;
        std::memcpy(&sum, c.data[m] + 4 * n, 4);
        for (int k = 0; k < a.colsb; ++k) {
          const int32_t prod = static_cast<int8_t>(a.data[m][k]) * static_cast<int32_t>(b.data[k / 4][4 * n + k % 4]);
          sum += static_cast<uint32_t>(prod);  // wraps as the hardware's int32 sum does
        }
        std::memcpy(c.data[m] + 4 * n, &sum, 4);
      }
    }
  }
  template <int T>
  void Store(void* p, int64_t stride) {
    const Tile& t = Configured(T);
    for (int r = 0; r < t.rows; ++r) std::memcpy(static_cast<uint8_t*>(p) + r * stride, t.data[r], t.colsb);
  }
  void Release() {
    for (Tile& t : tiles_) std::memset(t.data, 0, sizeof(t.data));
    configured_ = false;
  }

 private:
  struct Tile {
    int rows = 0, colsb = 0;
    uint8_t data[kAmxMaxRows][kAmxMaxRowBytes];
  };
  Tile& Configured(int t) {
    PAGELLM_CHECK(t >= 0 && t < kAmxTiles && configured_ && tiles_[t].rows > 0 && tiles_[t].colsb > 0);
    return tiles_[t];
  }
  Tile tiles_[kAmxTiles];
  bool configured_ = false;
};

}  // namespace pagellm
