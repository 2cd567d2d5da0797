// Logging: one line per event that matters (startup summary, memory plan, errors).
//
// A thin layer over spdlog so call sites read `PLOG_INFO("loaded {} tensors", n)`
// and the sink (stderr, colour, level) is configured in one place.
#pragma once

#include <spdlog/spdlog.h>

namespace pagellm {

// Sets the process-wide level: "debug", "info", "warning", "error".
void SetLogLevel(const std::string& level);

}  // namespace pagellm

#define PLOG_DEBUG(...) ::spdlog::debug(__VA_ARGS__)
#define PLOG_INFO(...) ::spdlog::info(__VA_ARGS__)
#define PLOG_WARN(...) ::spdlog::warn(__VA_ARGS__)
#define PLOG_ERROR(...) ::spdlog::error(__VA_ARGS__)
