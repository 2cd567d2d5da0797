#include "common/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>

#include <fmt/format.h>

namespace pagellm {
namespace {

// Live mappings, begin -> end: views into weights do not know which file they came from,
// so ReleasePages looks the range up here.
struct Registry {
  std::mutex mu;
  std::map<uintptr_t, uintptr_t> ranges;
};

Registry& Mappings() {
  static Registry* registry = new Registry;  // never destroyed: mappings may outlive statics
  return *registry;
}

}  // namespace

StatusOr<std::unique_ptr<MappedFile>> MappedFile::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return NotFoundError(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return InternalError(fmt::format("cannot stat {}: {}", path, std::strerror(errno)));
  }
  size_t size = static_cast<size_t>(st.st_size);
  const std::byte* data = nullptr;
  if (size > 0) {
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      ::close(fd);
      return InternalError(fmt::format("cannot mmap {}: {}", path, std::strerror(errno)));
    }
    data = static_cast<const std::byte*>(p);
    std::lock_guard<std::mutex> lock(Mappings().mu);
    Mappings().ranges[reinterpret_cast<uintptr_t>(p)] = reinterpret_cast<uintptr_t>(p) + size;
  }
  ::close(fd);  // The mapping keeps the file alive.
  return std::unique_ptr<MappedFile>(new MappedFile(path, data, size));
}

MappedFile::~MappedFile() {
  if (data_ == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(Mappings().mu);
    Mappings().ranges.erase(reinterpret_cast<uintptr_t>(data_));
  }
  ::munmap(const_cast<std::byte*>(data_), size_);
}

size_t MappedFile::ReleasePages(const void* p, size_t n) {
  const auto begin = reinterpret_cast<uintptr_t>(p), end = begin + n;
  std::lock_guard<std::mutex> lock(Mappings().mu);
  auto it = Mappings().ranges.upper_bound(begin);
  if (n == 0 || it == Mappings().ranges.begin()) return 0;
  --it;  // the last mapping starting at or before p
  if (end > it->second) return 0;
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t first = (begin + page - 1) / page * page, last = end / page * page;
  if (first >= last) return 0;
  if (::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED) != 0) return 0;
  return last - first;
}

StatusOr<std::string> ReadFileToString(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError(fmt::format("cannot open {}", path));
  // Into a buffer reserved at the file's size: an ostringstream grew by doubling and str()
  // copied it once more, ~0.1 s of page faults and copies for an 11 MB tokenizer.json at
  // every process start. Reads to the end whatever the size says (a pipe has none).
  std::string out;
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(path, ec);
  if (!ec) out.reserve(size);
  char buf[1 << 16];
  while (in.read(buf, sizeof(buf)) || in.gcount() > 0) out.append(buf, static_cast<size_t>(in.gcount()));
  if (in.bad()) return DataLossError(fmt::format("cannot read {}", path));
  return out;
}

Status WriteStringToFile(const std::string& path, std::string_view contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return PermissionDeniedError(fmt::format("cannot create {}", path));
  out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  out.close();
  if (!out) return DataLossError(fmt::format("cannot write {}", path));
  return OkStatus();
}

}  // namespace pagellm
