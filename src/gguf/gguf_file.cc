#include "gguf/gguf_file.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace pagellm {
namespace {

// Nested arrays deeper than this are rejected (no real file nests at all; this bounds
// the recursion on hostile input).
constexpr int kMaxArrayDepth = 8;

// Bounds-checked little-endian reader over the file image.
class Cursor {
 public:
  explicit Cursor(std::span<const std::byte> bytes) : bytes_(bytes) {}
  size_t pos() const { return pos_; }
  size_t remaining() const { return bytes_.size() - pos_; }

  template <typename T>
  bool Read(T* out) {
    if (remaining() < sizeof(T)) return false;
    std::memcpy(out, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool ReadString(std::string* out) {
    uint64_t len = 0;
    if (!Read(&len) || len > remaining()) return false;
    out->assign(reinterpret_cast<const char*>(bytes_.data() + pos_), static_cast<size_t>(len));
    pos_ += static_cast<size_t>(len);
    return true;
  }

 private:
  std::span<const std::byte> bytes_;
  size_t pos_ = 0;
};

uint64_t AlignUp(uint64_t x, uint64_t alignment) {
  return (x + alignment - 1) / alignment * alignment;
}

}  // namespace

// Parses the image into a GgufFile; one method per section of the format.
class GgufParser {
 public:
  GgufParser(std::span<const std::byte> bytes, GgufFile* file)
      : bytes_(bytes), cursor_(bytes), file_(file) {}

  Status Run() {
    PAGELLM_RETURN_IF_ERROR(ParseHeader());
    PAGELLM_RETURN_IF_ERROR(ParseMetadata());
    PAGELLM_RETURN_IF_ERROR(ParseAlignment());
    PAGELLM_RETURN_IF_ERROR(ParseTensorInfos());
    return PlaceTensors();
  }

 private:
  Status Error(const std::string& problem) const {
    return InvalidArgumentError(fmt::format("{}: {}", file_->what_, problem));
  }
  Status Truncated(const std::string& while_reading) const {
    return DataLossError(fmt::format("{}: file truncated at byte {} while reading {}",
                                     file_->what_, cursor_.pos(), while_reading));
  }

  Status ParseHeader();
  Status ParseMetadata();
  Status ParseValue(GgufValueType type, int depth, const std::string& key, GgufValue* out);
  Status ParseArray(int depth, const std::string& key, GgufValue* out);
  Status ParseAlignment();
  Status ParseTensorInfos();
  Status ParseTensorInfo(size_t idx, GgufTensorInfo* info);
  Status CheckDims(GgufTensorInfo* info, uint64_t* num_bytes) const;
  Status PlaceTensors();

