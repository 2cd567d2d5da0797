#include "router/relay.h"

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

#include "net/api_error.h"
#include "net/http_client.h"
#include "router/router_service.h"

namespace pagellm::router {
namespace {

namespace asio = boost::asio;

enum class AttemptEnd { kDone, kAnswered, kFailedBeforeBytes, kCut, kCancelled };

struct AttemptResult {
  AttemptEnd end = AttemptEnd::kDone;
  std::string error;
  int status = 0;           // the worker's HTTP status (0: none)
  int64_t retry_after = 0;  // its Retry-After, seconds (0: none)
};

bool Retryable(int status) { return status == 0 || status == 408 || status == 429 || status >= 500; }

void WriteEvent(RelayJob& job, std::string sse) {
  if (!job.began) {
    job.ex->BeginStream("text/event-stream");
    job.began = true;
  }
  job.ex->Write(std::move(sse));
}

void ForwardEvent(RelayJob& job, const std::string& data) {
  if (data == "[DONE]") {
    job.saw_done = true;
    return;
  }
  OrderedJson event = OrderedJson::parse(data, nullptr, /*allow_exceptions=*/false);
  std::string out;
  if (event.is_discarded()) {
    out = "data: " + data + "\n\n";
  } else {
    std::optional<OrderedJson> forwarded = job.resume.OnEvent(std::move(event));
    if (!forwarded) return;
    out = "data: " + forwarded->dump() + "\n\n";
  }
  WriteEvent(job, std::move(out));
}

asio::awaitable<AttemptResult> Attempt(RelayJob& job, const WorkerView& w, const std::string& path, std::string body) {
  const RouterOptions& options = job.service.options();
  net::HttpPost post;
  post.host_header = w.target.HostHeader();
  post.path = path;
  post.body = std::move(body);
  if (!job.authorization.empty()) post.headers.emplace_back("Authorization", job.authorization);
  post.idle_timeout = options.upstream_idle_timeout;
  post.cancelled = &job.cancelled;
  post.on_sent = [&job] {
    if (job.latency_recorded) return;
    job.latency_recorded = true;
    job.service.metrics().ObserveAddedLatency(SteadyNowS() - job.read_at_s);
  };
  job.saw_done = false;
  std::string whole;  // a non-streaming 200 body
  net::SseParser parser;
  std::vector<std::string> events;
  const bool stream = job.key.stream;
  net::HttpPostResult r = co_await net::StreamingPost(w.endpoints, post, [&](std::string_view bytes) {
    if (!stream) return whole.append(bytes), void();
    events.clear();
    parser.Feed(bytes, &events);
    for (const std::string& data : events) ForwardEvent(job, data);
  });
  if (r.cancelled || job.cancelled) co_return AttemptResult{AttemptEnd::kCancelled, "client left"};
  if (r.error.empty()) {
    if (!stream) {
      job.ex->Respond(200, "application/json", std::move(whole));
      co_return AttemptResult{AttemptEnd::kDone, ""};
    }
    if (job.saw_done) co_return AttemptResult{AttemptEnd::kDone, ""};
    r.error = "the stream ended without [DONE]";
  }
  if (r.status != 0 && r.status != 200 && !Retryable(r.status)) {
    // The worker judged the request itself (400, 401, 404, ...): pass its answer on.
    job.ex->Respond(r.status, "application/json", r.error_body);
    co_return AttemptResult{AttemptEnd::kAnswered, ""};
  }
  std::string why = fmt::format("worker {}: {}", w.url, r.error);
  int64_t retry_after = 0;
  if (!r.retry_after.empty()) retry_after = std::max<int64_t>(0, std::strtoll(r.retry_after.c_str(), nullptr, 10));
  co_return AttemptResult{job.began ? AttemptEnd::kCut : AttemptEnd::kFailedBeforeBytes, why, r.status, retry_after};
}

// Ends the client's request with `message`: an error response (with Retry-After when
// retry_after_s > 0), or, mid-stream, an error event and [DONE] (the status line is
// long gone).
void FailJob(RelayJob& job, int status, const std::string& message, int64_t retry_after_s = 0) {
  job.service.metrics().OnClientError();
  std::string body = net::ApiErrorBody(net::MakeApiError(status, message));
  std::string headers = retry_after_s > 0 ? fmt::format("Retry-After: {}\r\n", retry_after_s) : "";
  if (!job.began) return job.ex->Respond(status, "application/json", body, std::move(headers));
  job.ex->Write("data: " + body + "\n\n");
  job.ex->Write("data: [DONE]\n\n");
  job.ex->EndStream();
}

// Ends a stream: the router's own closing events after a resume (the usage), [DONE].
void EndStream(RelayJob& job) {
  for (const OrderedJson& e : job.resume.FinalEvents()) WriteEvent(job, "data: " + e.dump() + "\n\n");
  job.ex->Write("data: [DONE]\n\n");
  job.ex->EndStream();
}

// Moves the stream on to its next unfinished choice; false when the job ended here.
bool ContinueWithNextChoice(RelayJob& job) {
  std::vector<OrderedJson> closed;
  bool more = job.resume.BeginResume(&closed);
  for (const OrderedJson& e : closed) WriteEvent(job, "data: " + e.dump() + "\n\n");
  if (more) return true;
  if (job.resume.AllFinished()) {
    EndStream(job);
  } else {
    FailJob(job, 502, "the stream broke and cannot be resumed");
  }
  return false;
}

}  // namespace

RelayJob::RelayJob(RouterService& service, std::shared_ptr<net::HttpExchange> ex, std::string path, OrderedJson body,
                   bool chat, double read_at_s)
    : service(service), ex(std::move(ex)), path(std::move(path)), body(std::move(body)), chat(chat),
      read_at_s(read_at_s), key(ReadRequestKey(this->body, chat)), blocks(PrefixIndex::HashBlocks(key.text)),
      resume(this->body, chat, key) {}

asio::awaitable<void> RunRelay(std::shared_ptr<RelayJob> job) {
  RouterService& service = job->service;
  int num_failed = 0, num_resumes = 0, num_continued = 0;
  std::string last_error = "no worker is ready";
  // Workers that refused the request as overloaded (429) and when they said to retry.
  int num_overloaded = 0;
  int64_t retry_after = 0;
  // Every worker tried refused as overloaded: shed with 503 and the soonest Retry-After.
  auto all_overloaded = [&] { return num_overloaded > 0 && num_overloaded == num_failed; };
  auto shed = [&] {
    FailJob(*job, 503, fmt::format("every worker tried is overloaded ({})", last_error), std::max<int64_t>(1, retry_after));
  };
  for (;;) {
    if (job->cancelled) co_return;
    std::optional<WorkerView> w = service.Choose(*job);
    if (!w) {
      if (all_overloaded()) {
        shed();
      } else {
        FailJob(*job, 503, fmt::format("no worker could serve the request ({})", last_error));
      }
      co_return;
    }
    const bool resuming = job->resume.resumed();
    std::string path = resuming ? job->resume.ResumePath() : job->path;
    std::string body = resuming ? job->resume.ResumeBody().dump() : job->resume.UpstreamBody().dump();
    service.registry().OnRequestStart(w->url, job->key.est_tokens);
    service.metrics().OnRequest(w->url);
    AttemptResult r = co_await Attempt(*job, *w, path, std::move(body));
    service.registry().OnRequestEnd(w->url, job->key.est_tokens);
    if (r.end == AttemptEnd::kDone && job->key.stream) {
      // A resume continues one choice at a time: the next one, or the end.
      if (job->resume.resumed() && !job->resume.AllFinished()) {
        if (++num_continued > job->key.n) {  // a worker ended a choice without a finish_reason
          FailJob(*job, 502, fmt::format("worker {} ended a resumed choice without a finish_reason", w->url));
          co_return;
        }
        if (!ContinueWithNextChoice(*job)) co_return;
        continue;
      }
      EndStream(*job);
      co_return;
    }
    if (r.end == AttemptEnd::kDone || r.end == AttemptEnd::kAnswered || r.end == AttemptEnd::kCancelled) co_return;
    last_error = r.error;
    job->tried.insert(w->url);
    service.metrics().OnError(w->url);
    if (r.end == AttemptEnd::kFailedBeforeBytes && r.status == 429) {
      // Overloaded, not broken: it stays in rotation; the request tries another worker.
      ++num_overloaded;
      retry_after = retry_after == 0 ? r.retry_after : std::min(retry_after, r.retry_after);
    } else {
      // The worker failed this request: out of rotation until a probe succeeds.
      service.registry().SetHealth(w->url, WorkerHealth::kFailed);
    }
    if (r.end == AttemptEnd::kFailedBeforeBytes) {
      if (++num_failed >= service.options().max_attempts) {
        if (all_overloaded()) {
          shed();
        } else {
          FailJob(*job, 502, fmt::format("{} attempts failed; last: {}", num_failed, last_error));
        }
        co_return;
      }
      service.metrics().OnRetry();
      continue;
    }
    if (job->resume.AllFinished()) {  // cut between the last token and [DONE]
      EndStream(*job);
      co_return;
    }
    if (!job->resume.CanResume() || num_resumes++ >= service.options().max_resumes) {
      FailJob(*job, 502, fmt::format("the stream broke and cannot be resumed ({})", last_error));
      co_return;
    }
    service.metrics().OnResume();
    if (!ContinueWithNextChoice(*job)) co_return;
  }
}

asio::awaitable<void> RelayGet(std::shared_ptr<net::HttpExchange> ex, WorkerView worker, std::string path) {
  net::HttpPost get;
  get.method = "GET";
  get.host_header = worker.target.HostHeader();
  get.path = path;
  get.idle_timeout = std::chrono::seconds(10);
  std::string body;
  net::HttpPostResult r = co_await net::StreamingPost(worker.endpoints, get, [&](std::string_view b) { body.append(b); });
  if (r.error.empty()) {
    ex->Respond(200, "application/json", std::move(body));
  } else if (r.status != 0) {
    ex->Respond(r.status, "application/json", r.error_body);
  } else {
    RespondError(ex, 502, fmt::format("worker {}: {}", worker.url, r.error));
  }
}

}  // namespace pagellm::router
