// MappedFile: a read-only memory map of a whole file (model weights, GGUF).
//
//   PAGELLM_ASSIGN_OR_RETURN(auto file, MappedFile::Open(path));
//   std::span<const std::byte> bytes = file->bytes();
//
// The mapping lives as long as the object; weights point straight into it.
//
// Once a backend has copied a weight into its own layout, the file's pages behind it
// are dead weight in RAM: MappedFile::ReleasePages(p, n) drops them (they are re-read
// from the file, or the page cache, should anything touch them again).
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>

#include "common/status.h"

namespace pagellm {

class MappedFile {
 public:
  static StatusOr<std::unique_ptr<MappedFile>> Open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return path_; }
  std::span<const std::byte> bytes() const { return {data_, size_}; }
  size_t size() const { return size_; }

  // Drops the whole pages of [p, p + n) from this process's memory when the range lies
  // inside a live MappedFile (madvise MADV_DONTNEED on a read-only private file mapping:
  // reading them again maps the file's bytes back, so nothing is lost). A range outside
  // every mapping (heap copies, converted tensors) is left alone. Returns the bytes
  // released.
  static size_t ReleasePages(const void* p, size_t n);

 private:
  MappedFile(std::string path, const std::byte* data, size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}
  std::string path_;
  const std::byte* data_;
  size_t size_;
};

// Reads a whole (small) file into a string: configs, tokenizer.json.
StatusOr<std::string> ReadFileToString(const std::string& path);

// Writes `contents` to `path`, replacing it.
Status WriteStringToFile(const std::string& path, std::string_view contents);

}  // namespace pagellm
