// TensorSource: a read-only set of named host tensors, whatever holds them
// (memory-mapped safetensors shards, or buffers filled by the dummy generator).
//
//   const TensorView* embed = source.Find("model.embed_tokens.weight");  // nullptr if absent
//   for (const std::string& name : source.Names()) ...
//
// TensorStore is the in-memory implementation: it owns one buffer per tensor.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "tensor/tensor_view.h"

namespace pagellm {

class TensorSource {
 public:
  virtual ~TensorSource() = default;
  // The tensor called `name`, or nullptr. The view stays valid while the source (or
  // the Storage() handles) live.
  virtual const TensorView* Find(const std::string& name) const = 0;
  // Every tensor name, sorted.
  virtual std::vector<std::string> Names() const = 0;
  // Where `name` comes from, for messages ("/m/model-00001-of-00002.safetensors").
  virtual std::string Origin(const std::string& name) const = 0;
  // Ownership handles for the memory behind the views; ModelWeights keeps them.
  virtual std::vector<std::shared_ptr<const void>> Storage() const = 0;
};

class TensorStore final : public TensorSource {
 public:
  // Allocates a zeroed tensor (64-byte aligned) and returns its view; replaces any
  // tensor of the same name.
  TensorView& Allocate(const std::string& name, DType dtype, std::vector<int64_t> shape);

  const TensorView* Find(const std::string& name) const override;
  std::vector<std::string> Names() const override;
  std::string Origin(const std::string& name) const override { return "memory"; }
  std::vector<std::shared_ptr<const void>> Storage() const override;

  size_t num_tensors() const { return tensors_.size(); }
  size_t total_bytes() const;

 private:
  struct Entry {
    TensorView view;
    std::shared_ptr<void> buffer;
  };
  std::map<std::string, Entry> tensors_;
};

// Allocates `nbytes` 64-byte aligned bytes (zeroed) owned by the returned handle.
std::shared_ptr<void> AllocateAligned(size_t nbytes);

}  // namespace pagellm
