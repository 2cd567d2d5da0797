#include "model/tensor_source.h"

#include <cstdlib>
#include <cstring>

namespace pagellm {

std::shared_ptr<void> AllocateAligned(size_t nbytes) {
  size_t rounded = (nbytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  PAGELLM_CHECK(p != nullptr);
  std::memset(p, 0, rounded == 0 ? 64 : rounded);
  return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
}

TensorView& TensorStore::Allocate(const std::string& name, DType dtype, std::vector<int64_t> shape) {
  Entry entry;
  entry.view.dtype = dtype;
  entry.view.shape = std::move(shape);
  entry.buffer = AllocateAligned(entry.view.nbytes());
  entry.view.data = entry.buffer.get();
  Entry& stored = tensors_[name] = std::move(entry);
  return stored.view;
}

const TensorView* TensorStore::Find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second.view;
}

std::vector<std::string> TensorStore::Names() const {
  std::vector<std::string> names;
  names.reserve(tensors_.size());
  for (const auto& [name, entry] : tensors_) names.push_back(name);
  return names;
}

std::vector<std::shared_ptr<const void>> TensorStore::Storage() const {
  std::vector<std::shared_ptr<const void>> storage;
  for (const auto& [name, entry] : tensors_) storage.push_back(entry.buffer);
  return storage;
}

size_t TensorStore::total_bytes() const {
  size_t total = 0;
  for (const auto& [name, entry] : tensors_) total += entry.view.nbytes();
  return total;
}

}  // namespace pagellm
