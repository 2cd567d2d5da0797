// A debug heap for tests: replaces global operator new/delete so that every freed block
// is overwritten (0xA5) before it goes back to malloc. A use-after-free then reads
// garbage deterministically instead of only when another thread happens to reuse the
// block, which turns an intermittent lost response into a test that fails every time.
// Link it into a test binary only (it replaces the allocator for the whole program).
#include <malloc.h>

#include <cstdlib>
#include <cstring>
#include <new>

namespace {
void Scribble(void* p) noexcept {
  if (p == nullptr) return;
  std::memset(p, 0xA5, malloc_usable_size(p));
  // The compiler drops a store to memory that is about to be freed; this keeps it.
  asm volatile("" : : "r"(p) : "memory");
}
}  // namespace

void* operator new(std::size_t n) {
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* operator new[](std::size_t n) { return operator new(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return std::malloc(n == 0 ? 1 : n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return std::malloc(n == 0 ? 1 : n); }
void operator delete(void* p) noexcept {
  Scribble(p);
  std::free(p);
}
void operator delete[](void* p) noexcept { operator delete(p); }
void operator delete(void* p, std::size_t) noexcept { operator delete(p); }
void operator delete[](void* p, std::size_t) noexcept { operator delete(p); }
