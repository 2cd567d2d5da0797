// Tokenizer throughput: encodes every line of a text file with pagellm's Tokenizer and
// prints MB/s and tokens/s (single thread, after one warm-up pass that fills the cache,
// like HF's own BPE cache would be warm in a server).
//
//   tokenizer_bench TOKENIZER_JSON_OR_DIR CORPUS.txt [repeats] [threads]
#include <atomic>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/mapped_file.h"
#include "tokenizer/tokenizer.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s TOKENIZER CORPUS [repeats] [threads]\n", argv[0]);
    return 2;
  }
  auto tok = pagellm::tokenizer::Tokenizer::FromFile(argv[1]);
  auto text = pagellm::ReadFileToString(argv[2]);
  if (!tok.ok() || !text.ok()) {
    std::fprintf(stderr, "error: %s\n", (!tok.ok() ? tok.status() : text.status()).ToString().c_str());
    return 1;
  }
  int repeats = argc > 3 ? std::atoi(argv[3]) : 3;
  int num_threads = argc > 4 ? std::atoi(argv[4]) : 1;
  std::vector<std::string> lines;
  std::istringstream in(*text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  size_t num_tokens = 0;
  for (const auto& l : lines) num_tokens += (*tok)->Encode(l).size();  // warm-up
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    std::atomic<size_t> count{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < num_threads; ++t) {
      threads.emplace_back([&, t] {
        size_t local = 0;
        for (size_t i = t; i < lines.size(); i += num_threads) local += (*tok)->Encode(lines[i]).size();
        count += local;
      });
    }
    for (auto& th : threads) th.join();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (count != num_tokens) { std::fprintf(stderr, "error: token count changed\n"); return 1; }
  }
  double mb = text->size() / 1e6;
  std::printf("pagellm   threads=%d  %.2f MB  %zu lines  %zu tokens  best %.3f s  %.2f MB/s  %.0f tokens/s\n",
              num_threads, mb, lines.size(), num_tokens, best, mb / best, num_tokens / best);
  return 0;
}
