#include "agent/fleet_ops.h"

#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <thread>

#include "agent/fleet_http.h"
#include "net/http_client.h"

extern char** environ;

namespace pagellm::agent {
namespace {

void Substitute(std::string* s, const std::string& key, const std::string& value) {
  for (size_t at; (at = s->find(key)) != std::string::npos;) s->replace(at, key.size(), value);
}

}  // namespace

double SteadyNowS() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string ForWorker(std::string command, const std::string& worker_url) {
  StatusOr<net::HttpTarget> t = net::ParseBaseUrl(worker_url);
  Substitute(&command, "{url}", worker_url);
  Substitute(&command, "{host}", t.ok() ? t->host : "");
  Substitute(&command, "{port}", t.ok() ? std::to_string(t->port) : "");
  return command;
}

int RunShellCommand(const std::string& command, double timeout_s) {
  pid_t pid = 0;
  const char* argv[] = {"/bin/sh", "-c", command.c_str(), nullptr};
  if (posix_spawn(&pid, "/bin/sh", nullptr, nullptr, const_cast<char**>(argv), environ) != 0) return -1;
  const double deadline = SteadyNowS() + timeout_s;
  for (;;) {
    int status = 0;
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (r < 0 || SteadyNowS() > deadline) return -2;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

bool ProbeWorker(const std::string& url, double timeout_s) {
  FleetReply models = FleetCall(url, "GET", "/v1/models", "", timeout_s);
  if (!models.ok()) return false;
  OrderedJson list = OrderedJson::parse(models.body, nullptr, false);
  if (!list.is_object() || !list.contains("data") || !list["data"].is_array() || list["data"].empty()) return false;
  OrderedJson req = {{"model", list["data"][0].value("id", "")}, {"prompt", "ping"}, {"max_tokens", 1}, {"temperature", 0}};
  FleetReply r = FleetCall(url, "POST", "/v1/completions", req.dump(), timeout_s);
  return (r.ok() && r.body.find("\"choices\"") != std::string::npos) || r.status == 429;
}

OrderedJson BodyJson(const std::string& body) {
  OrderedJson j = OrderedJson::parse(body, nullptr, false);
  return j.is_discarded() ? OrderedJson(body) : j;
}

OrderedJson RouterAdmin(const std::string& router_url, const std::string& path, const std::string& worker,
                        double timeout_s) {
  FleetReply r = FleetCall(router_url, "POST", path, OrderedJson({{"url", worker}}).dump(), timeout_s);
  return {{"status", r.status}, {"body", BodyJson(r.body)}};
}

}  // namespace pagellm::agent
