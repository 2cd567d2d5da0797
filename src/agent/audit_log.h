// The agent's audit trail: one JSON line per action (time, rule, worker, measurement,
// action, command, result), appended and flushed at once so a crash loses nothing.
//
//   AuditLog audit("/var/log/pagellm-agent.jsonl");
//   audit.Write({.rule = "kv_pressure", .worker = url, .action = "drain_and_reclaim", ...});
#pragma once

#include <cstdio>
#include <mutex>
#include <string>

#include "common/json.h"
#include "common/status.h"

namespace pagellm::agent {

struct AuditRecord {
  std::string rule, worker, action, command;
  OrderedJson measurement = OrderedJson::object();
  OrderedJson result = OrderedJson::object();
};

class AuditLog {
 public:
  // "" or "-": standard output.
  static StatusOr<std::unique_ptr<AuditLog>> Open(const std::string& path);
  ~AuditLog();
  void Write(const AuditRecord& r);

 private:
  explicit AuditLog(std::FILE* f, bool owned) : f_(f), owned_(owned) {}
  std::mutex mu_;
  std::FILE* f_;
  bool owned_;
};

}  // namespace pagellm::agent
