// Soundness over a real-world corpus (JSONSchemaBench subset in shared/data): for every
// schema we accept, no instance the reference validators labelled invalid may be a
// complete match of the grammar. (Valid instances may be rejected: the grammar emits
// declared properties in order and bounded whitespace, a deliberate subset.)
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "grammar/json_schema.h"
#include "grammar/test_support.h"

namespace pagellm::grammar {
namespace {

std::filesystem::path CorpusDir() {
  for (const char* p : {PAGELLM_SOURCE_DIR "/../shared/data/jsonschemabench", "/work/shared/data/jsonschemabench"}) {
    if (std::filesystem::is_directory(p)) return p;
  }
  return {};
}

TEST(JsonSchemaCorpusTest, NoInvalidInstanceIsAccepted) {
  std::filesystem::path dir = CorpusDir();
  // The corpus (30 MB) is not in the repository; a fresh clone checks the committed
  // subset end to end instead (tests/e2e/structured_outputs_test.mjs).
  if (dir.empty()) GTEST_SKIP() << "shared/data/jsonschemabench not found beside the source tree";
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".json") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  auto vocab = testing::SmallVocab();
  int supported = 0, refused = 0, invalid_checked = 0, valid_accepted = 0, valid_checked = 0;
  for (size_t i = 0; i < files.size(); i += 3) {  // a third of the subset keeps this test short
    std::ifstream in(files[i]);
    std::stringstream ss;
    ss << in.rdbuf();
    OrderedJson doc = OrderedJson::parse(ss.str(), nullptr, false);
    if (doc.is_discarded() || !doc.contains("schema")) continue;
    auto g = JsonSchemaToGrammar(doc["schema"], {});
    auto c = g.ok() ? CompileGrammar(*g) : StatusOr<std::shared_ptr<const CompiledGrammar>>(g.status());
    if (!c.ok()) {
      ++refused;
      continue;
    }
    ++supported;
    for (const OrderedJson& t : doc.value("tests", OrderedJson::array())) {
      if (!t.contains("data") || !t.contains("valid")) continue;
      for (int indent : {-1, 2}) {
        std::string text = t["data"].dump(indent, ' ', false, OrderedJson::error_handler_t::replace);
        bool accepted = testing::Matches(*c, *vocab, text);
        if (t["valid"].get<bool>()) {
          ++valid_checked;
          valid_accepted += accepted;
        } else {
          ++invalid_checked;
          EXPECT_FALSE(accepted) << files[i].filename() << " accepts an invalid instance: " << text;
        }
      }
    }
  }
  printf("corpus: %d schemas supported, %d refused; %d invalid instances all rejected; %d of %d valid accepted\n",
         supported, refused, invalid_checked, valid_accepted, valid_checked);
  EXPECT_GT(supported, refused);
  EXPECT_GT(invalid_checked, 100);
}

}  // namespace
}  // namespace pagellm::grammar
