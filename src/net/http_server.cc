#include "net/http_server.h"

#include <sys/socket.h>

#include <cctype>
#include <cerrno>
#include <array>
#include <deque>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <fmt/format.h>

#include "common/logging.h"

namespace pagellm::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

const char* HttpReasonPhrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 413: return "Payload Too Large";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "Unknown";
  }
}

namespace {

// One TCP connection; all members are touched on the connection's strand only.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, const HttpServerOptions& options, const HttpHandler& handler,
          std::shared_ptr<std::atomic<int64_t>> num_connections, std::shared_ptr<std::atomic<int64_t>> num_active)
      : stream_(std::move(socket)), options_(options), handler_(handler), num_connections_(std::move(num_connections)),
        num_active_(std::move(num_active)) {
    ++*num_connections_;
  }
  ~Session() {
    SetActive(false);
    --*num_connections_;
  }

  void Run() { asio::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->DoRead(); }); }
  void Close();

  // Strand-only operations used by Exchange; `gen` guards against a finished exchange.
  void Respond(uint64_t gen, int status, const std::string& content_type, std::string body, const std::string& extra);
  void BeginStream(uint64_t gen, const std::string& content_type);
  void WriteChunk(uint64_t gen, std::string data);
  void EndStream(uint64_t gen);
  void SetCancel(uint64_t gen, std::function<void()> on_cancel);
  asio::any_io_executor executor() { return stream_.get_executor(); }

 private:
  void DoRead();
  void OnRead(beast::error_code ec);
  void WatchForDisconnect();
  void OnWatch(uint64_t gen, beast::error_code ec);
  void Cancel();
  void Enqueue(std::string data);
  void DoWrite();
  void FinishExchange();
  void RespondRaw(int status, const std::string& body, bool keep_alive);
  void Linger();

  bool linger_on_close_ = false;  // after 413: read and drop the rest of the upload
  std::array<char, 16384> scratch_;

  beast::tcp_stream stream_;
  const HttpServerOptions& options_;
  const HttpHandler& handler_;
  // Counts exchanges from request read to response written (drain waits for zero).
  void SetActive(bool active) {
    if (active != active_) *num_active_ += active ? 1 : -1;
    active_ = active;
  }

  std::shared_ptr<std::atomic<int64_t>> num_connections_;
  std::shared_ptr<std::atomic<int64_t>> num_active_;
  bool active_ = false;
  beast::flat_buffer buffer_;
  std::unique_ptr<http::request_parser<http::string_body>> parser_;
  uint64_t gen_ = 0;          // current exchange; 0 = none
  bool in_exchange_ = false;  // a request is being answered
  bool keep_alive_ = true;
  bool streaming_ = false;
  bool cancelled_ = false;
  bool closed_ = false;
  bool finish_after_write_ = false;
  std::function<void()> on_cancel_;
  std::deque<std::string> write_queue_;
  int64_t queued_bytes_ = 0;
  bool writing_ = false;
};

// NOTE: every call captures what it needs by value (gen_ included), never `this`: the
// handler usually drops its last reference to the exchange right after Respond() (or a
// job drops it right after EndStream()), so by the time the posted call runs on the
// strand the Exchange may be freed. Reading `this->gen_` then read freed memory; when
// another thread had reused that block, the generation no longer matched and the
// response was silently dropped: a GET /metrics left unanswered under load, a drain
// waiting for one unsent stream end.
class Exchange : public HttpExchange {
 public:
  Exchange(std::shared_ptr<Session> session, uint64_t gen, HttpRequest request)
      : session_(std::move(session)), gen_(gen), request_(std::move(request)) {}
  const HttpRequest& request() const override { return request_; }
  void Respond(int status, std::string content_type, std::string body, std::string extra) override {
    PostToSession([gen = gen_, status, type = std::move(content_type), body = std::move(body),
                   extra = std::move(extra)](Session& s) mutable { s.Respond(gen, status, type, std::move(body), extra); });
  }
  void BeginStream(std::string content_type) override {
    PostToSession([gen = gen_, type = std::move(content_type)](Session& s) { s.BeginStream(gen, type); });
  }
  void Write(std::string data) override {
    PostToSession([gen = gen_, data = std::move(data)](Session& s) mutable { s.WriteChunk(gen, std::move(data)); });
  }
  void EndStream() override {
    PostToSession([gen = gen_](Session& s) { s.EndStream(gen); });
  }
  void SetCancelHandler(std::function<void()> on_cancel) override {
    PostToSession([gen = gen_, f = std::move(on_cancel)](Session& s) mutable { s.SetCancel(gen, std::move(f)); });
  }
  void Post(std::function<void()> fn) override {
    asio::post(session_->executor(), std::move(fn));
  }

 private:
  template <typename F>
  void PostToSession(F&& f) {
    asio::post(session_->executor(), [s = session_, f = std::forward<F>(f)]() mutable { f(*s); });
  }
  std::shared_ptr<Session> session_;
  uint64_t gen_;
  HttpRequest request_;
};

