#include "model/safetensors.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "common/logging.h"

namespace pagellm {
namespace {

namespace fs = std::filesystem;

StatusOr<DType> ParseEntryDtype(const Json& info, const std::string& name, const std::string& file) {
  auto it = info.find("dtype");
  if (it == info.end() || !it->is_string()) {
    return DataLossError(fmt::format("{}: tensor '{}' has no string 'dtype'", file, name));
  }
  std::string dtype = it->get<std::string>();
  if (dtype == "BF16") return DType::kBF16;
  if (dtype == "F16") return DType::kF16;
  if (dtype == "F32") return DType::kF32;
  // Integer tensors: compact checkpoints' row ids, int4 checkpoints' packed codes, g_idx
  // and compressed-tensors' weight_shape (torch.tensor(shape) is int64), int8 checkpoints'
  // codes (compressed-tensors W8A8, msModelSlim).
  if (dtype == "I32") return DType::kI32;
  if (dtype == "I64") return DType::kI64;
  if (dtype == "I8") return DType::kI8;
  // fp8 checkpoints' weights. pagellm has no fp8 DType (nothing computes in fp8): the bytes
  // come out as kU8, which no other safetensors dtype maps to, and the fp8 loader
  // (model/hf_fp8_linear.h) converts them. E5M2 has no reader at all, so it is refused here.
  if (dtype == "F8_E4M3") return DType::kU8;
  return UnimplementedError(fmt::format(
      "{}: tensor '{}' has dtype {}; only BF16, F16, F32, F8_E4M3 (and I8 / I32 / I64 integer) tensors are "
      "supported", file, name, dtype));
}

// Parses one header entry; checks shape and offsets against the data section size.
StatusOr<SafetensorsEntry> ParseEntry(const std::string& name, const Json& info, uint64_t data_size,
                                      const std::string& file) {
  if (!info.is_object()) return DataLossError(fmt::format("{}: header entry '{}' is not an object", file, name));
  SafetensorsEntry entry;
  entry.name = name;
  PAGELLM_ASSIGN_OR_RETURN(entry.dtype, ParseEntryDtype(info, name, file));
  auto shape = info.find("shape");
  if (shape == info.end() || !shape->is_array()) {
    return DataLossError(fmt::format("{}: tensor '{}' has no 'shape' array", file, name));
  }
  // Element count capped well below 2^63 bytes so the products below cannot overflow.
  constexpr uint64_t kMaxElements = uint64_t{1} << 56;
  uint64_t numel = 1;
  for (const Json& dim : *shape) {
    if (!dim.is_number_unsigned()) {
      return DataLossError(fmt::format("{}: tensor '{}' has a bad shape {}", file, name, shape->dump()));
    }
    uint64_t d = dim.get<uint64_t>();
    if (d != 0 && numel > kMaxElements / d) {
      return DataLossError(fmt::format("{}: tensor '{}' shape {} is too large", file, name, shape->dump()));
    }
    numel *= d;
    entry.shape.push_back(static_cast<int64_t>(d));
  }
  auto offsets = info.find("data_offsets");
  if (offsets == info.end() || !offsets->is_array() || offsets->size() != 2 || !(*offsets)[0].is_number_unsigned() ||
      !(*offsets)[1].is_number_unsigned()) {
    return DataLossError(fmt::format("{}: tensor '{}' needs 'data_offsets' [begin, end]", file, name));
  }
  entry.begin = (*offsets)[0].get<uint64_t>();
  entry.end = (*offsets)[1].get<uint64_t>();
  if (entry.begin > entry.end || entry.end > data_size) {
    return DataLossError(fmt::format(
        "{}: tensor '{}' data_offsets [{}, {}] are outside the data section of {} bytes (truncated file?)", file,
        name, entry.begin, entry.end, data_size));
  }
  uint64_t expected = numel * DTypeSize(entry.dtype);
  if (entry.end - entry.begin != expected) {
    return DataLossError(fmt::format("{}: tensor '{}' has {} bytes but shape {} of {} needs {}", file, name,
                                     entry.end - entry.begin, ShapeToString(entry.shape), DTypeName(entry.dtype),
                                     expected));
  }
  return entry;
}

Status CheckNoOverlap(std::vector<SafetensorsEntry>& entries, const std::string& file) {
  std::sort(entries.begin(), entries.end(),
            [](const SafetensorsEntry& a, const SafetensorsEntry& b) { return a.begin < b.begin; });
  for (size_t i = 1; i < entries.size(); ++i) {
    const SafetensorsEntry& prev = entries[i - 1];
    if (entries[i].begin < prev.end) {
      return DataLossError(fmt::format("{}: tensors '{}' [{}, {}] and '{}' [{}, {}] overlap", file, prev.name,
                                       prev.begin, prev.end, entries[i].name, entries[i].begin, entries[i].end));
    }
  }
  return OkStatus();
}

StatusOr<std::map<std::string, std::string>> ParseWeightMap(const Json& index, const std::string& path) {
  auto it = index.find("weight_map");
  if (it == index.end() || !it->is_object()) return DataLossError(fmt::format("{}: no 'weight_map' object", path));
  std::map<std::string, std::string> weight_map;
  for (const auto& [name, file] : it->items()) {
    if (!file.is_string()) return DataLossError(fmt::format("{}: weight_map['{}'] is not a string", path, name));
    std::string shard = file.get<std::string>();
    if (shard.empty() || shard[0] == '/' || shard.find("..") != std::string::npos) {
      return DataLossError(fmt::format("{}: weight_map['{}'] names a file outside the model directory: '{}'",
                                       path, name, shard));
    }
    weight_map[name] = shard;
  }
  if (weight_map.empty()) return DataLossError(fmt::format("{}: 'weight_map' is empty", path));
  return weight_map;
}

}  // namespace

StatusOr<SafetensorsHeader> ParseSafetensorsHeader(std::span<const std::byte> bytes, const std::string& file) {
  if (bytes.size() < 8) {
    return DataLossError(fmt::format("{}: file of {} bytes is too short for a safetensors header", file, bytes.size()));
  }
  uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = (header_size << 8) | static_cast<uint8_t>(bytes[i]);
  if (header_size > kMaxSafetensorsHeaderBytes || header_size > bytes.size() - 8) {
    return DataLossError(fmt::format("{}: header length {} exceeds the file size {} (truncated or not safetensors)",
                                     file, header_size, bytes.size()));
  }
  std::string_view text(reinterpret_cast<const char*>(bytes.data()) + 8, header_size);
  auto json = ParseJson(text, file + " header");
  if (!json.ok()) return DataLossError(json.status().message());
  if (!json->is_object()) return DataLossError(fmt::format("{}: header is not a JSON object", file));
  SafetensorsHeader header;
  header.data_offset = 8 + header_size;
  uint64_t data_size = bytes.size() - header.data_offset;
  for (const auto& [name, info] : json->items()) {
    if (name == "__metadata__") {
      if (!info.is_object()) return DataLossError(fmt::format("{}: __metadata__ is not an object", file));
      for (const auto& [key, value] : info.items()) {
        if (value.is_string()) header.metadata[key] = value.get<std::string>();
      }
      continue;
    }
    PAGELLM_ASSIGN_OR_RETURN(SafetensorsEntry entry, ParseEntry(name, info, data_size, file));
    header.entries.push_back(std::move(entry));
  }
  PAGELLM_RETURN_IF_ERROR(CheckNoOverlap(header.entries, file));
  return header;
}

Status SafetensorsCheckpoint::AddFile(const std::string& path) {
  PAGELLM_ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> mapped, MappedFile::Open(path));
  PAGELLM_ASSIGN_OR_RETURN(SafetensorsHeader header, ParseSafetensorsHeader(mapped->bytes(), path));
  std::shared_ptr<MappedFile> file(std::move(mapped));
  size_t file_idx = files_.size();
  files_.push_back(path);
  mappings_.push_back(file);
  const std::byte* data = file->bytes().data() + header.data_offset;
  for (SafetensorsEntry& e : header.entries) {
    if (tensors_.count(e.name) != 0) {
      return DataLossError(fmt::format("tensor '{}' appears in both {} and {}", e.name,
                                       files_[tensors_[e.name].file_idx], path));
    }
    Entry entry;
    entry.file_idx = file_idx;
    entry.view.dtype = e.dtype;
    entry.view.shape = e.shape;
    const std::byte* src = data + e.begin;
    if (reinterpret_cast<uintptr_t>(src) % DTypeSize(e.dtype) != 0) {
      // Writers that do not pad the header leave tensors unaligned; typed kernels need
      // aligned data, so copy the (rare) misaligned tensor once.
      std::shared_ptr<void> copy = AllocateAligned(e.end - e.begin);
      std::memcpy(copy.get(), src, e.end - e.begin);
      entry.view.data = copy.get();
      copies_.push_back(std::move(copy));
    } else {
      entry.view.data = const_cast<std::byte*>(src);  // read-only mapping; views are not written
    }
    tensors_[e.name] = std::move(entry);
  }
  return OkStatus();
}

