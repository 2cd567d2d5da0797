#include "gguf/gguf_writer.h"

#include <cstdio>
#include <cstring>
#include <memory>

#include <fmt/format.h>

namespace pagellm {
namespace {

template <typename T>
void AppendRaw(T v, std::string* out) {
  char buf[sizeof(T)];
  std::memcpy(buf, &v, sizeof(T));
  out->append(buf, sizeof(T));
}

void AppendString(const std::string& s, std::string* out) {
  AppendRaw<uint64_t>(s.size(), out);
  out->append(s);
}

uint64_t AlignUp(uint64_t x, uint64_t alignment) { return (x + alignment - 1) / alignment * alignment; }

}  // namespace

void AppendGgufValue(const GgufValue& value, std::string* out) {
  std::visit(
      [out](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>) {
          AppendString(v, out);
        } else if constexpr (std::is_same_v<T, GgufArray>) {
          AppendRaw<uint32_t>(static_cast<uint32_t>(v.elem_type), out);
          AppendRaw<uint64_t>(v.items.size(), out);
          for (const GgufValue& item : v.items) AppendGgufValue(item, out);
        } else if constexpr (std::is_same_v<T, bool>) {
          AppendRaw<uint8_t>(v ? 1 : 0, out);
        } else {
          AppendRaw<T>(v, out);
        }
      },
      value.storage());
}

void GgufWriter::AddMetadata(std::string key, GgufValue value) {
  for (const auto& kv : metadata_) PAGELLM_CHECK(kv.first != key);
  metadata_.emplace_back(std::move(key), std::move(value));
}

Status GgufWriter::AddPending(PendingTensor tensor) {
  if (tensor.name.empty()) return InvalidArgumentError("tensor name is empty");
  for (const PendingTensor& t : tensors_) {
    if (t.name == tensor.name) return InvalidArgumentError(fmt::format("duplicate tensor '{}'", tensor.name));
  }
  if (tensor.ne.empty() || tensor.ne.size() > static_cast<size_t>(kGgmlMaxDims)) {
    return InvalidArgumentError(fmt::format("tensor '{}' has {} dims", tensor.name, tensor.ne.size()));
  }
  int64_t n = 1;
  for (int64_t d : tensor.ne) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) {
      return InvalidArgumentError(fmt::format("tensor '{}' has bad dims", tensor.name));
    }
  }
  if (tensor.ne[0] % GgmlBlockSize(tensor.type) != 0) {
    return InvalidArgumentError(fmt::format("tensor '{}': ne[0]={} is not a multiple of the {} block size",
                                            tensor.name, tensor.ne[0], GgmlTypeName(tensor.type)));
  }
  tensor.num_bytes = GgmlRowBytes(tensor.type, n);
  if (!tensor.producer && tensor.bytes.size() != tensor.num_bytes) {
    return InvalidArgumentError(fmt::format("tensor '{}' needs {} bytes, got {}", tensor.name,
                                            tensor.num_bytes, tensor.bytes.size()));
  }
  tensors_.push_back(std::move(tensor));
  return OkStatus();
}

Status GgufWriter::AddTensor(std::string name, GgmlType type, std::vector<int64_t> ne,
                             std::vector<std::byte> bytes) {
  return AddPending({std::move(name), type, std::move(ne), 0, std::move(bytes), nullptr});
}

Status GgufWriter::AddTensor(std::string name, GgmlType type, std::vector<int64_t> ne,
                             TensorProducer producer) {
  PAGELLM_CHECK(producer != nullptr);
  return AddPending({std::move(name), type, std::move(ne), 0, {}, std::move(producer)});
}

uint32_t GgufWriter::alignment() const {
  for (const auto& [key, value] : metadata_) {
    if (key != "general.alignment") continue;
    const uint32_t* a = std::get_if<uint32_t>(&value.storage());
    PAGELLM_CHECK(a != nullptr && *a != 0 && (*a & (*a - 1)) == 0);
    return *a;
  }
  return kGgufDefaultAlignment;
}

std::string GgufWriter::SerializeHeader() const {
  std::string out;
  AppendRaw<uint32_t>(kGgufMagic, &out);
  AppendRaw<uint32_t>(3, &out);
  AppendRaw<uint64_t>(tensors_.size(), &out);
  AppendRaw<uint64_t>(metadata_.size(), &out);
  for (const auto& [key, value] : metadata_) {
    AppendString(key, &out);
    AppendRaw<uint32_t>(static_cast<uint32_t>(value.type()), &out);
    AppendGgufValue(value, &out);
  }
  const uint64_t align = alignment();
  uint64_t offset = 0;
  for (const PendingTensor& t : tensors_) {
    AppendString(t.name, &out);
    AppendRaw<uint32_t>(static_cast<uint32_t>(t.ne.size()), &out);
    for (int64_t d : t.ne) AppendRaw<uint64_t>(static_cast<uint64_t>(d), &out);
    AppendRaw<uint32_t>(static_cast<uint32_t>(t.type), &out);
    AppendRaw<uint64_t>(offset, &out);
    offset += AlignUp(t.num_bytes, align);
  }
  out.resize(AlignUp(out.size(), align), '\0');
  return out;
}

Status GgufWriter::Emit(const std::function<Status(std::string_view)>& sink) const {
  PAGELLM_RETURN_IF_ERROR(sink(SerializeHeader()));
  const uint64_t align = alignment();
  std::vector<std::byte> buffer;
  const std::string zeros(align, '\0');
  for (const PendingTensor& t : tensors_) {
    std::span<const std::byte> data = t.bytes;
    if (t.producer) {
      buffer.assign(t.num_bytes, std::byte{0});
      Status s = t.producer(buffer);
      if (!s.ok()) return s.WithPrefix(fmt::format("tensor '{}'", t.name));
      data = buffer;
    }
    PAGELLM_RETURN_IF_ERROR(sink({reinterpret_cast<const char*>(data.data()), data.size()}));
    PAGELLM_RETURN_IF_ERROR(sink(std::string_view(zeros).substr(0, AlignUp(t.num_bytes, align) - t.num_bytes)));
  }
  return OkStatus();
}

Status GgufWriter::WriteFile(const std::string& path) const {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (f == nullptr) return PermissionDeniedError(fmt::format("cannot create {}", path));
  PAGELLM_RETURN_IF_ERROR(Emit([&](std::string_view piece) -> Status {
    if (!piece.empty() && std::fwrite(piece.data(), 1, piece.size(), f.get()) != piece.size()) {
      return DataLossError(fmt::format("cannot write {}", path));
    }
    return OkStatus();
  }));
  if (std::fclose(f.release()) != 0) return DataLossError(fmt::format("cannot write {}", path));
  return OkStatus();
}

StatusOr<std::string> GgufWriter::WriteToString() const {
  std::string out;
  PAGELLM_RETURN_IF_ERROR(Emit([&](std::string_view piece) -> Status {
    out.append(piece);
    return OkStatus();
  }));
  return out;
}

}  // namespace pagellm
