// Steps the agent and the rollout both take on a fleet, over HTTP and the shell.
//
//   std::string cmd = ForWorker("systemctl restart pagellm@{port}", "http://10.0.0.2:8001");
//   int code = RunShellCommand(cmd, /*timeout_s=*/60);
//   bool alive = ProbeWorker("http://10.0.0.2:8001", 5.0);   // a real 1-token generation
//   OrderedJson r = RouterAdmin(router, "/admin/workers/drain", url, 5.0);
#pragma once

#include <string>

#include "common/json.h"

namespace pagellm::agent {

// `command` with {url}, {host} and {port} of the worker substituted.
std::string ForWorker(std::string command, const std::string& worker_url);

// Runs `command` with /bin/sh -c, waiting at most timeout_s: its exit code, -1 if it
// could not start, -2 if it is still running (it keeps running).
int RunShellCommand(const std::string& command, double timeout_s);

// A real 1-token generation with the worker's first model; a 429 (overloaded) counts
// as alive.
bool ProbeWorker(const std::string& url, double timeout_s);

// POST {"url": worker} to the router's admin API: {"status", "body"}.
OrderedJson RouterAdmin(const std::string& router_url, const std::string& path, const std::string& worker,
                        double timeout_s);

// A reply body as JSON when it parses, else as a string.
OrderedJson BodyJson(const std::string& body);

double SteadyNowS();

}  // namespace pagellm::agent