void Session::DoRead() {
  if (closed_) return;
  parser_ = std::make_unique<http::request_parser<http::string_body>>();
  parser_->body_limit(static_cast<uint64_t>(options_.max_body_bytes));
  parser_->header_limit(64 * 1024);
  stream_.expires_after(std::chrono::seconds(options_.idle_timeout_s));
  http::async_read(stream_, buffer_, *parser_,
                   [self = shared_from_this()](beast::error_code ec, size_t) { self->OnRead(ec); });
}

void Session::OnRead(beast::error_code ec) {
  stream_.expires_never();
  if (ec == http::error::end_of_stream || ec == asio::error::operation_aborted || ec == beast::error::timeout) {
    return Close();
  }
  if (ec == http::error::body_limit) {
    linger_on_close_ = true;
    return RespondRaw(413, fmt::format("request body larger than {} bytes", options_.max_body_bytes), false);
  }
  if (ec == http::error::header_limit) return RespondRaw(431, "request headers too large", false);
  if (ec) {
    if (ec.category() == http::make_error_code(http::error::bad_method).category()) return RespondRaw(400, "malformed HTTP request", false);
    return Close();
  }
  http::request<http::string_body> req = parser_->release();
  HttpRequest r;
  r.method = std::string(req.method_string());
  r.target = std::string(req.target());
  r.authorization = std::string(req[http::field::authorization]);
  r.content_type = std::string(req[http::field::content_type]);
  for (const auto& field : req) {
    std::string name(field.name_string());
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    r.headers.emplace_back(std::move(name), std::string(field.value()));
  }
  r.body = std::move(req.body());
  keep_alive_ = req.keep_alive();
  ++gen_;
  in_exchange_ = true;
  SetActive(true);
  streaming_ = false;
  cancelled_ = false;
  on_cancel_ = nullptr;
  WatchForDisconnect();
  handler_(std::make_shared<Exchange>(shared_from_this(), gen_, std::move(r)));
}

void Session::WatchForDisconnect() {
  uint64_t gen = gen_;
  stream_.socket().async_wait(tcp::socket::wait_read,
                              [self = shared_from_this(), gen](beast::error_code ec) { self->OnWatch(gen, ec); });
}

void Session::OnWatch(uint64_t gen, beast::error_code ec) {
  if (gen != gen_ || !in_exchange_ || closed_ || ec == asio::error::operation_aborted) return;
  if (ec) return Cancel();
  char byte;
  ssize_t n = ::recv(stream_.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) return Cancel();
  if (n < 0) return WatchForDisconnect();
  // n > 0: the client sent more (a pipelined request); it is read after this response.
}

void Session::Cancel() {
  if (cancelled_ || !in_exchange_) return Close();
  cancelled_ = true;
  if (on_cancel_) {
    auto f = std::move(on_cancel_);
    on_cancel_ = nullptr;
    f();
  }
  Close();
}

void Session::Close() {
  if (closed_) return;
  closed_ = true;
  SetActive(false);
  // The buffer of an in-flight async_write must live until its handler runs.
  while (write_queue_.size() > (writing_ ? 1u : 0u)) write_queue_.pop_back();
  queued_bytes_ = 0;
  beast::error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
  stream_.socket().close(ec);
}

void Session::SetCancel(uint64_t gen, std::function<void()> on_cancel) {
  if (gen != gen_) return;
  if (cancelled_ || closed_) {
    if (in_exchange_ && on_cancel) on_cancel();
    return;
  }
  on_cancel_ = std::move(on_cancel);
}

void Session::Enqueue(std::string data) {
  if (closed_) return;
  queued_bytes_ += static_cast<int64_t>(data.size());
  write_queue_.push_back(std::move(data));
  if (streaming_ && queued_bytes_ > options_.max_backlog_bytes) {
    PLOG_WARN("client is not reading: {} bytes queued, cancelling its request", queued_bytes_);
    return Cancel();
  }
  if (!writing_) DoWrite();
}

void Session::DoWrite() {
  if (closed_ || write_queue_.empty()) {
    writing_ = false;
    if (!closed_ && finish_after_write_) FinishExchange();
    return;
  }
  writing_ = true;
  asio::async_write(stream_, asio::buffer(write_queue_.front()),
                    [self = shared_from_this()](beast::error_code ec, size_t n) {
                      if (ec || self->closed_) {
                        self->writing_ = false;
                        self->write_queue_.clear();
                        return ec ? self->Cancel() : void();
                      }
                      self->queued_bytes_ -= static_cast<int64_t>(self->write_queue_.front().size());
                      self->write_queue_.pop_front();
                      self->DoWrite();
                    });
}

void Session::FinishExchange() {
  finish_after_write_ = false;
  in_exchange_ = false;
  SetActive(false);
  on_cancel_ = nullptr;
  if (!keep_alive_) return linger_on_close_ ? Linger() : Close();
  beast::error_code ec;
  stream_.socket().cancel(ec);  // the disconnect watch; its handler sees a stale gen
  DoRead();
}

