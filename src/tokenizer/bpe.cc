#include "tokenizer/bpe.h"

#include <functional>
#include <mutex>
#include <algorithm>

#include <fmt/format.h>

#include "tokenizer/byte_level.h"
#include "tokenizer/unicode.h"

namespace pagellm::tokenizer {

// Open-addressing map (left id, right id) -> (rank, merged id).
struct BpeModel::MergeTable {
  struct Slot {
    uint64_t key = kEmpty;
    int32_t rank = 0, new_id = 0;
  };
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  std::vector<Slot> slots;
  uint64_t mask = 0;

  explicit MergeTable(size_t n) {
    size_t cap = 16;
    while (cap < n * 2) cap *= 2;
    slots.resize(cap);
    mask = cap - 1;
  }
  static uint64_t Key(int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }
  size_t Home(uint64_t key) const { return (key * 0x9E3779B97F4A7C15ull) >> 20 & mask; }
  // Later duplicates overwrite earlier ones, as HF's HashMap collect does.
  void Insert(int32_t a, int32_t b, int32_t rank, int32_t new_id) {
    uint64_t key = Key(a, b);
    for (size_t i = Home(key);; i = (i + 1) & mask) {
      if (slots[i].key == kEmpty || slots[i].key == key) {
        slots[i] = {key, rank, new_id};
        return;
      }
    }
  }
  const Slot* Find(int32_t a, int32_t b) const {
    uint64_t key = Key(a, b);
    for (size_t i = Home(key);; i = (i + 1) & mask) {
      if (slots[i].key == key) return &slots[i];
      if (slots[i].key == kEmpty) return nullptr;
    }
  }
};

struct BpeModel::Cache {
  static constexpr size_t kNumShards = 64;
  static constexpr size_t kMaxEntriesPerShard = 4096;
  static constexpr size_t kMaxPieceBytes = 256;
  struct Shard {
    std::shared_mutex mu;
    std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> map;
  };
  Shard shards[kNumShards];
};

BpeModel::BpeModel(Config config)
    : id_to_token_(std::move(config.id_to_token)),
      byte_level_(config.byte_level),
      ignore_merges_(config.ignore_merges),
      byte_fallback_(config.byte_fallback),
      cache_(std::make_unique<Cache>()) {}

BpeModel::~BpeModel() = default;

StatusOr<std::unique_ptr<BpeModel>> BpeModel::Create(Config config) {
  auto merges = std::move(config.merges);
  std::optional<std::string> unk = config.unk_token;
  std::unique_ptr<BpeModel> m(new BpeModel(std::move(config)));
  // Sized once (no rehash while 151k tokens go in). Only bytes_to_id_ below depends on the
  // iteration order, and it cannot: ByteLevelDecode is injective, so no two tokens collide.
  m->token_to_id_.reserve(m->id_to_token_.size());
  for (int32_t id = 0; id < m->vocab_size(); ++id) {
    if (!m->id_to_token_[id].empty()) m->token_to_id_.emplace(m->id_to_token_[id], id);
  }
  for (int b = 0; b < 256; ++b) {
    std::string ch;
    AppendUtf8(ByteToChar(static_cast<uint8_t>(b)), &ch);
    m->byte_ids_[b] = m->TokenToId(ch).value_or(-1);
  }
  if (unk) m->unk_id_ = m->TokenToId(*unk).value_or(-1);
  if (m->ignore_merges_ && m->byte_level_) {
    for (const auto& [token, id] : m->token_to_id_)
      if (auto bytes = ByteLevelDecode(token)) m->bytes_to_id_.emplace(std::move(*bytes), id);
  }
  m->merges_ = std::make_unique<MergeTable>(merges.size());
  std::string joined;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [a, b] = merges[rank];
    joined.assign(a).append(b);
    auto ia = m->TokenToId(a), ib = m->TokenToId(b), inew = m->TokenToId(joined);
    if (!ia || !ib || !inew)
      return InvalidArgumentError(fmt::format("merge {} of \"{} {}\" uses a token missing from the vocab", rank, a, b));
    m->merges_->Insert(*ia, *ib, static_cast<int32_t>(rank), *inew);
  }
  return m;
}

std::optional<int32_t> BpeModel::TokenToId(std::string_view token) const {
  auto it = token_to_id_.find(token);
  if (it == token_to_id_.end()) return std::nullopt;
  return it->second;
}

const std::string& BpeModel::IdToToken(int32_t id) const {
  static const std::string kEmpty;
  return id >= 0 && id < vocab_size() ? id_to_token_[id] : kEmpty;
}

