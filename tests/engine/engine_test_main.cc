// main() of engine_e2e_test: makes OpenMP wait passively, as the pagellm binary does
// (cli/main.cc), then runs the tests. libgomp reads OMP_WAIT_POLICY before main(), so
// the process re-executes itself once with it set; spinning barriers make a step
// 10-30x slower when other processes share the 2 cores. A caller's own value wins.
#include <unistd.h>

#include <cstdlib>

#include <gtest/gtest.h>

int main(int argc, char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") == nullptr) {
    setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
    execv("/proc/self/exe", argv);  // returns only on failure: run spinning
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
