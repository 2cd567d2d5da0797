#include "runner/sampling_filters.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "runner/vec_exp.h"

namespace pagellm {
namespace {

int32_t Exponent(float w) { return static_cast<int32_t>(std::bit_cast<uint32_t>(w) >> 23); }

// Collects the nucleus from dense weights w (all in [0, 1]) without sorting the
// vocabulary. Pass 1 sums the mass per binade (float exponent). Walking binades from
// the top finds the one where the cumulative mass reaches top_p * total: every weight
// in a higher binade is kept, and only that boundary binade is sorted to find where
// the prefix stops. The result is the nucleus, unordered except for the boundary part.
void GatherTopP(const float* w, int32_t n, double top_p, double total,
                std::vector<Candidate>& cands) {
  double binade_mass[256] = {};
  for (int32_t i = 0; i < n; ++i) binade_mass[Exponent(w[i])] += w[i];
  const double limit = top_p * total;
  double mass_above = 0.0;
  int32_t boundary = 255;
  while (boundary > 1 && mass_above + binade_mass[boundary] < limit) {
    mass_above += binade_mass[boundary--];
  }
  cands.clear();
  std::vector<Candidate> edge;
  for (int32_t i = 0; i < n; ++i) {
    if (w[i] <= 0.0f) continue;
    const int32_t e = Exponent(w[i]);
    if (e > boundary) {
      cands.push_back({w[i], i});
    } else if (e == boundary) {
      edge.push_back({w[i], i});
    }
  }
  SortCandidatesDescending(edge);
  double before = mass_above;
  for (const Candidate& c : edge) {
    if (!cands.empty() && before >= limit) break;
    cands.push_back(c);
    before += c.weight;
  }
}

}  // namespace

FilterResult FilterCandidates(const float* logits, int32_t n, float temperature,
                              const FilterSpec& spec, float* weights,
                              std::vector<Candidate>& cands) {
  FilterResult result;
  cands.clear();
  if (spec.top_k > 0 && spec.top_k < n) {
    CollectTopK(logits, n, spec.top_k, cands);  // weights are still raw logits here
    if (cands.empty()) return result;
    float z_max = cands[0].weight;
    for (const Candidate& c : cands) z_max = std::max(z_max, c.weight);
    // min_p keeps p_i >= min_p * p_max, i.e. exp(z_i/T - z_max/T) >= min_p.
    const float shift = z_max / temperature;
    for (Candidate& c : cands) {
      const float w = std::exp(c.weight / temperature - shift);
      c.weight = w >= spec.min_p ? w : 0.0f;
    }
    std::erase_if(cands, [](const Candidate& c) { return c.weight <= 0.0f; });
    for (const Candidate& c : cands) result.total_weight += c.weight;
    if (spec.top_p < 1.0) KeepTopP(cands, spec.top_p, result.total_weight);
  } else {
    const float z_max = MaxRow(logits, n);
    result.dense = true;
    if (std::isinf(z_max) && z_max < 0) return result;
    result.total_weight =
        ExpWeights(logits, n, temperature, z_max / temperature, spec.min_p, weights);
    if (spec.top_p >= 1.0) return result;
    GatherTopP(weights, n, spec.top_p, result.total_weight, cands);
    result.dense = false;
  }
  result.total_weight = 0.0;
  for (const Candidate& c : cands) result.total_weight += c.weight;
  return result;
}

int32_t DrawDense(const float* weights, int32_t n, double total_weight, double u) {
  const double target = u * total_weight;
  double acc = 0.0;
  int32_t last_positive = -1;
  for (int32_t i = 0; i < n; ++i) {
    if (weights[i] <= 0.0f) continue;
    acc += weights[i];
    last_positive = i;
    if (acc > target) return i;
  }
  return last_positive;  // rounding left the target just above the final sum
}

int32_t DrawCandidates(const std::vector<Candidate>& cands, double u) {
  double total = 0.0;
  for (const Candidate& c : cands) total += c.weight;
  const double target = u * total;
  double acc = 0.0;
  int32_t last_positive = -1;
  for (const Candidate& c : cands) {
    if (c.weight <= 0.0f) continue;
    acc += c.weight;
    last_positive = c.token;
    if (acc > target) return c.token;
  }
  return last_positive;
}

}  // namespace pagellm