  std::span<const std::byte> bytes_;
  Cursor cursor_;
  GgufFile* file_;
  uint64_t num_tensors_ = 0;
  std::vector<uint64_t> tensor_num_bytes_;
};

Status GgufParser::ParseHeader() {
  uint32_t magic = 0;
  if (!cursor_.Read(&magic)) return Truncated("the magic");
  if (magic != kGgufMagic) {
    return Error(fmt::format("bad magic 0x{:08x}: not a GGUF file", magic));
  }
  uint32_t version = 0;
  if (!cursor_.Read(&version)) return Truncated("the version");
  if (version == 1) return Error("GGUF v1 is not supported (re-convert the model)");
  if (version != 2 && version != 3) {
    if ((version & 0xFFFFu) == 0) {
      return Error(fmt::format("version 0x{:08x} looks byte-swapped: big-endian GGUF is not supported",
                               version));
    }
    return Error(fmt::format("unsupported GGUF version {} (supported: 2, 3)", version));
  }
  file_->version_ = version;
  return OkStatus();
}

Status GgufParser::ParseMetadata() {
  uint64_t num_kv = 0;
  if (!cursor_.Read(&num_tensors_)) return Truncated("the tensor count");
  if (!cursor_.Read(&num_kv)) return Truncated("the metadata count");
  // A tensor info takes at least 8+1+4+4+8 bytes and a key/value at least 8+1+4+1.
  if (num_tensors_ > cursor_.remaining() / 25) {
    return Error(fmt::format("tensor count {} is larger than the file can hold", num_tensors_));
  }
  if (num_kv > cursor_.remaining() / 14) {
    return Error(fmt::format("metadata count {} is larger than the file can hold", num_kv));
  }
  file_->metadata_.reserve(static_cast<size_t>(num_kv));
  for (uint64_t i = 0; i < num_kv; ++i) {
    std::string key;
    if (!cursor_.ReadString(&key)) return Truncated(fmt::format("metadata key #{}", i));
    if (key.empty()) return Error(fmt::format("metadata key #{} is empty", i));
    if (file_->metadata_index_.count(key) != 0) return Error(fmt::format("duplicate metadata key '{}'", key));
    uint32_t raw_type = 0;
    if (!cursor_.Read(&raw_type)) return Truncated(fmt::format("the type of '{}'", key));
    if (raw_type >= kGgufValueTypeCount) {
      return Error(fmt::format("metadata key '{}' has unknown value type {}", key, raw_type));
    }
    GgufValue value;
    PAGELLM_RETURN_IF_ERROR(ParseValue(static_cast<GgufValueType>(raw_type), 0, key, &value));
    file_->metadata_index_.emplace(key, file_->metadata_.size());
    file_->metadata_.emplace_back(std::move(key), std::move(value));
  }
  return OkStatus();
}

Status GgufParser::ParseValue(GgufValueType type, int depth, const std::string& key, GgufValue* out) {
  auto read = [&](auto v) -> Status {
    if (!cursor_.Read(&v)) return Truncated(fmt::format("the value of '{}'", key));
    *out = GgufValue(GgufValue::Storage(v));
    return OkStatus();
  };
  switch (type) {
    case GgufValueType::kUint8: return read(uint8_t{});
    case GgufValueType::kInt8: return read(int8_t{});
    case GgufValueType::kUint16: return read(uint16_t{});
    case GgufValueType::kInt16: return read(int16_t{});
    case GgufValueType::kUint32: return read(uint32_t{});
    case GgufValueType::kInt32: return read(int32_t{});
    case GgufValueType::kFloat32: return read(float{});
    case GgufValueType::kUint64: return read(uint64_t{});
    case GgufValueType::kInt64: return read(int64_t{});
    case GgufValueType::kFloat64: return read(double{});
    case GgufValueType::kBool: {
      uint8_t b = 0;
      if (!cursor_.Read(&b)) return Truncated(fmt::format("the value of '{}'", key));
      if (b > 1) return Error(fmt::format("metadata key '{}' has bool byte {}", key, b));
      *out = GgufValue::Bool(b != 0);
      return OkStatus();
    }
    case GgufValueType::kString: {
      std::string s;
      if (!cursor_.ReadString(&s)) return Truncated(fmt::format("the string value of '{}'", key));
      *out = GgufValue::String(std::move(s));
      return OkStatus();
    }
    case GgufValueType::kArray: return ParseArray(depth, key, out);
  }
  return Error(fmt::format("metadata key '{}' has unknown value type", key));
}

Status GgufParser::ParseArray(int depth, const std::string& key, GgufValue* out) {
  if (depth >= kMaxArrayDepth) return Error(fmt::format("metadata key '{}' nests arrays too deeply", key));
  uint32_t raw_elem = 0;
  uint64_t count = 0;
  if (!cursor_.Read(&raw_elem) || !cursor_.Read(&count)) {
    return Truncated(fmt::format("the array header of '{}'", key));
  }
  if (raw_elem >= kGgufValueTypeCount) {
    return Error(fmt::format("metadata array '{}' has unknown element type {}", key, raw_elem));
  }
  auto elem = static_cast<GgufValueType>(raw_elem);
  // Smallest encoding of one element: its fixed size, 8 for a string length, 12 for an array header.
  size_t min_elem_bytes = GgufValueTypeSize(elem);
  if (elem == GgufValueType::kString) min_elem_bytes = 8;
  if (elem == GgufValueType::kArray) min_elem_bytes = 12;
  if (count > cursor_.remaining() / min_elem_bytes) {
    return Error(fmt::format("metadata array '{}' claims {} elements of {}, more than the file holds",
                             key, count, GgufValueTypeName(elem)));
  }
  std::vector<GgufValue> items(static_cast<size_t>(count));
  for (GgufValue& item : items) PAGELLM_RETURN_IF_ERROR(ParseValue(elem, depth + 1, key, &item));
  *out = GgufValue::Array(elem, std::move(items));
  return OkStatus();
}

Status GgufParser::ParseAlignment() {
  const GgufValue* v = file_->Find("general.alignment");
  if (v == nullptr) return OkStatus();
  const uint32_t* a = std::get_if<uint32_t>(&v->storage());
  if (a == nullptr) {
    return Error(fmt::format("general.alignment must be uint32, got {}", GgufValueTypeName(v->type())));
  }
  if (*a == 0 || (*a & (*a - 1)) != 0) {
    return Error(fmt::format("general.alignment {} is not a power of two", *a));
  }
  file_->alignment_ = *a;
  return OkStatus();
}

Status GgufParser::ParseTensorInfos() {
  file_->tensors_.resize(static_cast<size_t>(num_tensors_));
  tensor_num_bytes_.resize(static_cast<size_t>(num_tensors_));
  for (size_t i = 0; i < file_->tensors_.size(); ++i) {
    GgufTensorInfo& info = file_->tensors_[i];
    PAGELLM_RETURN_IF_ERROR(ParseTensorInfo(i, &info));
    if (!file_->tensor_index_.emplace(info.name, i).second) {
      return Error(fmt::format("duplicate tensor name '{}'", info.name));
    }
    PAGELLM_RETURN_IF_ERROR(CheckDims(&info, &tensor_num_bytes_[i]));
  }
  return OkStatus();
}

Status GgufParser::ParseTensorInfo(size_t idx, GgufTensorInfo* info) {
  if (!cursor_.ReadString(&info->name)) return Truncated(fmt::format("the name of tensor #{}", idx));
  if (info->name.empty()) return Error(fmt::format("tensor #{} has an empty name", idx));
  uint32_t num_dims = 0;
  if (!cursor_.Read(&num_dims)) return Truncated(fmt::format("the dims of tensor '{}'", info->name));
  if (num_dims == 0 || num_dims > kGgmlMaxDims) {
    return Error(fmt::format("tensor '{}' has {} dims (1..{} allowed)", info->name, num_dims, kGgmlMaxDims));
  }
  info->ne.resize(num_dims);
  for (int64_t& d : info->ne) {
    uint64_t raw = 0;
    if (!cursor_.Read(&raw)) return Truncated(fmt::format("the dims of tensor '{}'", info->name));
    if (raw > static_cast<uint64_t>(INT64_MAX)) {
      return Error(fmt::format("tensor '{}' has a negative or huge dim {}", info->name, raw));
    }
    d = static_cast<int64_t>(raw);
  }
  uint32_t raw_type = 0;
  if (!cursor_.Read(&raw_type)) return Truncated(fmt::format("the type of tensor '{}'", info->name));
  StatusOr<GgmlType> type = GgmlTypeFromId(raw_type);
  if (!type.ok()) return Error(fmt::format("tensor '{}': {}", info->name, type.status().message()));
  info->type = *type;
  if (!cursor_.Read(&info->offset)) return Truncated(fmt::format("the offset of tensor '{}'", info->name));
  return OkStatus();
}

Status GgufParser::CheckDims(GgufTensorInfo* tensor, uint64_t* num_bytes) const {
  const GgufTensorInfo& info = *tensor;
  int64_t n = 1;
  for (int64_t d : info.ne) {
    if (__builtin_mul_overflow(n, d, &n)) {
      return Error(fmt::format("tensor '{}': element count overflows (dims {})", info.name,
                               fmt::join(info.ne, "x")));
    }
  }
  int64_t block = GgmlBlockSize(info.type);
  if (info.ne[0] % block != 0) {
    return Error(fmt::format("tensor '{}': ne[0]={} is not a multiple of the {} block size {}", info.name,
                             info.ne[0], GgmlTypeName(info.type), block));
  }
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(n / block), GgmlTypeSize(info.type), &bytes)) {
    return Error(fmt::format("tensor '{}': byte size overflows", info.name));
  }
  tensor->num_elements = n;
  *num_bytes = bytes;
  return OkStatus();
}

