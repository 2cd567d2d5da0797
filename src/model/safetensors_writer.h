// SafetensorsWriter: writes real safetensors files, one or sharded with an index,
// byte-compatible with what Hugging Face's `save_file` / `save_pretrained` produce.
//
//   SafetensorsWriter writer;
//   writer.Add("model.norm.weight", DType::kBF16, {1024}, [&](std::span<std::byte> out) { ... });
//   PAGELLM_ASSIGN_OR_RETURN(auto files, writer.WriteCheckpoint(dir, 2'000'000'000));
//
// Tensor bytes are produced on demand while writing, one tensor at a time, so a
// multi-gigabyte checkpoint never has to sit in memory whole.
// Layout: u64 LE header size, JSON header {"__metadata__": {"format": "pt"}, then the
// tensors sorted by name}, padded with spaces to a multiple of 8 bytes (as the
// safetensors library does, so every tensor is 8-byte aligned), then the data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "tensor/tensor_view.h"

namespace pagellm {

class SafetensorsWriter {
 public:
  // Fills exactly the tensor's bytes (numel * dtype size), little-endian.
  using FillFn = std::function<void(std::span<std::byte> out)>;

  // Adds a tensor whose bytes `fill` produces while writing. Fails on a duplicate name.
  Status Add(const std::string& name, DType dtype, std::vector<int64_t> shape, FillFn fill);
  // Adds a copy of `view` (its memory must stay valid until the write).
  Status Add(const std::string& name, const TensorView& view);
  void SetMetadata(const std::string& key, const std::string& value) { metadata_[key] = value; }

  // Writes all tensors into one file at `path`.
  Status WriteFile(const std::string& path) const;

  // Writes `dir`/model.safetensors, or, when the tensors total more than
  // `max_shard_bytes`, shards model-0000i-of-0000n.safetensors (filled in insertion
  // order, as transformers does) plus model.safetensors.index.json. Returns the
  // file names written (without `dir`).
  StatusOr<std::vector<std::string>> WriteCheckpoint(const std::string& dir, uint64_t max_shard_bytes) const;

  uint64_t total_bytes() const;
  size_t num_tensors() const { return tensors_.size(); }

 private:
  struct Pending {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
    FillFn fill;
    uint64_t nbytes() const;
  };
  Status WriteTensors(const std::string& path, const std::vector<const Pending*>& tensors) const;

  std::vector<Pending> tensors_;
  std::map<std::string, std::string> metadata_{{"format", "pt"}};
};

// Parses sizes as transformers' `max_shard_size` does: "2GB" = 2e9, "500MB", "1GiB"
// = 2^30, "4096" = bytes.
StatusOr<uint64_t> ParseByteSize(std::string_view text);

}  // namespace pagellm