Status SafetensorsCheckpoint::OpenIndex(const std::string& index_path, const ProgressFn& progress) {
  PAGELLM_ASSIGN_OR_RETURN(Json index, ReadJsonFile(index_path));
  if (!index.is_object()) return DataLossError(fmt::format("{}: not a JSON object", index_path));
  PAGELLM_ASSIGN_OR_RETURN(auto weight_map, ParseWeightMap(index, index_path));
  std::set<std::string> shards;
  for (const auto& [name, shard] : weight_map) shards.insert(shard);
  std::string dir = fs::path(index_path).parent_path().string();
  size_t done = 0;
  for (const std::string& shard : shards) {
    PAGELLM_RETURN_IF_ERROR(AddFile(dir.empty() ? shard : dir + "/" + shard));
    if (progress) progress(++done, shards.size());
  }
  for (const auto& [name, shard] : weight_map) {
    auto it = tensors_.find(name);
    if (it == tensors_.end()) {
      return DataLossError(fmt::format("{} maps tensor '{}' to {}, but that file does not contain it", index_path,
                                       name, shard));
    }
    if (fs::path(files_[it->second.file_idx]).filename() != fs::path(shard).filename()) {
      return DataLossError(fmt::format("{} maps tensor '{}' to {}, but it was found in {}", index_path, name, shard,
                                       files_[it->second.file_idx]));
    }
  }
  return OkStatus();
}