Status GgufParser::PlaceTensors() {
  uint64_t data_offset = AlignUp(cursor_.pos(), file_->alignment_);
  if (!file_->tensors_.empty() && data_offset > bytes_.size()) {
    return DataLossError(fmt::format("{}: file truncated: data section would start at byte {} of {}",
                                     file_->what_, data_offset, bytes_.size()));
  }
  file_->data_offset_ = data_offset;
  uint64_t data_size = bytes_.size() > data_offset ? bytes_.size() - data_offset : 0;
  std::vector<size_t> order(file_->tensors_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  for (size_t i : order) {
    GgufTensorInfo& info = file_->tensors_[i];
    uint64_t nbytes = tensor_num_bytes_[i];
    if (info.offset % file_->alignment_ != 0) {
      return Error(fmt::format("tensor '{}': offset {} is not a multiple of the alignment {}", info.name,
                               info.offset, file_->alignment_));
    }
    if (info.offset > data_size || nbytes > data_size - info.offset) {
      return DataLossError(fmt::format("{}: tensor '{}' ({} bytes at data offset {}) extends past the end "
                                       "of the file ({} data bytes)",
                                       file_->what_, info.name, nbytes, info.offset, data_size));
    }
    info.data = bytes_.subspan(static_cast<size_t>(data_offset + info.offset), static_cast<size_t>(nbytes));
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return file_->tensors_[a].offset < file_->tensors_[b].offset;
  });
  for (size_t k = 1; k < order.size(); ++k) {
    const GgufTensorInfo& prev = file_->tensors_[order[k - 1]];
    const GgufTensorInfo& cur = file_->tensors_[order[k]];
    if (cur.num_bytes() > 0 && prev.offset + prev.num_bytes() > cur.offset) {
      return Error(fmt::format("tensors '{}' and '{}' overlap", prev.name, cur.name));
    }
  }
  return OkStatus();
}

