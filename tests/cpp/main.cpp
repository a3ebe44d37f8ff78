// Catch2's main, in its own translation unit (it is slow to compile), and the account of skipped
// test cases: Catch2 v2 has no skip, so SKIP_UNLESS_FILE (test_util.h) records the case here and
// returns; at the end of the run the skipped cases are printed and counted apart from the passes,
// and appended to catch2-skipped.log in the working directory (tools/test.mjs prints that list
// after ctest, so a skip never hides among the passes).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace testutil {

std::vector<std::pair<std::string, std::string>>& skipped_cases() {
  static std::vector<std::pair<std::string, std::string>> list;
  return list;
}

void note_skip(const std::string& reason) {
  skipped_cases().emplace_back(Catch::getResultCapture().getCurrentTestName(), reason);
}

}  // namespace testutil

namespace {

struct SkipReport : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;
  void testRunEnded(const Catch::TestRunStats& stats) override {
    const auto& list = testutil::skipped_cases();
    if (list.empty()) return;
    std::printf("\n%zu of %zu test cases SKIPPED (counted as passed by Catch2, but they checked nothing):\n", list.size(),
                stats.totals.testCases.total());
    FILE* log = std::fopen("catch2-skipped.log", "a");
    for (const auto& [name, reason] : list) {
      std::printf("  SKIPPED: %s — %s\n", name.c_str(), reason.c_str());
      if (log) std::fprintf(log, "%s: %s — %s\n", stats.runInfo.name.c_str(), name.c_str(), reason.c_str());
    }
    if (log) std::fclose(log);
  }
};

}  // namespace

CATCH_REGISTER_LISTENER(SkipReport)
