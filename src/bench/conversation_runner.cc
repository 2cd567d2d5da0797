#include "bench/conversation_runner.h"

#include <deque>
#include <exception>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fmt/format.h>

#include "bench/openai_stream.h"

namespace pagellm::bench {
namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

class ConversationRun {
 public:
  ConversationRun(const LoadTarget& target, asio::ip::tcp::resolver::results_type endpoints,
                  std::vector<Conversation>* conversations, const ConversationRunConfig& config,
                  std::span<const double> offsets, int64_t max_concurrency)
      : target_(target), endpoints_(std::move(endpoints)), conversations_(*conversations), config_(config),
        offsets_(offsets), max_concurrency_(max_concurrency),
        num_turns_(conversations->empty() ? 0 : conversations->front().user_messages.size()),
        outputs_(conversations->size() * num_turns_) {}

  ConversationRunResult Run() {
    start_ = Clock::now();
    asio::co_spawn(io_, Dispatch(), asio::detached);
    io_.run();
    return ConversationRunResult{std::move(outputs_), std::chrono::duration<double>(Clock::now() - start_).count()};
  }

 private:
  asio::awaitable<void> Dispatch() {
    asio::steady_timer timer(io_);
    for (size_t c = 0; c < conversations_.size(); ++c) {
      const auto at = start_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(offsets_[c]));
      if (at > Clock::now()) {
        timer.expires_at(at);
        boost::system::error_code ec;
        co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      }
      if (max_concurrency_ <= 0 || in_flight_ < max_concurrency_) {
        Start(c);
      } else {
        pending_.push_back(c);
      }
    }
  }

  void Start(size_t c) {
    ++in_flight_;
    asio::co_spawn(io_, Converse(c), [this, c](std::exception_ptr failure) {
      if (failure) MarkUnsent(c, "client error");
      --in_flight_;
      if (!pending_.empty()) {
        const size_t next = pending_.front();
        pending_.pop_front();
        Start(next);
      }
    });
  }

  // Records every turn of conversation c not yet finished as failed.
  void MarkUnsent(size_t c, const std::string& why) {
    for (size_t t = conversations_[c].replies.size(); t < num_turns_; ++t) {
      RequestOutput& out = outputs_[c * num_turns_ + t];
      if (!out.error.empty()) continue;
      out.success = false;
      out.error = fmt::format("turn {} not sent: {}", t, why);
    }
  }

  asio::awaitable<void> Converse(size_t c) {
    Conversation& conv = conversations_[c];
    int64_t history_tokens = 0;  // user and reply tokens before this turn (fallback prompt_len)
    for (size_t t = 0; t < num_turns_; ++t) {
      RequestSpec spec{config_.model, "", 0, config_.max_tokens, config_.ignore_eos, config_.extra_body,
                       TurnMessages(conv, static_cast<int64_t>(t))};
      RequestOutput& out = outputs_[c * num_turns_ + t];
      co_await StreamOneRequest(target_, endpoints_, BuildRequestBody(ApiKind::kChatCompletions, spec), start_, &out);
      history_tokens += conv.user_message_lens[t];
      out.prompt_len = out.server_prompt_tokens >= 0 ? out.server_prompt_tokens : history_tokens;
      if (!out.success) {
        MarkUnsent(c, fmt::format("turn {} failed", t));
        co_return;
      }
      history_tokens += out.output_tokens;
      conv.replies.push_back(out.generated_text);
    }
  }

  const LoadTarget& target_;
  asio::ip::tcp::resolver::results_type endpoints_;
  std::vector<Conversation>& conversations_;
  const ConversationRunConfig& config_;
  std::span<const double> offsets_;
  int64_t max_concurrency_;
  size_t num_turns_;
  std::vector<RequestOutput> outputs_;
  asio::io_context io_{1};
  Clock::time_point start_;
  int64_t in_flight_ = 0;
  std::deque<size_t> pending_;
};

}  // namespace

StatusOr<ConversationRunResult> RunConversations(const LoadTarget& target, std::vector<Conversation>* conversations,
                                                 const ConversationRunConfig& config,
                                                 std::span<const double> start_offsets_s, int64_t max_concurrency) {
  PAGELLM_CHECK(conversations->size() == start_offsets_s.size());
  for (const Conversation& c : *conversations) {
    PAGELLM_CHECK(c.user_messages.size() == conversations->front().user_messages.size());
    PAGELLM_CHECK(c.replies.empty());
  }
  PAGELLM_ASSIGN_OR_RETURN(auto endpoints, ResolveTarget(target.http));
  ConversationRun run(target, std::move(endpoints), conversations, config, start_offsets_s, max_concurrency);
  return run.Run();
}

}  // namespace pagellm::bench
