#include "net/api_error.h"

#include <gtest/gtest.h>

#include "common/json.h"

namespace pagellm::net {
namespace {

TEST(ApiErrorTest, InvalidArgumentBecomes400WithParam) {
  ApiError e = ApiErrorFromStatus(InvalidArgumentError("temperature: must be >= 0, got -1"));
  EXPECT_EQ(e.http_status, 400);
  EXPECT_EQ(e.param, "temperature");
  OrderedJson body = OrderedJson::parse(ApiErrorBody(e));
  EXPECT_EQ(body["error"]["message"], "temperature: must be >= 0, got -1");
  EXPECT_EQ(body["error"]["type"], "BadRequestError");
  EXPECT_EQ(body["error"]["param"], "temperature");
  EXPECT_EQ(body["error"]["code"], 400);
}

TEST(ApiErrorTest, MessagesWithoutParamPrefixHaveNullParam) {
  ApiError e = ApiErrorFromStatus(InvalidArgumentError("This model's maximum context length is 10 tokens. x: y"));
  EXPECT_EQ(e.param, "");
  EXPECT_TRUE(OrderedJson::parse(ApiErrorBody(e))["error"]["param"].is_null());
  EXPECT_EQ(ApiErrorFromStatus(InvalidArgumentError("messages[0].role: unknown role 'x'")).param, "messages[0].role");
}

TEST(ApiErrorTest, StatusCodesMap) {
  EXPECT_EQ(ApiErrorFromStatus(NotFoundError("The model `x` does not exist.")).http_status, 404);
  EXPECT_EQ(ApiErrorFromStatus(UnavailableError("x")).http_status, 503);
  EXPECT_EQ(ApiErrorFromStatus(InternalError("x")).http_status, 500);
  EXPECT_STREQ(ApiErrorType(404), "NotFoundError");
  EXPECT_STREQ(ApiErrorType(401), "AuthenticationError");
}

}  // namespace
}  // namespace pagellm::net
