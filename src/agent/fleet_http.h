// Blocking HTTP calls the agent makes to the router and the workers (a fresh io_context
// per call: the agent makes a few calls a second, simplicity wins over sharing).
//
//   FleetReply r = FleetCall("http://127.0.0.1:8001", "GET", "/metrics", "", 2.0);
//   if (r.ok()) Parse(r.body);
#pragma once

#include <string>

namespace pagellm::agent {

struct FleetReply {
  int status = 0;     // HTTP status; 0 when no answer came (refused, timed out)
  std::string body;   // the whole body (a 200's, or an error's)
  std::string error;  // empty for a complete 200
  bool ok() const { return status == 200 && error.empty(); }
};

// method "GET" or "POST" (body: JSON); waits at most timeout_s for silence on the socket.
FleetReply FleetCall(const std::string& base_url, const char* method, const std::string& path,
                     const std::string& body, double timeout_s);

}  // namespace pagellm::agent
