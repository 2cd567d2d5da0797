#include "backend/backend.h"

#include <fmt/format.h>

namespace pagellm {

StatusOr<LinearQuantization> LinearQuantizationFromName(std::string_view name) {
  if (name.empty() || name == "none") return LinearQuantization::kNone;
  if (name == "int8") return LinearQuantization::kInt8;
  return InvalidArgumentError(fmt::format("unknown quantization '{}' (expected none or int8)", name));
}

}  // namespace pagellm