void BpeModel::InitialSymbols(std::string_view piece, std::vector<int32_t>* symbols) const {
  symbols->clear();
  if (byte_level_) {
    for (char c : piece) {
      int32_t id = byte_ids_[static_cast<uint8_t>(c)];
      if (id >= 0) symbols->push_back(id);
      else if (unk_id_ >= 0) symbols->push_back(unk_id_);
    }
    return;
  }
  for (size_t pos = 0; pos < piece.size();) {
    size_t start = pos;
    DecodeUtf8(piece, &pos);
    if (auto id = TokenToId(piece.substr(start, pos - start))) { symbols->push_back(*id); continue; }
    bool done = false;
    if (byte_fallback_) {
      std::vector<int32_t> bytes;
      for (size_t k = start; k < pos; ++k) {
        auto id = TokenToId(fmt::format("<0x{:02X}>", static_cast<uint8_t>(piece[k])));
        if (!id) break;
        bytes.push_back(*id);
      }
      if (bytes.size() == pos - start) { symbols->insert(symbols->end(), bytes.begin(), bytes.end()); done = true; }
    }
    if (!done && unk_id_ >= 0) symbols->push_back(unk_id_);
  }
}

// HF's Word::merge_all: a min-heap of (rank, position); an entry is stale when its left
// symbol is gone, has no right neighbour, or the current pair merges to another id.
void BpeModel::MergeAll(std::vector<int32_t>* ids) const {
  struct Symbol { int32_t id, prev, next; bool alive; };
  struct Entry {
    int32_t rank, pos, new_id;
    bool operator<(const Entry& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  const size_t n = ids->size();
  if (n < 2) return;
  thread_local std::vector<Symbol> sym;
  thread_local std::vector<Entry> heap;  // std::push_heap/pop_heap: max-heap of operator<
  sym.resize(n);
  for (size_t i = 0; i < n; ++i) sym[i] = {(*ids)[i], int32_t(i) - 1, i + 1 < n ? int32_t(i + 1) : -1, true};
  heap.clear();
  auto push = [](Entry e) { heap.push_back(e); std::push_heap(heap.begin(), heap.end()); };
  for (size_t i = 0; i + 1 < n; ++i)
    if (auto* m = merges_->Find(sym[i].id, sym[i + 1].id)) push({m->rank, int32_t(i), m->new_id});
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end());
    Entry top = heap.back();
    heap.pop_back();
    Symbol& cur = sym[top.pos];
    if (!cur.alive || cur.next < 0) continue;
    Symbol& right = sym[cur.next];
    const auto* m = merges_->Find(cur.id, right.id);
    if (m == nullptr || m->new_id != top.new_id) continue;
    cur.id = top.new_id;
    right.alive = false;
    cur.next = right.next;
    if (right.next >= 0) sym[right.next].prev = top.pos;
    if (cur.prev >= 0)
      if (auto* pm = merges_->Find(sym[cur.prev].id, cur.id)) push({pm->rank, cur.prev, pm->new_id});
    if (cur.next >= 0)
      if (auto* nm = merges_->Find(cur.id, sym[cur.next].id)) push({nm->rank, top.pos, nm->new_id});
  }
  ids->clear();
  for (size_t i = 0; i < n; ++i)
    if (sym[i].alive) ids->push_back(sym[i].id);
}

void BpeModel::EncodeUncached(std::string_view piece, std::vector<int32_t>* ids) const {
  if (ignore_merges_) {
    if (byte_level_) {
      auto it = bytes_to_id_.find(piece);
      if (it != bytes_to_id_.end()) { ids->push_back(it->second); return; }
    } else if (auto id = TokenToId(piece)) {
      ids->push_back(*id);
      return;
    }
  }
  thread_local std::vector<int32_t> symbols;
  InitialSymbols(piece, &symbols);
  MergeAll(&symbols);
  ids->insert(ids->end(), symbols.begin(), symbols.end());
}

void BpeModel::Encode(std::string_view piece, std::vector<int32_t>* ids) const {
  if (piece.size() > Cache::kMaxPieceBytes) return EncodeUncached(piece, ids);
  size_t hash = StringHash()(piece);
  Cache::Shard& shard = cache_->shards[hash % Cache::kNumShards];
  {
    std::shared_lock lock(shard.mu);
    auto it = shard.map.find(piece);
    if (it != shard.map.end()) {
      ids->insert(ids->end(), it->second.begin(), it->second.end());
      return;
    }
  }
  size_t first = ids->size();
  EncodeUncached(piece, ids);
  std::unique_lock lock(shard.mu);
  if (shard.map.size() < Cache::kMaxEntriesPerShard)
    shard.map.emplace(std::string(piece), std::vector<int32_t>(ids->begin() + first, ids->end()));
}

}  // namespace pagellm::tokenizer
