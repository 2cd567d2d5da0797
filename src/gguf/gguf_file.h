// GgufFile: a memory-mapped, fully validated GGUF (v2/v3) file: metadata and tensor infos,
// with views of each tensor's raw bytes in the file's data section.
//
//   PAGELLM_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> gguf, GgufFile::Open(path));
//   PAGELLM_ASSIGN_OR_RETURN(std::string arch, gguf->GetString("general.architecture"));
//   PAGELLM_ASSIGN_OR_RETURN(int64_t n_layers, gguf->GetInt(arch + ".block_count"));
//   const GgufTensorInfo* t = gguf->FindTensor("token_embd.weight");
//   // t->ne = {H, V} (ggml order, ne[0] fastest), t->data = raw bytes of type t->type.
//
// Open() checks everything a later reader would otherwise trust: magic, version, counts
// and lengths against the bytes left, value types, tensor types, dims and their product,
// alignment, data inside the file and no two tensors overlapping. Every failure is a
// Status naming the file and the problem; no input makes it read out of bounds.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/mapped_file.h"
#include "common/status.h"
#include "gguf/gguf_types.h"
#include "gguf/gguf_value.h"

namespace pagellm {

struct GgufTensorInfo {
  std::string name;
  GgmlType type = GgmlType::kF32;
  std::vector<int64_t> ne;              // ggml order: ne[0] is the fastest (contiguous) dim
  uint64_t offset = 0;                  // from the start of the data section
  int64_t num_elements = 0;
  std::span<const std::byte> data;      // num_bytes() raw bytes inside the file

  size_t num_bytes() const { return data.size(); }
  // PyTorch-order shape (reverse of ne): ne {H, V} -> {V, H}.
  std::vector<int64_t> TorchShape() const { return {ne.rbegin(), ne.rend()}; }
};

class GgufFile {
 public:
  // Maps and validates `path`.
  static StatusOr<std::unique_ptr<GgufFile>> Open(const std::string& path);
  // Validates an in-memory image (tests, fuzzing). `bytes` must outlive the result;
  // `what` names it in errors.
  static StatusOr<std::unique_ptr<GgufFile>> Parse(std::span<const std::byte> bytes,
                                                   const std::string& what);

  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // absolute file offset of tensor data
  const std::string& what() const { return what_; }

  // Metadata in file order.
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return metadata_; }
  const GgufValue* Find(const std::string& key) const;
  // Typed getters: NotFound if absent, InvalidArgument (naming the key) on a type mismatch.
  StatusOr<int64_t> GetInt(const std::string& key) const;
  StatusOr<double> GetDouble(const std::string& key) const;
  StatusOr<bool> GetBool(const std::string& key) const;
  StatusOr<std::string> GetString(const std::string& key) const;
  StatusOr<std::vector<std::string>> GetStringArray(const std::string& key) const;
  StatusOr<std::vector<int64_t>> GetIntArray(const std::string& key) const;

  // Tensor infos in file order.
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* FindTensor(const std::string& name) const;

 private:
  friend class GgufParser;
  GgufFile() = default;
  StatusOr<const GgufValue*> Require(const std::string& key) const;

  std::unique_ptr<MappedFile> mapped_;  // null when parsed from memory
  std::string what_;
  uint32_t version_ = 0;
  uint32_t alignment_ = kGgufDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::map<std::string, size_t, std::less<>> metadata_index_;
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
};

}  // namespace pagellm
