#include "bench/load_generator.h"

#include <sys/resource.h>

#include <deque>
#include <exception>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fmt/format.h>

#include "net/sse_parser.h"

namespace pagellm::bench {
namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

double SecondsBetween(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// Each in-flight request holds a socket; let the process open as many as the hard limit
// allows so a few hundred concurrent streams do not hit the usual soft limit of 1024.
void RaiseOpenFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

class LoadRun {
 public:
  LoadRun(const LoadTarget& target, asio::ip::tcp::resolver::results_type endpoints,
          std::span<const RequestSpec> specs, std::span<const double> offsets, int64_t max_concurrency)
      : target_(target), endpoints_(std::move(endpoints)), specs_(specs), offsets_(offsets),
        max_concurrency_(max_concurrency), outputs_(specs.size()) {}

  LoadResult Run() {
    start_ = Clock::now();
    asio::co_spawn(io_, Dispatch(), asio::detached);
    io_.run();
    return LoadResult{std::move(outputs_), SecondsBetween(start_, Clock::now())};
  }

 private:
  asio::awaitable<void> Dispatch() {
    asio::steady_timer timer(io_);
    for (size_t i = 0; i < specs_.size(); ++i) {
      const auto at = start_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(offsets_[i]));
      if (at > Clock::now()) {
        timer.expires_at(at);
        boost::system::error_code ec;
        co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      }
      if (max_concurrency_ <= 0 || in_flight_ < max_concurrency_) {
        Start(i);
      } else {
        pending_.push_back(i);
      }
    }
  }

  void Start(size_t i) {
    ++in_flight_;
    asio::co_spawn(io_, SendOne(i), [this, i](std::exception_ptr failure) {
      if (failure) {
        outputs_[i].success = false;
        try {
          std::rethrow_exception(failure);
        } catch (const std::exception& e) {
          outputs_[i].error = fmt::format("client error: {}", e.what());
        } catch (...) {
          outputs_[i].error = "client error";
        }
      }
      --in_flight_;
      if (!pending_.empty()) {
        const size_t next = pending_.front();
        pending_.pop_front();
        Start(next);
      }
    });
  }

  asio::awaitable<void> SendOne(size_t i) {
    outputs_[i].prompt_len = specs_[i].prompt_len;
    co_await StreamOneRequest(target_, endpoints_, BuildRequestBody(target_.kind, specs_[i]), start_, &outputs_[i]);
  }

  const LoadTarget& target_;
  asio::ip::tcp::resolver::results_type endpoints_;
  std::span<const RequestSpec> specs_;
  std::span<const double> offsets_;
  int64_t max_concurrency_;
  std::vector<RequestOutput> outputs_;
  asio::io_context io_{1};
  Clock::time_point start_;
  int64_t in_flight_ = 0;
  std::deque<size_t> pending_;
};

}  // namespace

asio::awaitable<void> StreamOneRequest(const LoadTarget& target, const asio::ip::tcp::resolver::results_type& endpoints,
                                       std::string body, Clock::time_point run_start, RequestOutput* out) {
  HttpPost post{target.http.HostHeader(), target.path, std::move(body), target.headers, target.idle_timeout};
  StreamAccumulator acc(target.kind);
  SseParser sse;
  std::vector<std::string> events;
  const Clock::time_point sent = Clock::now();
  out->start_time_s = SecondsBetween(run_start, sent);
  auto deliver = [&](double elapsed_s) {
    for (const std::string& e : events) acc.OnEvent(e, elapsed_s);
    events.clear();
  };
  HttpPostResult result = co_await StreamingPost(endpoints, post, [&](std::string_view bytes) {
    sse.Feed(bytes, &events);
    deliver(SecondsBetween(sent, Clock::now()));
  });
  if (result.error.empty()) {
    sse.Finish(&events);
    deliver(SecondsBetween(sent, Clock::now()));
  }
  acc.Finish(result.error, out);
}

StatusOr<LoadResult> RunLoad(const LoadTarget& target, std::span<const RequestSpec> specs,
                             std::span<const double> arrival_offsets_s, int64_t max_concurrency) {
  PAGELLM_CHECK(specs.size() == arrival_offsets_s.size());
  PAGELLM_ASSIGN_OR_RETURN(auto endpoints, ResolveTarget(target.http));
  RaiseOpenFileLimit();
  LoadRun run(target, std::move(endpoints), specs, arrival_offsets_s, max_concurrency);
  return run.Run();
}

}  // namespace pagellm::bench
