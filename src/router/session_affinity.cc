#include "router/session_affinity.h"

namespace pagellm::router {

std::optional<std::string> SessionAffinity::Lookup(const std::string& session) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(session);
  if (it == sessions_.end()) return std::nullopt;
  lru_.splice(lru_.begin(), lru_, it->second.lru_it);
  return it->second.worker_url;
}

bool SessionAffinity::Bind(const std::string& session, const std::string& worker_url) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(session);
  if (it != sessions_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second.lru_it);
    const bool moved = it->second.worker_url != worker_url;
    it->second.worker_url = worker_url;
    return moved;
  }
  if (max_sessions_ == 0) return false;
  if (sessions_.size() >= max_sessions_) {
    sessions_.erase(lru_.back());
    lru_.pop_back();
  }
  lru_.push_front(session);
  sessions_.emplace(session, Entry{worker_url, lru_.begin()});
  return false;
}

size_t SessionAffinity::num_sessions() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sessions_.size();
}

}  // namespace pagellm::router
