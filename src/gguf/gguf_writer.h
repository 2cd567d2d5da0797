// GgufWriter: writes GGUF v3 files laid out exactly as llama.cpp's gguf writer does
// (header, metadata, tensor infos, padding to `general.alignment`, then each tensor's
// data padded to the alignment, offsets in insertion order), so llama.cpp's strict
// "offset == running padded size" check accepts them.
//
//   GgufWriter w;
//   w.AddMetadata("general.architecture", GgufValue::String("qwen3"));
//   w.AddTensor("token_embd.weight", GgmlType::kF16, {H, V}, std::move(bytes));
//   w.AddTensor("blk.0.attn_q.weight", GgmlType::kQ8_0, {H, nh*hd},
//               [&](std::span<std::byte> out) { return QuantizeInto(out); });  // streamed
//   PAGELLM_RETURN_IF_ERROR(w.WriteFile("out.gguf"));
//
// Tensor data is either owned bytes or produced on demand while writing, so converting a
// large model never holds all of it in memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "gguf/gguf_types.h"
#include "gguf/gguf_value.h"

namespace pagellm {

class GgufWriter {
 public:
  // Fills exactly GgmlRowBytes(type, num_elements) bytes.
  using TensorProducer = std::function<Status(std::span<std::byte> out)>;

  // Precondition: key not added before. "general.alignment" (uint32) changes the alignment.
  void AddMetadata(std::string key, GgufValue value);
  // `ne` in ggml order (ne[0] fastest); `bytes` must have the exact size for type and ne.
  Status AddTensor(std::string name, GgmlType type, std::vector<int64_t> ne, std::vector<std::byte> bytes);
  Status AddTensor(std::string name, GgmlType type, std::vector<int64_t> ne, TensorProducer producer);

  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return metadata_; }
  size_t num_tensors() const { return tensors_.size(); }

  // Writes to `path` (replacing it); errors name the path.
  Status WriteFile(const std::string& path) const;
  // The whole file as bytes (tests).
  StatusOr<std::string> WriteToString() const;

 private:
  struct PendingTensor {
    std::string name;
    GgmlType type;
    std::vector<int64_t> ne;
    size_t num_bytes;
    std::vector<std::byte> bytes;  // used when producer is empty
    TensorProducer producer;
  };
  Status AddPending(PendingTensor tensor);
  uint32_t alignment() const;
  std::string SerializeHeader() const;
  // Calls `sink` with consecutive pieces of the file.
  Status Emit(const std::function<Status(std::string_view)>& sink) const;

  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::vector<PendingTensor> tensors_;
};

// Appends the GGUF encoding of `value` (without its type tag) to `out`.
void AppendGgufValue(const GgufValue& value, std::string* out);

}  // namespace pagellm