StatusOr<std::unique_ptr<GgufFile>> GgufFile::Parse(std::span<const std::byte> bytes, const std::string& what) {
  std::unique_ptr<GgufFile> file(new GgufFile());
  file->what_ = what;
  GgufParser parser(bytes, file.get());
  PAGELLM_RETURN_IF_ERROR(parser.Run());
  return file;
}

StatusOr<std::unique_ptr<GgufFile>> GgufFile::Open(const std::string& path) {
  PAGELLM_ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> mapped, MappedFile::Open(path));
  PAGELLM_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, Parse(mapped->bytes(), path));
  file->mapped_ = std::move(mapped);
  return file;
}

const GgufValue* GgufFile::Find(const std::string& key) const {
  auto it = metadata_index_.find(key);
  return it == metadata_index_.end() ? nullptr : &metadata_[it->second].second;
}

StatusOr<const GgufValue*> GgufFile::Require(const std::string& key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) return NotFoundError(fmt::format("{}: missing metadata key '{}'", what_, key));
  return v;
}

#define PAGELLM_GGUF_GETTER(Ret, Name, Method)                                  \
  StatusOr<Ret> GgufFile::Name(const std::string& key) const {                  \
    PAGELLM_ASSIGN_OR_RETURN(const GgufValue* v, Require(key));                 \
    StatusOr<Ret> r = v->Method();                                              \
    if (!r.ok()) return r.status().WithPrefix(fmt::format("{}: '{}'", what_, key)); \
    return r;                                                                   \
  }
PAGELLM_GGUF_GETTER(int64_t, GetInt, AsInt)
PAGELLM_GGUF_GETTER(double, GetDouble, AsDouble)
PAGELLM_GGUF_GETTER(bool, GetBool, AsBool)
PAGELLM_GGUF_GETTER(std::string, GetString, AsString)
PAGELLM_GGUF_GETTER(std::vector<std::string>, GetStringArray, AsStringArray)
PAGELLM_GGUF_GETTER(std::vector<int64_t>, GetIntArray, AsIntArray)
#undef PAGELLM_GGUF_GETTER

const GgufTensorInfo* GgufFile::FindTensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace pagellm
