// The load generator against a small in-process server that splits SSE events across
// HTTP chunks, answers 503, or cuts the stream.
#include "bench/load_generator.h"

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <gtest/gtest.h>

namespace pagellm::bench {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

void WriteChunk(tcp::socket& s, const std::string& data) {
  char size[32];
  std::snprintf(size, sizeof(size), "%zx\r\n", data.size());
  asio::write(s, asio::buffer(std::string(size) + data + "\r\n"));
}

std::string Event(const std::string& text) {
  return "data: {\"choices\":[{\"index\":0,\"text\":\"" + text + "\"}]}\n\n";
}

// Serves one connection according to the prompt it receives.
void Serve(tcp::socket socket) {
  boost::beast::flat_buffer buffer;
  http::request<http::string_body> req;
  boost::system::error_code ec;
  http::read(socket, buffer, req, ec);
  if (ec) return;
  const std::string& body = req.body();
  if (body.find("http503") != std::string::npos) {
    asio::write(socket, asio::buffer(std::string("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 11\r\n\r\noverloaded!")), ec);
    return;
  }
  asio::write(socket, asio::buffer(std::string(
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")));
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  if (body.find("cut") != std::string::npos) {
    WriteChunk(socket, Event("a"));
    socket.close();
    return;
  }
  for (const char* token : {"a", "b", "c"}) {
    const std::string event = Event(token);
    WriteChunk(socket, event.substr(0, 10));  // an SSE event split over two HTTP chunks
    WriteChunk(socket, event.substr(10));
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
  }
  WriteChunk(socket, "data: {\"choices\":[],\"usage\":{\"completion_tokens\":3}}\n\ndata: [DONE]\n\n");
  asio::write(socket, asio::buffer(std::string("0\r\n\r\n")));
}

TEST(LoadGeneratorTest, MeasuresStreamsAndCountsFailures) {
  asio::io_context server_io;
  tcp::acceptor acceptor(server_io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  const uint16_t port = acceptor.local_endpoint().port();
  std::thread server([&] {
    std::vector<std::thread> handlers;
    for (int i = 0; i < 4; ++i) handlers.emplace_back(Serve, acceptor.accept());
    for (std::thread& t : handlers) t.join();
  });

  LoadTarget target;
  target.http.host = "127.0.0.1";
  target.http.port = port;
  target.path = "/v1/completions";
  std::vector<RequestSpec> specs(4);
  const char* prompts[] = {"ok", "http503", "cut", "ok again"};
  for (size_t i = 0; i < specs.size(); ++i) specs[i] = {"m", prompts[i], 2, 3, false, Json::object()};
  const std::vector<double> at = {0.0, 0.0, 0.0, 0.0};
  auto result = RunLoad(target, specs, at, /*max_concurrency=*/0);
  server.join();
  ASSERT_TRUE(result.ok()) << result.status();

  for (size_t i : {size_t{0}, size_t{3}}) {
    const RequestOutput& ok = result->outputs[i];
    EXPECT_TRUE(ok.success) << ok.error;
    EXPECT_EQ(ok.generated_text, "abc");
    EXPECT_EQ(ok.output_tokens, 3);
    EXPECT_EQ(ok.prompt_len, 2);
    // A chunk cannot arrive before the server sends it: TTFT >= 60 ms and E2EL >= 60 + 2 * 40
    // ms. Single gaps have no such bound (a late read of one chunk shortens the next gap).
    EXPECT_GE(ok.ttft_s, 0.055);
    ASSERT_EQ(ok.itl_s.size(), 2u);
    for (double gap : ok.itl_s) EXPECT_GE(gap, 0.0);
    EXPECT_GE(ok.latency_s, 0.135);
  }
  EXPECT_FALSE(result->outputs[1].success);
  EXPECT_NE(result->outputs[1].error.find("503"), std::string::npos) << result->outputs[1].error;
  EXPECT_NE(result->outputs[1].error.find("overloaded!"), std::string::npos);
  EXPECT_FALSE(result->outputs[2].success);
  EXPECT_FALSE(result->outputs[2].error.empty());
  EXPECT_GE(result->duration_s, 0.18);
}

TEST(LoadGeneratorTest, ConnectionRefusedIsAFailedRequest) {
  asio::io_context io;
  tcp::acceptor probe(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  const uint16_t port = probe.local_endpoint().port();
  probe.close();  // nothing listens there now
  LoadTarget target;
  target.http.port = port;
  target.path = "/v1/completions";
  std::vector<RequestSpec> specs(2);
  const std::vector<double> at = {0.0, 0.01};
  auto result = RunLoad(target, specs, at, 1);
  ASSERT_TRUE(result.ok());
  for (const RequestOutput& out : result->outputs) {
    EXPECT_FALSE(out.success);
    EXPECT_NE(out.error.find("connect"), std::string::npos) << out.error;
  }
}

}  // namespace
}  // namespace pagellm::bench
