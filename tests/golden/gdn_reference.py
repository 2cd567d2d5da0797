#!/usr/bin/python3
"""Float64 PyTorch reference for pagellm's Gated DeltaNet kernels (src/model/hybrid).

Written from docs/qwen-architectures.md §4 (and HF transformers' torch_recurrent_gated_delta_rule /
Qwen3-Next fix_query_key_value_ordering semantics), independently of the C++ code.

Usage: /usr/bin/python3 tests/golden/gdn_reference.py DIR
  DIR/meta.json: {"nk","nv","dk","dv","kernel","num_tokens","eps"}
  DIR/<name>.f32: little-endian float32 inputs:
    mixed [T, conv_dim] (pre-conv q|k|v), z [T, nv*dv], b [T, nv], a [T, nv],
    conv_weight [conv_dim, K], a_log [nv], dt_bias [nv], norm_weight [dv],
    conv_state0 [K-1, conv_dim], state0 [nv, dk, dv],
    qkvz_grouped [T, 2*nk*dk + 2*nv*dv], ba_grouped [T, 2*nv]   (Qwen3-Next fused layout)
  Writes DIR/ref_<name>.f64 (float64): core_out [T, nv, dv], y [T, nv*dv], state [nv, dk, dv],
    conv_state [K-1, conv_dim], qkvz_flat [T, conv_dim + nv*dv], ba_flat [T, 2*nv].
The C++ side (gdn_golden_test.cc) runs the whole sequence split into a chunked prefill and
token-by-token decode steps; here it is one straight recurrent pass in float64.
"""
import json
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F


def load(d, name, shape):
    arr = np.fromfile(os.path.join(d, name + ".f32"), dtype="<f4").astype(np.float64)
    return torch.from_numpy(arr).reshape(shape)


def save(d, name, t):
    t.detach().contiguous().numpy().astype("<f8").tofile(os.path.join(d, "ref_" + name + ".f64"))


def l2norm(x, eps=1e-6):
    return x * torch.rsqrt((x * x).sum(dim=-1, keepdim=True) + eps)


def causal_conv_silu(mixed, weight, conv_state0):
    # history = [state rows | new rows]; depthwise conv with K taps, newest input on tap K-1.
    hist = torch.cat([conv_state0, mixed], dim=0)            # [K-1+T, C]
    k = weight.shape[1]
    out = F.conv1d(hist.t().unsqueeze(0), weight.unsqueeze(1), groups=weight.shape[0])  # [1, C, T]
    return F.silu(out[0].t()), hist[-(k - 1):]


def gated_delta_rule(q, k, v, g, beta, state):
    # q, k [T, nv, dk]; v [T, nv, dv]; g, beta [T, nv]; state [nv, dk, dv]
    out = torch.zeros_like(v)
    for t in range(q.shape[0]):
        state = state * g[t].exp()[:, None, None]
        kv_mem = (state * k[t][:, :, None]).sum(dim=-2)        # [nv, dv]
        delta = (v[t] - kv_mem) * beta[t][:, None]
        state = state + k[t][:, :, None] * delta[:, None, :]
        out[t] = (state * q[t][:, :, None]).sum(dim=-2)
    return out, state


def gated_rmsnorm(x, z, w, eps):
    var = (x * x).mean(dim=-1, keepdim=True)
    return w * (x * torch.rsqrt(var + eps)) * F.silu(z)


def qwen3_next_ungroup(qkvz, ba, nk, nv, dk, dv):
    # HF Qwen3NextGatedDeltaNet.fix_query_key_value_ordering, then flatten per token.
    t, r = qkvz.shape[0], nv // nk
    qkvz = qkvz.view(t, nk, 2 * dk + 2 * r * dv)
    ba = ba.view(t, nk, 2 * r)
    q, k, v, z = torch.split(qkvz, [dk, dk, r * dv, r * dv], dim=2)
    b, a = torch.split(ba, [r, r], dim=2)
    flat = torch.cat([q.reshape(t, -1), k.reshape(t, -1), v.reshape(t, -1), z.reshape(t, -1)], dim=1)
    return flat, torch.cat([b.reshape(t, nv), a.reshape(t, nv)], dim=1)


def main(d):
    m = json.load(open(os.path.join(d, "meta.json")))
    nk, nv, dk, dv, kk, T, eps = (m[x] for x in ("nk", "nv", "dk", "dv", "kernel", "num_tokens", "eps"))
    key_dim, value_dim = nk * dk, nv * dv
    conv_dim = 2 * key_dim + value_dim
    mixed = load(d, "mixed", (T, conv_dim))
    conv_out, conv_state = causal_conv_silu(mixed, load(d, "conv_weight", (conv_dim, kk)),
                                            load(d, "conv_state0", (kk - 1, conv_dim)))
    q = l2norm(conv_out[:, :key_dim].reshape(T, nk, dk)) * dk ** -0.5
    k = l2norm(conv_out[:, key_dim:2 * key_dim].reshape(T, nk, dk))
    v = conv_out[:, 2 * key_dim:].reshape(T, nv, dv)
    q = q.repeat_interleave(nv // nk, dim=1)   # value head j uses key head j // r
    k = k.repeat_interleave(nv // nk, dim=1)
    beta = torch.sigmoid(load(d, "b", (T, nv)))
    a = load(d, "a", (T, nv))
    g = -load(d, "a_log", (nv,)).exp() * F.softplus(a + load(d, "dt_bias", (nv,)))
    core, state = gated_delta_rule(q, k, v, g, beta, load(d, "state0", (nv, dk, dv)))
    y = gated_rmsnorm(core, load(d, "z", (T, nv, dv)), load(d, "norm_weight", (dv,)), eps)
    save(d, "core_out", core)
    save(d, "y", y.reshape(T, value_dim))
    save(d, "state", state)
    save(d, "conv_state", conv_state)
    flat, ba_flat = qwen3_next_ungroup(load(d, "qkvz_grouped", (T, conv_dim + value_dim)),
                                       load(d, "ba_grouped", (T, 2 * nv)), nk, nv, dk, dv)
    save(d, "qkvz_flat", flat)
    save(d, "ba_flat", ba_flat)


if __name__ == "__main__":
    torch.set_default_dtype(torch.float64)
    main(sys.argv[1])
