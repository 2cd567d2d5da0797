#include "net/api_error.h"

#include <cctype>

#include "common/json.h"

namespace pagellm::net {

ApiError MakeApiError(int http_status, std::string message, std::string param) {
  return {http_status, std::move(message), std::move(param)};
}

namespace {

// "messages[0].content: ..." -> "messages[0].content"; "" when the message does not
// start with a parameter path.
std::string LeadingParam(const std::string& message) {
  size_t colon = message.find(": ");
  if (colon == std::string::npos || colon == 0 || colon > 64) return "";
  for (size_t i = 0; i < colon; ++i) {
    char c = message[i];
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '[' || c == ']')) return "";
  }
  return message.substr(0, colon);
}

int HttpStatusFor(StatusCode code) {
  switch (code) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
    case StatusCode::kFailedPrecondition: return 400;
    case StatusCode::kUnauthenticated: return 401;
    case StatusCode::kPermissionDenied: return 403;
    case StatusCode::kNotFound: return 404;
    case StatusCode::kResourceExhausted: return 429;  // an overloaded server's bounded queue
    case StatusCode::kUnavailable: return 503;
    case StatusCode::kUnimplemented: return 501;
    default: return 500;
  }
}

}  // namespace

ApiError ApiErrorFromStatus(const Status& status) {
  ApiError e;
  e.http_status = HttpStatusFor(status.code());
  e.message = status.message();
  if (e.http_status == 400) e.param = LeadingParam(e.message);
  return e;
}

const char* ApiErrorType(int http_status) {
  switch (http_status) {
    case 400: return "BadRequestError";
    case 401: return "AuthenticationError";
    case 403: return "PermissionDeniedError";
    case 404: return "NotFoundError";
    case 405: return "MethodNotAllowedError";
    case 413: return "RequestEntityTooLargeError";
    case 429: return "RateLimitError";
    case 501: return "NotImplementedError";
    case 503: return "ServiceUnavailableError";
    default: return "InternalServerError";
  }
}

std::string ApiErrorBody(const ApiError& error) {
  OrderedJson body;
  body["error"]["message"] = error.message;
  body["error"]["type"] = ApiErrorType(error.http_status);
  body["error"]["param"] = error.param.empty() ? OrderedJson(nullptr) : OrderedJson(error.param);
  body["error"]["code"] = error.http_status;
  return body.dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
}

}  // namespace pagellm::net
