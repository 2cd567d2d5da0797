// PrefixIndex: the router's approximate view of what each worker holds in its prefix
// cache, built only from the requests the router sent it (SGLang's cache-aware router
// keeps a radix tree per worker for the same purpose).
//
//   std::vector<uint64_t> blocks = PrefixIndex::HashBlocks(prompt_text);
//   size_t matched = index.MatchBlocks("http://10.0.0.2:8000", blocks);
//   index.Insert("http://10.0.0.2:8000", blocks);   // after routing the request there
//
// The prompt text is cut into blocks of kBlockChars bytes, each named by a hash chained
// on the previous block's, so one hash names the whole prefix up to its block end: a
// radix tree whose edges are fixed-size blocks, stored as a hash set. Matching walks the
// chain until the first hash the worker does not hold. Each worker keeps at most
// `max_blocks_per_worker` hashes, evicting the least recently used (a worker's real
// cache evicts too, so old routing history stops attracting requests).
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace pagellm::router {

class PrefixIndex {
 public:
  static constexpr size_t kBlockChars = 64;  // ~16 tokens of English text

  explicit PrefixIndex(size_t max_blocks_per_worker = 1 << 16) : max_blocks_(max_blocks_per_worker) {}

  // Chained hashes of the prompt's full blocks plus the final partial block.
  static std::vector<uint64_t> HashBlocks(std::string_view text);

  // Leading blocks of `blocks` that `worker` holds.
  size_t MatchBlocks(const std::string& worker, const std::vector<uint64_t>& blocks);
  void Insert(const std::string& worker, const std::vector<uint64_t>& blocks);
  void RemoveWorker(const std::string& worker);
  size_t NumBlocks(const std::string& worker) const;

 private:
  struct WorkerBlocks {
    std::list<uint64_t> lru;  // front = most recent
    std::unordered_map<uint64_t, std::list<uint64_t>::iterator> where;
  };
  void Touch(WorkerBlocks& w, uint64_t hash);

  size_t max_blocks_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, WorkerBlocks> workers_;
};

}  // namespace pagellm::router
