// HttpServer: an asynchronous HTTP/1.1 server on Boost.Beast/Asio, built for many
// long-lived streaming (SSE) responses on a few threads.
//
//   HttpServer server({.host = "127.0.0.1", .port = 8000, .num_threads = 2},
//                     [](std::shared_ptr<HttpExchange> ex) {
//                       ex->Respond(200, "application/json", R"({"ok":true})");
//                     });
//   PAGELLM_RETURN_IF_ERROR(server.Start());   // binds, spawns the I/O threads
//   ...
//   server.StopAccepting();                   // drain: close the listener
//   server.Stop();                            // stop the I/O threads, close everything
//
// Design (measured in docs/dependencies.md, Part 2):
// - Each connection runs on its own strand; the handler is called on that strand and
//   must return quickly (it may keep the exchange and answer later from any thread:
//   every HttpExchange method posts to the connection's strand).
// - While a request is in flight the socket has an outstanding async_wait(wait_read):
//   a client that closes its connection is noticed at once (recv(MSG_PEEK) == 0), even
//   while nothing is being written (during prefill), and the exchange's cancel handler
//   runs so the caller can abort the engine request.
// - Writes are queued per connection, one async_write at a time. BACKLOG POLICY: if the
//   bytes queued but not yet accepted by the socket exceed `max_backlog_bytes` (the
//   client stopped reading), the exchange is cancelled and the connection closed, so a
//   slow client costs bounded memory and never blocks the engine.
// - Request bodies above `max_body_bytes` (default 32 MiB) get 413; headers above 64 KiB
//   get 431; an unparsable request line gets 400. Idle keep-alive connections close
//   after `idle_timeout_s`.
// - Responses are written as HTTP/1.1 with Content-Length, streams with chunked
//   transfer encoding; keep-alive follows the request.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "common/status.h"

namespace pagellm::net {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string target;  // path and query, e.g. "/v1/models"
  std::string body;
  std::string authorization;  // the Authorization header ("" when absent)
  std::string content_type;
  // Every header as (lower-case name, value), in arrival order.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string path() const { return target.substr(0, target.find('?')); }
  // The first value of header `lower_name` ("" when absent).
  std::string header(std::string_view lower_name) const {
    for (const auto& [name, value] : headers) {
      if (name == lower_name) return value;
    }
    return "";
  }
};

// One request and its response. Thread-safe: every call is posted to the connection's
// strand. After the connection is gone the calls do nothing.
class HttpExchange {
 public:
  virtual ~HttpExchange() = default;
  virtual const HttpRequest& request() const = 0;
  // A complete response (Content-Length). `extra_headers`: "Name: value\r\n" lines.
  virtual void Respond(int status, std::string content_type, std::string body, std::string extra_headers = "") = 0;
  // Starts a 200 chunked response; then Write() chunks and EndStream().
  virtual void BeginStream(std::string content_type) = 0;
  virtual void Write(std::string data) = 0;
  virtual void EndStream() = 0;
  // `on_cancel` runs once on the strand if the client disconnects (or overflows the
  // backlog) before the response is complete. Runs at once if that already happened.
  virtual void SetCancelHandler(std::function<void()> on_cancel) = 0;
  // Runs `fn` on the connection's strand (also after the connection closed, so owners
  // can finish their bookkeeping). The way to hand work over from other threads.
  virtual void Post(std::function<void()> fn) = 0;
};

using HttpHandler = std::function<void(std::shared_ptr<HttpExchange>)>;

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;  // 0 = any free port (see HttpServer::port())
  int num_threads = 2;
  int64_t max_body_bytes = 32ll << 20;
  int64_t max_backlog_bytes = 8ll << 20;
  int idle_timeout_s = 300;
};

class HttpServer {
 public:
  HttpServer(HttpServerOptions options, HttpHandler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  Status Start();
  int port() const { return bound_port_; }
  // Closes the listening socket; open connections keep working.
  void StopAccepting();
  // Stops the I/O threads and closes every connection. Idempotent.
  void Stop();
  int64_t num_open_connections() const { return num_connections_->load(); }
  // Requests read whose response is not completely written yet.
  int64_t num_active_exchanges() const;

  struct Impl;

 private:
  HttpServerOptions options_;
  HttpHandler handler_;
  std::unique_ptr<Impl> impl_;
  std::vector<std::thread> threads_;
  int bound_port_ = 0;
  std::shared_ptr<std::atomic<int64_t>> num_connections_;
};

// "HTTP/1.1 404 Not Found" reason phrases for the codes the server uses.
const char* HttpReasonPhrase(int status);

}  // namespace pagellm::net
