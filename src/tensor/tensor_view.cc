#include "tensor/tensor_view.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace pagellm {

std::string ShapeToString(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

}  // namespace pagellm
