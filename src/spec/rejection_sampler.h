// Rejection sampling for speculative decoding (Leviathan et al. 2023, 2211.17192):
// given the target's distribution p and the proposer's q at one draft position, keep
// the draft d with probability min(1, p(d) / q(d)), else draw the "recovered" token from
// norm(max(p - q, 0)). The token that comes out is distributed exactly as p, whatever q
// is, so speculation never changes what a request samples, only how fast.
//
//   double u = rng.NextUniform(), v = rng.NextUniform();
//   SpecDecision d = AcceptOrRecover(p, q, draft, u, v);   // q empty: d was a point mass
//   if (!d.accepted) { emit d.token; stop verifying this request; }
//
// A deterministic proposal (n-gram lookup) is q = one-hot(d): keep d with probability
// p(d), else draw from p with d removed. That equals drawing x ~ p and keeping d iff
// x == d, which is what the engine does for n-gram drafts: it samples each draft
// position with the ordinary sampler (penalties, masks, top-k/p, the request's own
// random stream: one draw per emitted token) and stops at the first token that differs
// from the draft. rejection_sampler_test checks both against p by total variation.
#pragma once

#include <cstdint>
#include <span>

namespace pagellm {

struct SpecDecision {
  bool accepted = false;
  int32_t token = -1;  // the draft if accepted, else the recovered token
};

// p, q: [vocab] probabilities (each summing to 1; q may be empty = one-hot at `draft`).
// u, v: independent uniforms in [0, 1): u decides acceptance, v draws the recovered token.
SpecDecision AcceptOrRecover(std::span<const float> p, std::span<const float> q, int32_t draft, double u, double v);

}  // namespace pagellm
