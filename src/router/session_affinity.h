// SessionAffinity: conversation affinity for the router. A request that names its
// session (the `x-session-id` header, as vLLM's production-stack router and Dynamo
// read one, or else OpenAI's `user` field) goes to the worker its session is bound to,
// so every turn finds the conversation's KV prefix where the previous turn left it.
//
//   SessionAffinity sessions(/*max_sessions=*/100000);
//   std::optional<std::string> w = sessions.Lookup("chat-42");   // bound worker, if any
//   ... route (to *w when it is ready, else by the policy) ...
//   bool moved = sessions.Bind("chat-42", chosen_url);           // true if it moved
//
// When the bound worker cannot take the request (drained, failed, removed, or the
// attempt failed), the policy picks another and the session is re-bound there, and it
// STAYS there, also after the old worker is readmitted. Why not return it: by then the
// conversation's history is computed and cached on the new worker, while the restarted
// one has an empty cache; moving back would pay a second full-history prefill and make
// a session's latency jump twice per restart. One move per restart, never a flap.
// Bounded: the least recently used session is forgotten beyond max_sessions (a
// forgotten session is simply routed afresh). Thread-safe.
#pragma once

#include <cstddef>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace pagellm::router {

class SessionAffinity {
 public:
  explicit SessionAffinity(size_t max_sessions = 100000) : max_sessions_(max_sessions) {}

  // The worker `session` is bound to (and marks it recently used).
  std::optional<std::string> Lookup(const std::string& session);
  // Binds `session` to `worker_url`; true if it was bound to another worker before.
  bool Bind(const std::string& session, const std::string& worker_url);
  size_t num_sessions() const;

 private:
  struct Entry {
    std::string worker_url;
    std::list<std::string>::iterator lru_it;
  };
  size_t max_sessions_;
  mutable std::mutex mu_;
  std::list<std::string> lru_;  // most recently used first
  std::unordered_map<std::string, Entry> sessions_;
};

}  // namespace pagellm::router
