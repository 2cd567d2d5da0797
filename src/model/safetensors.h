// Safetensors reader: memory-maps one file or a sharded checkpoint and exposes its
// tensors as TensorViews straight into the mapping (no copy).
//
//   PAGELLM_ASSIGN_OR_RETURN(auto ckpt, SafetensorsCheckpoint::Open("/models/qwen3-0.6b"));
//   const TensorView* w = ckpt->Find("model.norm.weight");
//
// Format (https://github.com/huggingface/safetensors): u64 little-endian header size N,
// N bytes of JSON {"name": {"dtype", "shape", "data_offsets": [begin, end]}, ...,
// "__metadata__": {...}}, then the data; offsets are relative to the data start.
// Everything in the header is untrusted: sizes, offsets and shapes are checked against
// the file so a truncated or corrupt file fails with its name instead of crashing.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/mapped_file.h"
#include "common/status.h"
#include "model/tensor_source.h"

namespace pagellm {

// The safetensors library refuses headers above 100 MB; so do we.
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;

struct SafetensorsEntry {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // byte offsets relative to the data section
  uint64_t end = 0;
};

struct SafetensorsHeader {
  uint64_t data_offset = 0;  // 8 + header size
  std::vector<SafetensorsEntry> entries;
  std::map<std::string, std::string> metadata;  // "__metadata__" (string values only)
};

// Parses and validates the header of the safetensors file held in `bytes`. Only
// BF16/F16/F32 tensors, I8/I32/I64 integer ones and F8_E4M3 (fp8 checkpoints' weights,
// exposed as DType::kU8 bytes: no other dtype reads as kU8) are accepted. `file` is used in
// error messages.
StatusOr<SafetensorsHeader> ParseSafetensorsHeader(std::span<const std::byte> bytes, const std::string& file);

class SafetensorsCheckpoint final : public TensorSource {
 public:
  // Called after each file is mapped and validated: (files done, files total).
  using ProgressFn = std::function<void(size_t, size_t)>;

  // `path` is a .safetensors file, a model.safetensors.index.json, or a directory
  // holding model.safetensors.index.json (preferred) or model.safetensors.
  static StatusOr<std::unique_ptr<SafetensorsCheckpoint>> Open(const std::string& path,
                                                               const ProgressFn& progress = {});

  const TensorView* Find(const std::string& name) const override;
  std::vector<std::string> Names() const override;
  std::string Origin(const std::string& name) const override;
  std::vector<std::shared_ptr<const void>> Storage() const override;

  const std::vector<std::string>& files() const { return files_; }
  size_t num_tensors() const { return tensors_.size(); }
  uint64_t total_bytes() const;

 private:
  struct Entry {
    TensorView view;
    size_t file_idx = 0;
  };
  Status AddFile(const std::string& path);
  Status OpenIndex(const std::string& index_path, const ProgressFn& progress);

  std::vector<std::string> files_;
  std::vector<std::shared_ptr<MappedFile>> mappings_;
  std::vector<std::shared_ptr<void>> copies_;  // tensors whose offsets were misaligned
  std::map<std::string, Entry> tensors_;
};

}  // namespace pagellm
