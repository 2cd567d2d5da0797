#include "router/prefix_index.h"

namespace pagellm::router {
namespace {

// FNV-1a over the previous hash and the block's bytes.
uint64_t ChainHash(uint64_t prev, std::string_view block) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (int i = 0; i < 8; ++i) {
    h ^= (prev >> (8 * i)) & 0xff;
    h *= 0x100000001b3ull;
  }
  for (unsigned char c : block) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace

std::vector<uint64_t> PrefixIndex::HashBlocks(std::string_view text) {
  std::vector<uint64_t> out;
  uint64_t prev = 0;
  for (size_t pos = 0; pos < text.size(); pos += kBlockChars) {
    prev = ChainHash(prev, text.substr(pos, kBlockChars));
    out.push_back(prev);
  }
  return out;
}

void PrefixIndex::Touch(WorkerBlocks& w, uint64_t hash) {
  auto it = w.where.find(hash);
  if (it != w.where.end()) {
    w.lru.splice(w.lru.begin(), w.lru, it->second);
    return;
  }
  w.lru.push_front(hash);
  w.where[hash] = w.lru.begin();
  if (w.lru.size() > max_blocks_) {
    w.where.erase(w.lru.back());
    w.lru.pop_back();
  }
}

size_t PrefixIndex::MatchBlocks(const std::string& worker, const std::vector<uint64_t>& blocks) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = workers_.find(worker);
  if (it == workers_.end()) return 0;
  size_t n = 0;
  while (n < blocks.size() && it->second.where.count(blocks[n]) > 0) ++n;
  return n;
}

void PrefixIndex::Insert(const std::string& worker, const std::vector<uint64_t>& blocks) {
  std::lock_guard<std::mutex> lock(mu_);
  WorkerBlocks& w = workers_[worker];
  // Last block first, so the prefix's first blocks end up most recent (evicted last),
  // as a cache that shares them between requests would keep them.
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) Touch(w, *it);
}

void PrefixIndex::RemoveWorker(const std::string& worker) {
  std::lock_guard<std::mutex> lock(mu_);
  workers_.erase(worker);
}

size_t PrefixIndex::NumBlocks(const std::string& worker) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = workers_.find(worker);
  return it == workers_.end() ? 0 : it->second.lru.size();
}

}  // namespace pagellm::router
