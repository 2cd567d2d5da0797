#include "common/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>

namespace pagellm {

void SetLogLevel(const std::string& level) {
  // Logs go to stderr so stdout stays clean for generated text and JSON.
  static const bool initialized = [] {
    auto logger = spdlog::stderr_color_mt("pagellm");
    logger->set_pattern("%^%L%$ %m-%d %H:%M:%S.%e %v");
    spdlog::set_default_logger(logger);
    return true;
  }();
  (void)initialized;
  if (level == "warning") {
    spdlog::set_level(spdlog::level::warn);
  } else {
    spdlog::set_level(spdlog::level::from_str(level));
  }
}

}  // namespace pagellm
