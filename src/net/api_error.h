// ApiError: an HTTP error in OpenAI's shape, {"error": {"message", "type", "param",
// "code"}}, and the mapping from pagellm::Status to it.
//
//   ApiError e = ApiErrorFromStatus(InvalidArgumentError("temperature: must be >= 0"));
//   // e.http_status == 400, e.param == "temperature"
//   exchange->Respond(e.http_status, "application/json", ApiErrorBody(e));
//
// Status messages that start with "<param>: " (ValidateSamplingParams and the request
// parsers write them that way) put <param> into "param".
#pragma once

#include <string>

#include "common/status.h"

namespace pagellm::net {

struct ApiError {
  int http_status = 400;
  std::string message;
  std::string param;  // "" => null
};

ApiError MakeApiError(int http_status, std::string message, std::string param = "");
ApiError ApiErrorFromStatus(const Status& status);
// The JSON body; "type" follows vLLM (BadRequestError, NotFoundError, ...).
std::string ApiErrorBody(const ApiError& error);
// "NotFoundError" etc. for an HTTP status.
const char* ApiErrorType(int http_status);

}  // namespace pagellm::net
