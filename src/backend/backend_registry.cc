#include "backend/backend_registry.h"

#include <map>
#include <mutex>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backend/cpu/cpu_backend.h"
#include "backend/reference/reference_backend.h"
#include "common/logging.h"

namespace pagellm {
namespace {

struct Entry {
  BackendRegistry::Factory factory;
  std::unique_ptr<Backend> instance;  // created on first Get
};

struct State {
  std::mutex mu;
  std::map<std::string, Entry, std::less<>> entries;  // guarded by mu
};

State& GetState() {
  static State* state = [] {
    auto* s = new State();  // never destroyed: backends may be used during exit
    s->entries["reference"].factory = [] { return StatusOr<std::unique_ptr<Backend>>(std::make_unique<ReferenceBackend>()); };
    s->entries["cpu"].factory = [] {
      auto cpu = std::make_unique<CpuBackend>();
      PLOG_INFO("cpu backend: float/bf16 kernels {}, int8 kernels {}{}", CpuIsaName(cpu->options().isa),
                cpu->options().int8_isa == CpuIsa::kAvx512 ? "avx512-vnni" : "avx2",
                cpu->options().amx_int8 ? " (k-quant batches on amx-int8)" : "");
      return StatusOr<std::unique_ptr<Backend>>(std::move(cpu));
    };
    return s;
  }();
  return *state;
}

}  // namespace

StatusOr<Backend*> BackendRegistry::Get(std::string_view name) {
  State& state = GetState();
  std::lock_guard<std::mutex> lock(state.mu);
  auto it = state.entries.find(name);
  if (it == state.entries.end()) {
    std::vector<std::string> names;
    for (const auto& [n, e] : state.entries) names.push_back(n);
    return NotFoundError(fmt::format("unknown backend '{}' (available: {})", name, fmt::join(names, ", ")));
  }
  if (it->second.instance == nullptr) {
    PAGELLM_ASSIGN_OR_RETURN(it->second.instance, it->second.factory());
  }
  return it->second.instance.get();
}

Status BackendRegistry::Register(std::string name, Factory factory) {
  State& state = GetState();
  std::lock_guard<std::mutex> lock(state.mu);
  if (state.entries.count(name) != 0) return Status(StatusCode::kAlreadyExists, fmt::format("backend '{}' already registered", name));
  state.entries[name].factory = std::move(factory);
  return OkStatus();
}

std::vector<std::string> BackendRegistry::Names() {
  State& state = GetState();
  std::lock_guard<std::mutex> lock(state.mu);
  std::vector<std::string> names;
  for (const auto& [n, e] : state.entries) names.push_back(n);
  return names;
}

}  // namespace pagellm
