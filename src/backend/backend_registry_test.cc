#include "backend/backend_registry.h"

#include <gtest/gtest.h>

namespace pagellm {
namespace {

TEST(BackendRegistry, BuiltinsAndErrors) {
  auto cpu = BackendRegistry::Get("cpu");
  auto ref = BackendRegistry::Get("reference");
  ASSERT_TRUE(cpu.ok() && ref.ok());
  EXPECT_EQ((*cpu)->name(), "cpu");
  EXPECT_EQ((*ref)->name(), "reference");
  EXPECT_EQ(*BackendRegistry::Get("cpu"), *cpu);  // one shared instance
  auto missing = BackendRegistry::Get("tpu");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("cpu"), std::string::npos);
  EXPECT_EQ(BackendRegistry::Register("cpu", nullptr).code(), StatusCode::kAlreadyExists);
}

}  // namespace
}  // namespace pagellm
