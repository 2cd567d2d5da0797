// ParseBaseUrl, and StreamingPost against net::HttpServer on loopback: GET, a streamed
// body, an error body, and a request its caller cancels mid-stream.
#include "net/http_client.h"

#include <atomic>
#include <string>
#include <thread>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <gtest/gtest.h>

#include "net/http_server.h"

namespace pagellm::net {
namespace {

TEST(HttpClientTest, ParseBaseUrl) {
  auto a = ParseBaseUrl("http://127.0.0.1:8000");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 8000);
  EXPECT_EQ(a->path_prefix, "");
  auto b = ParseBaseUrl("http://localhost/api/");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->port, 80);
  EXPECT_EQ(b->path_prefix, "/api");
  EXPECT_EQ(b->HostHeader(), "localhost:80");
  auto c = ParseBaseUrl("http://[::1]:9000/v");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->host, "::1");
  EXPECT_EQ(c->HostHeader(), "[::1]:9000");
  for (const char* bad : {"https://x:1", "ftp://x", "127.0.0.1:8000", "http://:80", "http://x:0", "http://x:99999",
                          "http://x:8a"})
    EXPECT_FALSE(ParseBaseUrl(bad).ok()) << bad;
}

HttpPostResult Fetch(const HttpServer& server, HttpPost post, std::string* body) {
  boost::asio::io_context io;
  HttpTarget target;
  target.port = static_cast<uint16_t>(server.port());
  auto endpoints = ResolveTarget(target);
  EXPECT_TRUE(endpoints.ok());
  post.host_header = target.HostHeader();
  auto fut = boost::asio::co_spawn(io, StreamingPost(*endpoints, post, [&](std::string_view b) { body->append(b); }),
                                   boost::asio::use_future);
  io.run();
  return fut.get();
}

TEST(HttpClientTest, GetStreamErrorAndCancel) {
  std::atomic<bool> cancel{false};
  HttpServer server({.port = 0, .num_threads = 1}, [&](std::shared_ptr<HttpExchange> ex) {
    const std::string path = ex->request().path();
    if (path == "/get") return ex->Respond(200, "text/plain", ex->request().method + " ok");
    if (path == "/bad") return ex->Respond(429, "application/json", R"({"error":"busy"})");
    ex->BeginStream("text/event-stream");
    ex->Write("data: 1\n\n");
    if (path == "/cut") return;  // never ends: only the client's cancel stops it
    ex->Write("data: 2\n\n");
    ex->EndStream();
  });
  ASSERT_TRUE(server.Start().ok());
  std::string body;
  HttpPost get;
  get.method = "GET";
  get.path = "/get";
  HttpPostResult r = Fetch(server, get, &body);
  EXPECT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(body, "GET ok");
  body.clear();
  bool sent = false;
  HttpPost stream;
  stream.path = "/stream";
  stream.body = "{}";
  stream.on_sent = [&] { sent = true; };
  r = Fetch(server, stream, &body);
  EXPECT_TRUE(r.error.empty()) << r.error;
  EXPECT_TRUE(sent);
  EXPECT_EQ(body, "data: 1\n\ndata: 2\n\n");
  body.clear();
  HttpPost bad;
  bad.path = "/bad";
  r = Fetch(server, bad, &body);
  EXPECT_EQ(r.status, 429);
  EXPECT_EQ(r.error_body, R"({"error":"busy"})");
  EXPECT_TRUE(body.empty());
  cancel = true;  // already set: the first read (head or first chunk) ends the request
  HttpPost cut;
  cut.path = "/cut";
  cut.cancelled = &cancel;
  r = Fetch(server, cut, &body);
  EXPECT_TRUE(r.cancelled);  // and did not wait for a stream that never ends
  EXPECT_TRUE(body.empty() || body == "data: 1\n\n") << body;
  server.Stop();
}

}  // namespace
}  // namespace pagellm::net
