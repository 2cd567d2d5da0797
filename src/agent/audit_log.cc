#include "agent/audit_log.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>

#include <fmt/format.h>

namespace pagellm::agent {
namespace {

// RFC 3339 UTC with milliseconds.
std::string NowUtc() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:03d}Z", buf, ms);
}

}  // namespace

StatusOr<std::unique_ptr<AuditLog>> AuditLog::Open(const std::string& path) {
  if (path.empty() || path == "-") return std::unique_ptr<AuditLog>(new AuditLog(stdout, false));
  std::FILE* f = std::fopen(path.c_str(), "a");
  if (f == nullptr) return InvalidArgumentError(fmt::format("--audit-log {}: {}", path, std::strerror(errno)));
  return std::unique_ptr<AuditLog>(new AuditLog(f, true));
}

AuditLog::~AuditLog() {
  if (owned_) std::fclose(f_);
}

void AuditLog::Write(const AuditRecord& r) {
  OrderedJson line = {{"time", NowUtc()}, {"rule", r.rule}, {"worker", r.worker}, {"measurement", r.measurement},
                      {"action", r.action}, {"command", r.command}, {"result", r.result}};
  std::string text = line.dump(-1, ' ', false, OrderedJson::error_handler_t::replace) + "\n";
  std::lock_guard<std::mutex> lock(mu_);
  std::fwrite(text.data(), 1, text.size(), f_);
  std::fflush(f_);
}

}  // namespace pagellm::agent