StatusOr<std::unique_ptr<SafetensorsCheckpoint>> SafetensorsCheckpoint::Open(const std::string& path,
                                                                             const ProgressFn& progress) {
  std::unique_ptr<SafetensorsCheckpoint> ckpt(new SafetensorsCheckpoint());
  std::error_code ec;
  std::string target = path;
  if (fs::is_directory(path, ec)) {
    if (fs::exists(path + "/model.safetensors.index.json", ec)) {
      target = path + "/model.safetensors.index.json";
    } else if (fs::exists(path + "/model.safetensors", ec)) {
      target = path + "/model.safetensors";
    } else {
      return NotFoundError(
          fmt::format("{} has neither model.safetensors nor model.safetensors.index.json", path));
    }
  }
  if (target.size() >= 5 && target.compare(target.size() - 5, 5, ".json") == 0) {
    PAGELLM_RETURN_IF_ERROR(ckpt->OpenIndex(target, progress));
  } else {
    PAGELLM_RETURN_IF_ERROR(ckpt->AddFile(target));
    if (progress) progress(1, 1);
  }
  return ckpt;
}

const TensorView* SafetensorsCheckpoint::Find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second.view;
}

std::vector<std::string> SafetensorsCheckpoint::Names() const {
  std::vector<std::string> names;
  names.reserve(tensors_.size());
  for (const auto& [name, entry] : tensors_) names.push_back(name);
  return names;
}

std::string SafetensorsCheckpoint::Origin(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? std::string("(absent)") : files_[it->second.file_idx];
}

std::vector<std::shared_ptr<const void>> SafetensorsCheckpoint::Storage() const {
  std::vector<std::shared_ptr<const void>> storage(mappings_.begin(), mappings_.end());
  storage.insert(storage.end(), copies_.begin(), copies_.end());
  return storage;
}

uint64_t SafetensorsCheckpoint::total_bytes() const {
  uint64_t total = 0;
  for (const auto& [name, entry] : tensors_) total += entry.view.nbytes();
  return total;
}

}  // namespace pagellm
