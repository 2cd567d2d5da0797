#include "net/http_server.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "net/http_test_socket.h"

namespace pagellm::net {
namespace {

int Connect(int port) {
  int fd = testing_http::Connect(port);
  EXPECT_GE(fd, 0);
  return fd;
}

void Send(int fd, const std::string& s) { ASSERT_TRUE(testing_http::SendAll(fd, s)); }

// Reads until `until` appears (or the peer closes / 5 s pass).
std::string ReadUntil(int fd, const std::string& until) {
  std::string out;
  char buf[4096];
  while (out.find(until) == std::string::npos) {
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

bool WaitFor(const std::atomic<bool>& flag) {
  for (int i = 0; i < 500 && !flag; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return flag;
}

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HttpServerOptions options;
    options.port = 0;
    options.max_body_bytes = 1024;
    options.max_backlog_bytes = 256 * 1024;
    server_ = std::make_unique<HttpServer>(options, [this](std::shared_ptr<HttpExchange> ex) { Handle(ex); });
    ASSERT_TRUE(server_->Start().ok());
  }
  void TearDown() override { server_->Stop(); }

  void Handle(const std::shared_ptr<HttpExchange>& ex) {
    std::string path = ex->request().path();
    if (path == "/hello") return ex->Respond(200, "text/plain", "hi " + ex->request().body);
    if (path == "/header") return ex->Respond(200, "text/plain", "[" + ex->request().header("x-session-id") + "]");
    if (path == "/stream") {
      ex->BeginStream("text/event-stream");
      ex->Write("a");
      ex->Write("bc");
      return ex->EndStream();
    }
    if (path == "/hang") {
      held_ = ex;  // never answered: only a disconnect ends it
      return ex->SetCancelHandler([this] { cancelled_ = true; });
    }
    if (path == "/flood") {
      ex->SetCancelHandler([this] { cancelled_ = true; });
      ex->BeginStream("text/plain");
      for (int i = 0; i < 2000; ++i) ex->Write(std::string(16 * 1024, 'x'));
      return;
    }
    ex->Respond(404, "text/plain", "no");
  }

  std::unique_ptr<HttpServer> server_;
  std::shared_ptr<HttpExchange> held_;
  std::atomic<bool> cancelled_{false};
};

TEST_F(HttpServerTest, RespondsAndKeepsTheConnectionAlive) {
  int fd = Connect(server_->port());
  Send(fd, "POST /hello HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc");
  std::string first = ReadUntil(fd, "hi abc");
  EXPECT_EQ(first.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << first;
  EXPECT_NE(first.find("Content-Length: 6\r\n"), std::string::npos);
  Send(fd, "GET /nope HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string second = ReadUntil(fd, "no");
  EXPECT_EQ(second.rfind("HTTP/1.1 404 Not Found\r\n", 0), 0u) << second;
  ::close(fd);
}

// Header names are matched case-insensitively (lower-cased on arrival).
TEST_F(HttpServerTest, ExposesHeadersByLowerCaseName) {
  int fd = Connect(server_->port());
  Send(fd, "GET /header HTTP/1.1\r\nHost: x\r\nX-Session-ID: chat-42\r\n\r\n");
  EXPECT_NE(ReadUntil(fd, "]").find("[chat-42]"), std::string::npos);
  Send(fd, "GET /header HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_NE(ReadUntil(fd, "]").find("[]"), std::string::npos);
  ::close(fd);
}

TEST_F(HttpServerTest, StreamsChunks) {
  int fd = Connect(server_->port());
  Send(fd, "GET /stream HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string got = ReadUntil(fd, "0\r\n\r\n");
  EXPECT_NE(got.find("Transfer-Encoding: chunked\r\n"), std::string::npos) << got;
  EXPECT_NE(got.find("\r\n\r\n1\r\na\r\n2\r\nbc\r\n0\r\n\r\n"), std::string::npos) << got;
  ::close(fd);
}

TEST_F(HttpServerTest, DisconnectWhileWaitingRunsTheCancelHandler) {
  int fd = Connect(server_->port());
  Send(fd, "GET /hang HTTP/1.1\r\nHost: x\r\n\r\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(cancelled_);
  ::close(fd);
  EXPECT_TRUE(WaitFor(cancelled_));
}

TEST_F(HttpServerTest, OversizedBodyGets413) {
  int fd = Connect(server_->port());
  Send(fd, "POST /hello HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n" + std::string(5000, 'x'));
  std::string got = ReadUntil(fd, "}}");
  EXPECT_EQ(got.rfind("HTTP/1.1 413 ", 0), 0u) << got;
  ::close(fd);
}

TEST_F(HttpServerTest, ClientThatStopsReadingIsCancelled) {
  int fd = Connect(server_->port());
  int small = 4096;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
  Send(fd, "GET /flood HTTP/1.1\r\nHost: x\r\n\r\n");  // and never read
  EXPECT_TRUE(WaitFor(cancelled_));
  ::close(fd);
}

}  // namespace
}  // namespace pagellm::net
