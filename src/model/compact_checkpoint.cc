#include "model/compact_checkpoint.h"

#include <cstring>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "common/json.h"
#include "common/logging.h"
#include "common/mapped_file.h"
#include "model/dummy_checkpoint.h"
#include "model/safetensors.h"
#include "model/safetensors_writer.h"

namespace pagellm {
namespace {

namespace fs = std::filesystem;

constexpr const char* kCompactFile = "compact.safetensors";
constexpr const char* kCompactSuffix = ".compact";
constexpr const char* kRowsSuffix = ".rows";

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Checks a NAME.compact / NAME.rows pair against the vocabulary size.
Status CheckPair(const std::string& name, const TensorView& compact, const TensorView& rows, int64_t vocab_size) {
  if (rows.dtype != DType::kI32 || rows.rank() != 1) {
    return InvalidArgumentError(fmt::format("{}{}: must be a 1-D int32 tensor", name, kRowsSuffix));
  }
  if (compact.rank() < 1 || compact.dim(0) != rows.dim(0) + 1) {
    return InvalidArgumentError(fmt::format("{}{}: needs {} rows (one per id of {}{} plus the shared row), has {}",
                                            name, kCompactSuffix, rows.dim(0) + 1, name, kRowsSuffix,
                                            compact.rank() ? compact.dim(0) : 0));
  }
  const int32_t* ids = rows.as<const int32_t>();
  std::set<int32_t> seen;
  for (int64_t i = 0; i < rows.numel(); ++i) {
    if (ids[i] < 0 || ids[i] >= vocab_size || !seen.insert(ids[i]).second) {
      return InvalidArgumentError(fmt::format("{}{}[{}] = {}: not a distinct id below vocab_size {}", name,
                                              kRowsSuffix, i, ids[i], vocab_size));
    }
  }
  return OkStatus();
}

// Adds NAME [vocab_size, ...] to `writer`, filled from its compact rows.
Status AddExpanded(SafetensorsWriter& writer, const std::string& name, const TensorView& compact,
                   const TensorView& rows, int64_t vocab_size) {
  PAGELLM_RETURN_IF_ERROR(CheckPair(name, compact, rows, vocab_size));
  std::vector<int64_t> shape = compact.shape;
  shape[0] = vocab_size;
  const size_t row_bytes = compact.nbytes() / static_cast<size_t>(compact.dim(0));
  return writer.Add(name, compact.dtype, shape, [compact, rows, row_bytes, vocab_size](std::span<std::byte> out) {
    const auto* src = static_cast<const std::byte*>(compact.data);
    const std::byte* shared = src + static_cast<size_t>(rows.numel()) * row_bytes;
    for (int64_t id = 0; id < vocab_size; ++id) std::memcpy(out.data() + id * row_bytes, shared, row_bytes);
    const int32_t* ids = rows.as<const int32_t>();
    for (int64_t i = 0; i < rows.numel(); ++i) std::memcpy(out.data() + ids[i] * row_bytes, src + i * row_bytes, row_bytes);
  });
}

Status CopySmallFiles(const std::string& src_dir, const std::string& out_dir, std::vector<std::string>& files) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(src_dir, ec)) {
    std::string name = entry.path().filename().string();
    if (!entry.is_regular_file() || name == kCompactFile) continue;
    fs::copy_file(entry.path(), fs::path(out_dir) / name, fs::copy_options::overwrite_existing, ec);
    if (ec) return PermissionDeniedError(fmt::format("cannot copy {} to {}: {}", name, out_dir, ec.message()));
    files.push_back(name);
  }
  if (ec) return NotFoundError(fmt::format("cannot list {}: {}", src_dir, ec.message()));
  return OkStatus();
}

}  // namespace

StatusOr<std::vector<std::string>> UnpackCompactCheckpoint(const UnpackOptions& options) {
  const std::string compact_path = options.src_dir + "/" + kCompactFile;
  PAGELLM_ASSIGN_OR_RETURN(Json config, ReadJsonFile(options.src_dir + "/config.json"));
  if (!config.contains("vocab_size") || !config["vocab_size"].is_number_integer()) {
    return InvalidArgumentError(fmt::format("{}/config.json: no integer vocab_size", options.src_dir));
  }
  const int64_t vocab_size = config["vocab_size"].get<int64_t>();
  PAGELLM_ASSIGN_OR_RETURN(auto ckpt, SafetensorsCheckpoint::Open(compact_path));
  std::error_code ec;
  fs::create_directories(options.out_dir, ec);
  if (ec) return PermissionDeniedError(fmt::format("cannot create {}: {}", options.out_dir, ec.message()));

  SafetensorsWriter writer;
  for (const std::string& name : ckpt->Names()) {
    if (EndsWith(name, kRowsSuffix)) {
      std::string base = name.substr(0, name.size() - std::strlen(kRowsSuffix));
      if (!ckpt->Find(base + kCompactSuffix)) {
        return InvalidArgumentError(fmt::format("{}: {} has no {}{}", compact_path, name, base, kCompactSuffix));
      }
      continue;
    }
    const TensorView* t = ckpt->Find(name);
    if (!EndsWith(name, kCompactSuffix)) {
      PAGELLM_RETURN_IF_ERROR(writer.Add(name, *t));
      continue;
    }
    std::string base = name.substr(0, name.size() - std::strlen(kCompactSuffix));
    const TensorView* rows = ckpt->Find(base + kRowsSuffix);
    if (!rows) return InvalidArgumentError(fmt::format("{}: {} has no {}{}", compact_path, name, base, kRowsSuffix));
    PAGELLM_RETURN_IF_ERROR(AddExpanded(writer, base, *t, *rows, vocab_size).WithPrefix(compact_path));
  }
  std::vector<std::string> files;
  PAGELLM_RETURN_IF_ERROR(CopySmallFiles(options.src_dir, options.out_dir, files));
  std::string tokenizer_dir = options.tokenizer_dir.empty() ? DefaultDummyTokenizerDir() : options.tokenizer_dir;
  for (const char* name : {"tokenizer.json", "tokenizer_config.json"}) {
    fs::copy_file(tokenizer_dir + "/" + name, options.out_dir + "/" + name, fs::copy_options::overwrite_existing, ec);
    if (ec) {
      return NotFoundError(fmt::format("tokenizer file {}/{}: {} (run scripts/install-refs.sh or pass --tokenizer DIR)",
                                       tokenizer_dir, name, ec.message()));
    }
    files.push_back(name);
  }
  PAGELLM_ASSIGN_OR_RETURN(auto weight_files, writer.WriteCheckpoint(options.out_dir, uint64_t{4} << 30));
  files.insert(files.end(), weight_files.begin(), weight_files.end());
  PLOG_INFO("unpacked {} into {}: {} tensors, {:.1f} MB", options.src_dir, options.out_dir, writer.num_tensors(),
            writer.total_bytes() / 1e6);
  return files;
}

}  // namespace pagellm
