// verify_bench: what a speculative-decoding verification forward (1 sequence, k + 1 new
// tokens) costs against a plain decode forward (1 sequence, 1 new token), and which
// backend ops the extra time goes to.
//
//   export OMP_WAIT_POLICY=ACTIVE GOMP_SPINCOUNT=1000 OMP_PROC_BIND=close OMP_PLACES=cores
//   build/src/engine/verify_bench MODEL_DIR [--dtype bfloat16] [--context 300] [--k 4] [--iters 40]
//
// The OMP_* settings are the ones the pagellm binary gives itself (src/cli/main.cc); this
// tool does not re-exec, so set them by hand or the numbers are not the engine's.
//
// The model is loaded and built as the engine builds it (LoadModel, CreateCausalLm on the
// "cpu" backend, bf16 KV cache), with the backend wrapped in a ProfilingBackend. After a
// prefill of --context random tokens, decode (1 row at position context) and verification
// (k + 1 rows at context .. context + k, logits for every row, as ModelRunner::BuildInput
// does with num_spec_tokens) alternate on the same sequence and blocks. Nothing is
// appended, so every round overwrites the same KV slots: warm pages, no allocation, the
// steady state of a spec-decode step. 3 warm-up rounds, then --iters timed ones.
//
// Prints the median wall time of each kind of forward and, per op, its median ms per
// forward at 1 row and at k + 1 rows (an op's rows are what it got: tokens, tokens * heads
// for the per-head q/k RmsNorm, elements for SiluMul / AddInPlace), sorted by the
// difference. Medians, not means: one preempted op on a shared machine would otherwise
// show up as that op's cost.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend_registry.h"
#include "backend/profiling_backend.h"
#include "common/steady_clock.h"
#include "engine/causal_lm.h"
#include "model/forward_input_builder.h"
#include "model/model_loader.h"

