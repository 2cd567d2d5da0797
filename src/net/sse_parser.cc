#include "net/sse_parser.h"

namespace pagellm::net {

void SseParser::Feed(std::string_view bytes, std::vector<std::string>* events) {
  for (char c : bytes) {
    if (c == '\n' && last_was_cr_) {
      last_was_cr_ = false;
      continue;
    }
    last_was_cr_ = (c == '\r');
    if (c == '\n' || c == '\r') {
      ProcessLine(line_, events);
      line_.clear();
    } else {
      line_.push_back(c);
    }
  }
}

void SseParser::Finish(std::vector<std::string>* events) {
  if (!line_.empty()) ProcessLine(line_, events);
  line_.clear();
  ProcessLine("", events);
}

void SseParser::ProcessLine(std::string_view line, std::vector<std::string>* events) {
  if (line.empty()) {
    if (has_data_) events->push_back(std::move(data_));
    data_.clear();
    has_data_ = false;
    return;
  }
  if (line.front() == ':') return;
  const size_t colon = line.find(':');
  const std::string_view field = line.substr(0, colon);
  if (field != "data") return;
  std::string_view value = colon == std::string_view::npos ? std::string_view() : line.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (has_data_) data_.push_back('\n');
  data_.append(value);
  has_data_ = true;
}

}  // namespace pagellm::net
