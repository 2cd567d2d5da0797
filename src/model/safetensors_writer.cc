#include "model/safetensors_writer.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <fstream>
#include <set>

#include <fmt/format.h>

#include "common/json.h"
#include "common/mapped_file.h"

namespace pagellm {

uint64_t SafetensorsWriter::Pending::nbytes() const {
  uint64_t n = DTypeSize(dtype);
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

Status SafetensorsWriter::Add(const std::string& name, DType dtype, std::vector<int64_t> shape, FillFn fill) {
  if (name.empty() || name == "__metadata__") return InvalidArgumentError(fmt::format("bad tensor name '{}'", name));
  for (const Pending& p : tensors_) {
    if (p.name == name) return Status(StatusCode::kAlreadyExists, fmt::format("tensor '{}' added twice", name));
  }
  for (int64_t d : shape) {
    if (d < 0) return InvalidArgumentError(fmt::format("tensor '{}' has a negative dimension", name));
  }
  tensors_.push_back(Pending{name, dtype, std::move(shape), std::move(fill)});
  return OkStatus();
}

Status SafetensorsWriter::Add(const std::string& name, const TensorView& view) {
  const std::byte* src = static_cast<const std::byte*>(view.data);
  size_t nbytes = view.nbytes();
  return Add(name, view.dtype, view.shape,
             [src, nbytes](std::span<std::byte> out) { std::memcpy(out.data(), src, std::min(nbytes, out.size())); });
}

uint64_t SafetensorsWriter::total_bytes() const {
  uint64_t total = 0;
  for (const Pending& p : tensors_) total += p.nbytes();
  return total;
}

Status SafetensorsWriter::WriteTensors(const std::string& path, const std::vector<const Pending*>& unsorted) const {
  std::vector<const Pending*> tensors = unsorted;
  std::sort(tensors.begin(), tensors.end(), [](const Pending* a, const Pending* b) { return a->name < b->name; });
  OrderedJson header = OrderedJson::object();
  header["__metadata__"] = OrderedJson(metadata_);
  uint64_t offset = 0;
  for (const Pending* p : tensors) {
    header[p->name] = {{"dtype", DTypeToSafetensors(p->dtype)},
                       {"shape", p->shape},
                       {"data_offsets", {offset, offset + p->nbytes()}}};
    offset += p->nbytes();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return PermissionDeniedError(fmt::format("cannot create {}", path));
  uint64_t size = text.size();
  unsigned char size_le[8];
  for (int i = 0; i < 8; ++i) size_le[i] = static_cast<unsigned char>(size >> (8 * i));
  out.write(reinterpret_cast<const char*>(size_le), 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  std::vector<std::byte> buffer;
  for (const Pending* p : tensors) {
    buffer.assign(p->nbytes(), std::byte{0});
    p->fill(std::span<std::byte>(buffer));
    out.write(reinterpret_cast<const char*>(buffer.data()), static_cast<std::streamsize>(buffer.size()));
    if (!out) return DataLossError(fmt::format("cannot write {} (disk full?)", path));
  }
  out.close();
  if (!out) return DataLossError(fmt::format("cannot write {}", path));
  return OkStatus();
}

Status SafetensorsWriter::WriteFile(const std::string& path) const {
  std::vector<const Pending*> all;
  for (const Pending& p : tensors_) all.push_back(&p);
  return WriteTensors(path, all);
}

StatusOr<std::vector<std::string>> SafetensorsWriter::WriteCheckpoint(const std::string& dir,
                                                                     uint64_t max_shard_bytes) const {
  if (total_bytes() <= max_shard_bytes) {
    PAGELLM_RETURN_IF_ERROR(WriteFile(dir + "/model.safetensors"));
    return std::vector<std::string>{"model.safetensors"};
  }
  // Greedy in insertion order; a tensor larger than the limit gets a shard of its own.
  std::vector<std::vector<const Pending*>> shards(1);
  uint64_t shard_bytes = 0;
  for (const Pending& p : tensors_) {
    if (!shards.back().empty() && shard_bytes + p.nbytes() > max_shard_bytes) {
      shards.emplace_back();
      shard_bytes = 0;
    }
    shards.back().push_back(&p);
    shard_bytes += p.nbytes();
  }
  std::vector<std::string> names;
  OrderedJson weight_map = OrderedJson::object();
  std::map<std::string, std::string> sorted_map;
  for (size_t i = 0; i < shards.size(); ++i) {
    std::string name = fmt::format("model-{:05d}-of-{:05d}.safetensors", i + 1, shards.size());
    PAGELLM_RETURN_IF_ERROR(WriteTensors(dir + "/" + name, shards[i]));
    for (const Pending* p : shards[i]) sorted_map[p->name] = name;
    names.push_back(name);
  }
  for (const auto& [tensor, file] : sorted_map) weight_map[tensor] = file;
  OrderedJson index = {{"metadata", {{"total_size", total_bytes()}}}, {"weight_map", weight_map}};
  PAGELLM_RETURN_IF_ERROR(WriteStringToFile(dir + "/model.safetensors.index.json", index.dump(2) + "\n"));
  names.push_back("model.safetensors.index.json");
  return names;
}

StatusOr<uint64_t> ParseByteSize(std::string_view text) {
  size_t digits = 0;
  while (digits < text.size() && (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.')) {
    ++digits;
  }
  std::string number(text.substr(0, digits));
  std::string unit(text.substr(digits));
  std::transform(unit.begin(), unit.end(), unit.begin(), [](unsigned char c) { return std::toupper(c); });
  static const std::map<std::string, double> kUnits = {
      {"", 1.0},      {"B", 1.0},       {"KB", 1e3},      {"MB", 1e6},      {"GB", 1e9},
      {"TB", 1e12},   {"KIB", 1024.0},  {"MIB", 1048576.0}, {"GIB", 1073741824.0}};
  auto it = kUnits.find(unit);
  char* end = nullptr;
  double value = number.empty() ? -1.0 : std::strtod(number.c_str(), &end);
  if (it == kUnits.end() || value <= 0.0 || end != number.c_str() + number.size()) {
    return InvalidArgumentError(fmt::format("bad size '{}' (expected e.g. 2GB, 500MB, 1GiB)", text));
  }
  return static_cast<uint64_t>(value * it->second);
}

}  // namespace pagellm