namespace pagellm {
namespace {

constexpr int32_t kBlockSize = 16;
constexpr int kWarmupRounds = 3;

struct Options {
  std::string model_dir, dtype = "bfloat16";
  int32_t context = 300, k = 4, iters = 40;
};

// One sequence's step laid out as ModelRunner lays it out (the same ForwardInputBuilder):
// `ids` at positions begin.., the sequence's KV blocks 1, 2, ... (block 0 is the block
// pool's null block), logits for the last `num_logits` rows.
ForwardInputBuilder MakeStep(std::span<const int32_t> ids, int32_t begin, int32_t num_logits, bool stateful) {
  const int32_t end = begin + static_cast<int32_t>(ids.size());
  std::vector<int32_t> block_ids;
  for (int32_t b = 0; b < (end + kBlockSize - 1) / kBlockSize; ++b) block_ids.push_back(1 + b);
  ForwardInputBuilder step(kBlockSize);
  step.AddSequence(ids, begin, block_ids, num_logits, stateful ? 0 : -1);
  return step;
}

// Per op, per rows: calls and each timed forward's seconds, over the forwards of one kind.
struct OpSamples {
  int64_t calls = 0;
  std::vector<double> seconds;
};
using OpTable = std::map<std::string, std::map<int64_t, OpSamples>>;

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown";
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// One timed forward: its wall time goes to `seconds`, its ops to `table`.
Status TimedForward(CausalLm& model, PagedKvCache& kv, ProfilingBackend& prof, const ForwardInput& step,
                    float* logits, std::vector<double>& seconds, OpTable& table) {
  prof.Reset();
  const double start = SteadySeconds();
  PAGELLM_RETURN_IF_ERROR(model.Forward(step, kv, logits));
  seconds.push_back(SteadySeconds() - start);
  for (const OpTime& t : prof.Snapshot()) {
    OpSamples& samples = table[t.op][t.rows];
    samples.calls += t.calls;
    samples.seconds.push_back(t.seconds);
  }
  return OkStatus();
}

struct Row {
  std::string op, rows;
  double calls, decode_ms, verify_ms;  // per forward; medians for ops
};

// Pairs each op's decode entries with its verification entries in order of rows (rows r
// at decode become r * (k + 1) at verification): calls and median ms per forward.
std::vector<Row> PairOps(const OpTable& decode, const OpTable& verify, int32_t iters) {
  using Entry = std::pair<int64_t, const OpSamples*>;
  std::map<std::string, std::pair<std::vector<Entry>, std::vector<Entry>>> by_op;
  for (const auto& [op, rows] : decode) for (const auto& [r, s] : rows) by_op[op].first.emplace_back(r, &s);
  for (const auto& [op, rows] : verify) for (const auto& [r, s] : rows) by_op[op].second.emplace_back(r, &s);
  auto ms = [](const std::vector<Entry>& e, size_t i) { return i < e.size() ? Median(e[i].second->seconds) * 1e3 : 0; };
  auto rows_of = [](const std::vector<Entry>& e, size_t i) { return i < e.size() ? e[i].first : 0; };
  auto calls = [](const std::vector<Entry>& e, size_t i) { return i < e.size() ? e[i].second->calls : 0; };
  std::vector<Row> out;
  for (const auto& [op, pair] : by_op) {
    const auto& [d, v] = pair;
    for (size_t i = 0; i < std::max(d.size(), v.size()); ++i) {
      out.push_back({op, fmt::format("{}->{}", rows_of(d, i), rows_of(v, i)),
                     static_cast<double>(std::max(calls(d, i), calls(v, i))) / iters, ms(d, i), ms(v, i)});
    }
  }
  std::sort(out.begin(), out.end(),
            [](const Row& x, const Row& y) { return x.verify_ms - x.decode_ms > y.verify_ms - y.decode_ms; });
  return out;
}

Status Run(const Options& opt) {
  PAGELLM_ASSIGN_OR_RETURN(LoadedModel loaded, LoadModel({.model_path = opt.model_dir, .dtype = opt.dtype}));
  const ModelConfig& mc = loaded.config;
  PAGELLM_ASSIGN_OR_RETURN(Backend * cpu, BackendRegistry::Get("cpu"));
  ProfilingBackend prof(*cpu);
  const int32_t rows = opt.k + 1, max_tokens = std::max(opt.context, rows);
  PAGELLM_ASSIGN_OR_RETURN(auto model, CreateCausalLm(mc, loaded.weights, prof, max_tokens, {}));
  PAGELLM_RETURN_IF_ERROR(model->AllocateStateSlots(1, 0));
  const bool stateful = model->state_bytes_per_slot() > 0;
  const int64_t num_blocks = 1 + (opt.context + rows + kBlockSize - 1) / kBlockSize;  // + the null block
  PAGELLM_ASSIGN_OR_RETURN(auto kv, PagedKvCache::Create(model->MakeKvCacheSpec(num_blocks, kBlockSize, DType::kBF16)));

  std::mt19937 rng(1234);
  std::uniform_int_distribution<int32_t> token(0, static_cast<int32_t>(mc.vocab_size) - 1);
  auto random_ids = [&](int32_t n) {
    std::vector<int32_t> ids(static_cast<size_t>(n));
    for (int32_t& id : ids) id = token(rng);
    return ids;
  };
  std::vector<float> logits(static_cast<size_t>(rows) * static_cast<size_t>(mc.vocab_size));
  ForwardInputBuilder prefill = MakeStep(random_ids(opt.context), 0, 1, stateful);
  PAGELLM_RETURN_IF_ERROR(model->Forward(prefill.Build(), *kv, logits.data()));
  ForwardInputBuilder decode_step = MakeStep(random_ids(1), opt.context, 1, stateful);
  ForwardInputBuilder verify_step = MakeStep(random_ids(rows), opt.context, rows, stateful);
  const ForwardInput decode = decode_step.Build(), verify = verify_step.Build();

  std::vector<double> decode_s, verify_s;
  OpTable decode_ops, verify_ops;
  for (int i = 0; i < kWarmupRounds + opt.iters; ++i) {
    if (i == kWarmupRounds) {  // warm-up over: keep only the timed rounds
      decode_s.clear();
      verify_s.clear();
      decode_ops.clear();
      verify_ops.clear();
    }
    PAGELLM_RETURN_IF_ERROR(TimedForward(*model, *kv, prof, decode, logits.data(), decode_s, decode_ops));
    PAGELLM_RETURN_IF_ERROR(TimedForward(*model, *kv, prof, verify, logits.data(), verify_s, verify_ops));
  }

  const double decode_ms = Median(decode_s) * 1e3, verify_ms = Median(verify_s) * 1e3;
  fmt::print("cpu: {}\n", CpuModel());
  fmt::print("model: {} ({}, {} layers, hidden {}, vocab {}), dtype {}, context {}, k {}, {} iters\n", opt.model_dir,
             mc.model_type, mc.num_hidden_layers, mc.hidden_size, mc.vocab_size, opt.dtype, opt.context, opt.k,
             opt.iters);
  fmt::print("decode forward (1 row):   median {:8.3f} ms\n", decode_ms);
  fmt::print("verify forward ({} rows):  median {:8.3f} ms\n", rows, verify_ms);
  fmt::print("verify / decode: {:+.1f} %\n\n", (verify_ms / decode_ms - 1.0) * 100.0);

  std::vector<Row> table = PairOps(decode_ops, verify_ops, opt.iters);
  Row ops_total{"sum of ops", "", 0, 0, 0};
  for (const Row& r : table) {
    ops_total.calls += r.calls;
    ops_total.decode_ms += r.decode_ms;
    ops_total.verify_ms += r.verify_ms;
  }
  // Medians do not add up exactly; this is the rest of the forward only roughly.
  const Row outside{"rest (forward - ops)", "", 0, decode_ms - ops_total.decode_ms, verify_ms - ops_total.verify_ms};
  fmt::print("ms per forward (median over iters); rows = what the op got at 1 row -> {} rows\n", rows);
  fmt::print("{:<26} {:>12} {:>9} {:>10} {:>10} {:>10}\n", "op", "rows", "calls/fw", "decode", "verify", "diff");
  auto print_row = [](const Row& r) {
    fmt::print("{:<26} {:>12} {:>9} {:>10.3f} {:>10.3f} {:>+10.3f}\n", r.op, r.rows,
               r.calls > 0 ? fmt::format("{:.0f}", r.calls) : "", r.decode_ms, r.verify_ms, r.verify_ms - r.decode_ms);
  };
  for (const Row& r : table) print_row(r);
  print_row(ops_total);
  print_row(outside);
  return OkStatus();
}

}  // namespace
}  // namespace pagellm

int main(int argc, char** argv) {
  pagellm::Options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--dtype" && has_value) opt.dtype = argv[++i];
    else if (arg == "--context" && has_value) opt.context = std::stoi(argv[++i]);
    else if (arg == "--k" && has_value) opt.k = std::stoi(argv[++i]);
    else if (arg == "--iters" && has_value) opt.iters = std::stoi(argv[++i]);
    else if (opt.model_dir.empty() && arg.rfind("--", 0) != 0) opt.model_dir = arg;
    else {
      opt.model_dir.clear();  // unknown flag or stray argument: print the usage
      break;
    }
  }
  if (opt.model_dir.empty() || opt.context < 1 || opt.k < 1 || opt.iters < 1) {
    std::fprintf(stderr, "usage: verify_bench MODEL_DIR [--dtype bfloat16] [--context 300] [--k 4] [--iters 40]\n");
    return 2;
  }
  const pagellm::Status st = pagellm::Run(opt);
  if (!st.ok()) {
    std::fprintf(stderr, "verify_bench: %s\n", st.ToString().c_str());
    return 1;
  }
  return 0;
}
