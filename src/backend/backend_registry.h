// BackendRegistry: finds a Backend by name ("cpu", "reference", later "cuda", ...).
//
// Built-in backends are registered on first use, so linking pagellm::backend_registry
// is enough (no static initialisers that a static-library link could drop). Backends
// returned by Get live until process exit and are shared by all callers.
//
//   PAGELLM_ASSIGN_OR_RETURN(Backend* backend, BackendRegistry::Get("cpu"));
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backend/backend.h"

namespace pagellm {

class BackendRegistry {
 public:
  using Factory = std::function<StatusOr<std::unique_ptr<Backend>>()>;

  // NotFound (listing the known names) for an unknown backend.
  static StatusOr<Backend*> Get(std::string_view name);

  // Adds a backend; AlreadyExists if the name is taken.
  static Status Register(std::string name, Factory factory);

  static std::vector<std::string> Names();
};

}  // namespace pagellm
