// Incremental Server-Sent Events parser: bytes in (split anywhere, as TCP delivers them),
// one string per complete event's `data` out. Follows the WHATWG rules that matter for
// OpenAI streams: lines end in \n, \r\n or \r; a blank line ends an event; several
// `data:` lines join with \n; one space after the colon is dropped; `:` lines are
// comments (keep-alive pings) and are skipped; other fields (event:, id:) are ignored.
//
//   SseParser parser;
//   std::vector<std::string> events;
//   parser.Feed("data: {\"a\":1}\n\nda", &events);   // events = {"{\"a\":1}"}
//   parser.Feed("ta: [DONE]\n\n", &events);          // events += "[DONE]"
//   parser.Finish(&events);                          // at EOF: an unterminated event
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pagellm::net {

class SseParser {
 public:
  // Appends the data of every event completed by `bytes` to *events.
  void Feed(std::string_view bytes, std::vector<std::string>* events);
  // End of stream: dispatches an event whose closing blank line never came.
  void Finish(std::vector<std::string>* events);

 private:
  void ProcessLine(std::string_view line, std::vector<std::string>* events);

  std::string line_;        // bytes of the current, unterminated line
  std::string data_;        // data of the current event
  bool has_data_ = false;
  bool last_was_cr_ = false;  // a \n right after \r belongs to the same line end
};

}  // namespace pagellm::net
