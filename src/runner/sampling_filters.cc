#include "runner/sampling_filters.h"

#include <algorithm>
#include <cmath>

namespace pagellm {
namespace {

// min_p keeps p_i >= min_p * p_max, i.e. exp(z_i - z_max) >= min_p.
float Weight(float z, float z_max, float min_p) {
  const float w = std::exp(z - z_max);
  return w >= min_p ? w : 0.0f;
}

// Collects the nucleus from dense weights w without sorting the vocabulary: a
// threshold pass gathers every weight >= t; once the gathered mass reaches
// top_p * total, the nucleus (a prefix of the descending order) lies inside it,
// because every weight left out is smaller than every weight gathered.
void GatherTopP(const float* w, int32_t n, double top_p, double total,
                std::vector<Candidate>& cands) {
  static constexpr float kThresholds[] = {1e-3f, 1e-6f, 0.0f};
  for (float t : kThresholds) {
    cands.clear();
    double mass = 0.0;
    for (int32_t i = 0; i < n; ++i) {
      if (w[i] > 0.0f && w[i] >= t) {
        cands.push_back({w[i], i});
        mass += w[i];
      }
    }
    if (mass >= top_p * total || t == 0.0f) break;
  }
  KeepTopP(cands, top_p, total);
}

}  // namespace

void ApplyTemperature(float* z, int32_t n, float temperature) {
  // Division (not multiplication by 1/T) matches vLLM's logits.div_(temperature).
  for (int32_t i = 0; i < n; ++i) z[i] /= temperature;
}

FilterResult FilterCandidates(float* z, int32_t n, const FilterSpec& spec,
                              std::vector<Candidate>& cands) {
  FilterResult result;
  cands.clear();
  if (spec.top_k > 0 && spec.top_k < n) {
    CollectTopK(z, n, spec.top_k, cands);  // weights are still logits here
    if (cands.empty()) return result;
    float z_max = cands[0].weight;
    for (const Candidate& c : cands) z_max = std::max(z_max, c.weight);
    for (Candidate& c : cands) result.total_weight += (c.weight = Weight(c.weight, z_max, spec.min_p));
    std::erase_if(cands, [](const Candidate& c) { return c.weight <= 0.0f; });
    if (spec.top_p < 1.0) KeepTopP(cands, spec.top_p, result.total_weight);
    result.total_weight = 0.0;
    for (const Candidate& c : cands) result.total_weight += c.weight;
    return result;
  }
  const float z_max = MaxRow(z, n);
  result.dense = true;
  if (std::isinf(z_max) && z_max < 0) return result;
  for (int32_t i = 0; i < n; ++i) result.total_weight += (z[i] = Weight(z[i], z_max, spec.min_p));
  if (spec.top_p >= 1.0) return result;
  GatherTopP(z, n, spec.top_p, result.total_weight, cands);
  result.dense = false;
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