// A client still uploading an oversized body would see a reset instead of our 413 if
// we closed at once: stop sending, then read and drop its bytes (bounded by time).
void Session::Linger() {
  beast::error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
  stream_.expires_after(std::chrono::seconds(10));
  stream_.async_read_some(asio::buffer(scratch_), [self = shared_from_this()](beast::error_code ec, size_t) {
    if (ec) return self->Close();
    self->Linger();
  });
}

void Session::RespondRaw(int status, const std::string& body, bool keep_alive) {
  keep_alive_ = keep_alive;
  in_exchange_ = true;
  ++gen_;
  std::string json = fmt::format(R"({{"error":{{"message":"{}","type":"BadRequestError","param":null,"code":{}}}}})", body, status);
  Respond(gen_, status, "application/json", json, "");
}

void Session::Respond(uint64_t gen, int status, const std::string& content_type, std::string body,
                      const std::string& extra) {
  if (gen != gen_ || !in_exchange_ || streaming_ || closed_ || finish_after_write_) return;
  std::string head = fmt::format("HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n{}Connection: {}\r\n\r\n",
                                 status, HttpReasonPhrase(status), content_type, body.size(), extra,
                                 keep_alive_ ? "keep-alive" : "close");
  finish_after_write_ = true;
  Enqueue(head + body);
  if (!writing_ && !closed_) FinishExchange();
}

void Session::BeginStream(uint64_t gen, const std::string& content_type) {
  if (gen != gen_ || !in_exchange_ || streaming_ || closed_ || finish_after_write_) return;
  streaming_ = true;
  Enqueue(fmt::format("HTTP/1.1 200 OK\r\nContent-Type: {}\r\nCache-Control: no-cache\r\n"
                      "Transfer-Encoding: chunked\r\nConnection: {}\r\n\r\n",
                      content_type, keep_alive_ ? "keep-alive" : "close"));
}

void Session::WriteChunk(uint64_t gen, std::string data) {
  if (gen != gen_ || !streaming_ || closed_ || finish_after_write_ || data.empty()) return;
  Enqueue(fmt::format("{:x}\r\n", data.size()) + data + "\r\n");
}

void Session::EndStream(uint64_t gen) {
  if (gen != gen_ || !streaming_ || closed_ || finish_after_write_) return;
  finish_after_write_ = true;
  Enqueue("0\r\n\r\n");
  if (!writing_ && !closed_) FinishExchange();
}

}  // namespace

struct HttpServer::Impl {
  asio::io_context ioc;
  tcp::acceptor acceptor{ioc};
  bool accepting = false;
  std::shared_ptr<std::atomic<int64_t>> num_active = std::make_shared<std::atomic<int64_t>>(0);
  void DoAccept(const HttpServerOptions& options, const HttpHandler& handler,
                std::shared_ptr<std::atomic<int64_t>> counter) {
    acceptor.async_accept(asio::make_strand(ioc), [this, &options, &handler, counter](beast::error_code ec,
                                                                                      tcp::socket socket) {
      if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
      if (!ec) {
        socket.set_option(tcp::no_delay(true), ec);
        std::make_shared<Session>(std::move(socket), options, handler, counter, num_active)->Run();
      }
      DoAccept(options, handler, counter);
    });
  }
};

HttpServer::HttpServer(HttpServerOptions options, HttpHandler handler)
    : options_(std::move(options)), handler_(std::move(handler)), impl_(std::make_unique<Impl>()),
      num_connections_(std::make_shared<std::atomic<int64_t>>(0)) {}

HttpServer::~HttpServer() { Stop(); }

Status HttpServer::Start() {
  beast::error_code ec;
  auto address = asio::ip::make_address(options_.host == "localhost" ? "127.0.0.1" : options_.host, ec);
  if (ec) return InvalidArgumentError(fmt::format("--host: '{}' is not an IP address", options_.host));
  tcp::endpoint endpoint(address, static_cast<uint16_t>(options_.port));
  impl_->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl_->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) impl_->acceptor.bind(endpoint, ec);
  if (!ec) impl_->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return UnavailableError(fmt::format("cannot listen on {}:{}: {}", options_.host, options_.port, ec.message()));
  bound_port_ = impl_->acceptor.local_endpoint().port();
  impl_->accepting = true;
  impl_->DoAccept(options_, handler_, num_connections_);
  for (int i = 0; i < std::max(1, options_.num_threads); ++i) threads_.emplace_back([this] { impl_->ioc.run(); });
  return OkStatus();
}

void HttpServer::StopAccepting() {
  asio::post(impl_->ioc, [this] {
    beast::error_code ec;
    impl_->acceptor.close(ec);
  });
}

void HttpServer::Stop() {
  impl_->ioc.stop();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

}  // namespace pagellm::net

namespace pagellm::net {
int64_t HttpServer::num_active_exchanges() const { return impl_->num_active->load(); }
}  // namespace pagellm::net
