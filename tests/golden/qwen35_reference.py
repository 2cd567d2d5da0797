#!/usr/bin/python3
"""Float64 PyTorch reference for Qwen3-MoE, Qwen3-Next and Qwen3.5 (dense and MoE),
written from docs/qwen-architectures.md (§2.1 zero-centred norms, §2.2 partial NeoX
RoPE, §2.5 MoE, §3.3-3.5, §4 Gated DeltaNet), independent of pagellm's C++ code. The
GDN pieces (conv, l2norm, recurrent delta rule, gated norm, Qwen3-Next un-grouping) come
from tests/golden/gdn_reference.py.

Three modes:
  qwen35_reference.py ref MODEL_DIR --ids 1,2,3 [--out logits.npy] [--greedy N] [--mtp-out mtp.npy]
      prints {"greedy": [...]} and writes prompt logits [T, V] (float64 .npy); --mtp-out
      writes the MTP head's logits [T-1, V] over the prompt (see Model.mtp).
  qwen35_reference.py compare --pagellm BIN --hybrid-tool BIN --work DIR --case NAME
      makes the dummy model (f32 weights), runs pagellm (qwen3_moe: `pagellm logits` /
      `pagellm generate`; hybrid: the hybrid_logits test driver, since the engine does not
      schedule hybrid models yet), compares and exits 1 on failure.
  qwen35_reference.py mtp --hybrid-tool BIN (--model DIR [--ids 1,2,3] | --case NAME --pagellm BIN --work DIR)
      the multi-token-prediction head: runs `hybrid_logits ... --mtp` (prefill, then the
      MTP over rows 0..T-2 in one shot and in chunks) on a model directory or a fresh
      dummy of preset NAME (f32 weights, with the mtp.* tensors), compares its prompt and
      MTP logits with the reference's and exits 1 on failure.
Tolerances (f32 weights, f32 activations and KV, float64 reference):
  logits at every prompt position: max |d| / max|logit| <= 1e-4;
  MTP logits at every row: max |d| / max|logit| <= 5e-5 (MAX_MTP_REL_ERR);
  32 greedy tokens identical to the reference's greedy decode.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from logits import LogitStats  # noqa: E402  (tests/support/logits.py)
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gdn_reference import causal_conv_silu, gated_delta_rule, gated_rmsnorm, l2norm, qwen3_next_ungroup  # noqa: E402
from qwen_reference import load_weights  # noqa: E402

MAX_REL_ERR = 1e-4
# MTP logits, same metric: pagellm's head reads its own f32 prefill hidden states, the
# reference's its float64 ones, so the bound covers the prefill's f32 error plus one more
# f32 layer, fc and lm_head. Measured <= 6.0e-6 on the three tiny presets, AVX-512 and AVX2
# (prompt logits <= 1.0e-5 there): 5e-5 leaves ~8x for other summation orders, while
# a semantic slip is far above it (swapped concat: 1.9; hidden before the final norm: 0.18).
MAX_MTP_REL_ERR = 5e-5
GREEDY_TOKENS = 32


def load_config(model_dir):
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    text = cfg.get("text_config")
    if text:
        merged = dict(cfg)
        merged.update({k: v for k, v in text.items() if k != "model_type"})
        if "tie_word_embeddings" in cfg:
            merged["tie_word_embeddings"] = cfg["tie_word_embeddings"]
        cfg = merged
    rp = cfg.get("rope_parameters") or {}
    cfg.setdefault("rope_theta", rp.get("rope_theta", 10000.0))
    cfg.setdefault("partial_rotary_factor", rp.get("partial_rotary_factor", 1.0))
    return cfg


class Model:
    def __init__(self, model_dir):
        self.cfg = c = load_config(model_dir)
        self.w = load_weights(model_dir)
        self.type = c["model_type"]
        self.hybrid = self.type in ("qwen3_next", "qwen3_5", "qwen3_5_moe")
        self.prefix = "model.language_model." if self.type in ("qwen3_5", "qwen3_5_moe") else "model."
        self.L = c["num_hidden_layers"]
        if self.hybrid:
            lt = c.get("layer_types")
            n = c.get("full_attention_interval", 4)
            self.full = [t == "full_attention" for t in lt] if lt else [(i + 1) % n == 0 for i in range(self.L)]
        else:
            self.full = [True] * self.L
        self.eps = c.get("rms_norm_eps", 1e-6)

    def W(self, name):
        return self.w[self.prefix + name]

    def norm(self, x, w):  # §2.1: zero-centred (Next / 3.5) uses 1 + w
        r = torch.rsqrt((x * x).mean(-1, keepdim=True) + self.eps)
        return x * r * ((1.0 + w) if self.hybrid else w)

    def rope(self, x, pos):
        hd = x.shape[-1]
        rot = int(hd * self.cfg["partial_rotary_factor"])
        inv = (1.0 / (self.cfg["rope_theta"] ** (torch.arange(0, rot, 2, dtype=torch.float64) / rot))).float()
        ang = (pos[:, None].float() * inv[None, :]).double()  # fp32 angles as HF
        cos, sin = torch.cos(ang)[:, None, :], torch.sin(ang)[:, None, :]
        half = rot // 2
        x1, x2, rest = x[..., :half], x[..., half:rot], x[..., rot:]
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin, rest], dim=-1)

    def attention(self, lp, x):  # lp: the layer's full name prefix ("model.layers.3.", "mtp.layers.0.")
        c, p = self.cfg, lp + "self_attn."
        T, nh, nkv, hd = x.shape[0], c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
        qg = x @ self.w[p + "q_proj.weight"].T
        if self.hybrid:  # per head [q | gate] (§3.4)
            qg = qg.view(T, nh, 2 * hd)
            q, gate = qg[..., :hd], qg[..., hd:].reshape(T, nh * hd)
        else:
            q, gate = qg.view(T, nh, hd), None
        k = (x @ self.w[p + "k_proj.weight"].T).view(T, nkv, hd)
        v = (x @ self.w[p + "v_proj.weight"].T).view(T, nkv, hd)
        q, k = self.norm(q, self.w[p + "q_norm.weight"]), self.norm(k, self.w[p + "k_norm.weight"])
        pos = torch.arange(T)
        q, k = self.rope(q, pos), self.rope(k, pos)
        rep = nh // nkv
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        s = torch.einsum("thd,shd->hts", q, k) / math.sqrt(hd)
        s = s.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), float("-inf"))
        out = torch.einsum("hts,shd->thd", torch.softmax(s, -1), v).reshape(T, nh * hd)
        if gate is not None:
            out = out * torch.sigmoid(gate)
        return out @ self.w[p + "o_proj.weight"].T

    def gdn(self, l, x):
        c, p = self.cfg, f"layers.{l}.linear_attn."
        T = x.shape[0]
        nk, nv, dk, dv = (c[k] for k in ("linear_num_key_heads", "linear_num_value_heads",
                                          "linear_key_head_dim", "linear_value_head_dim"))
        K = c.get("linear_conv_kernel_dim", 4)
        kd, vd = nk * dk, nv * dv
        if self.type == "qwen3_next":
            flat, ba = qwen3_next_ungroup(x @ self.W(p + "in_proj_qkvz.weight").T,
                                          x @ self.W(p + "in_proj_ba.weight").T, nk, nv, dk, dv)
            mixed, z, b, a = flat[:, :2 * kd + vd], flat[:, 2 * kd + vd:], ba[:, :nv], ba[:, nv:]
        else:
            mixed = x @ self.W(p + "in_proj_qkv.weight").T
            z = x @ self.W(p + "in_proj_z.weight").T
            b = x @ self.W(p + "in_proj_b.weight").T
            a = x @ self.W(p + "in_proj_a.weight").T
        conv_w = self.W(p + "conv1d.weight").reshape(2 * kd + vd, K)
        co, _ = causal_conv_silu(mixed, conv_w, torch.zeros(K - 1, 2 * kd + vd, dtype=torch.float64))
        q, k, v = co[:, :kd].view(T, nk, dk), co[:, kd:2 * kd].view(T, nk, dk), co[:, 2 * kd:].view(T, nv, dv)
        q, k = l2norm(q) * dk ** -0.5, l2norm(k)
        r = nv // nk
        q, k = q.repeat_interleave(r, dim=1), k.repeat_interleave(r, dim=1)  # value head j -> key head j // r
        beta = torch.sigmoid(b)
        g = -torch.exp(self.W(p + "A_log")) * F.softplus(a + self.W(p + "dt_bias"))
        o, _ = gated_delta_rule(q, k, v, g, beta, torch.zeros(nv, dk, dv, dtype=torch.float64))
        y = gated_rmsnorm(o, z.view(T, nv, dv), self.W(p + "norm.weight"), self.eps).reshape(T, vd)
        return y @ self.W(p + "out_proj.weight").T

    def swiglu(self, x, gate, up, down):
        return (F.silu(x @ gate.T) * (x @ up.T)) @ down.T

    def is_moe(self, l):  # vLLM's Qwen3NextDecoderLayer rule; MTP layer j is decoder layer num_hidden_layers + j
        c = self.cfg
        return c.get("num_experts", 0) > 0 and l not in c.get("mlp_only_layers", []) and \
            (l + 1) % c.get("decoder_sparse_step", 1) == 0

    def ffn(self, lp, l, x):  # lp: the layer's full name prefix; l: its decoder-layer index
        c, p = self.cfg, lp + "mlp."
        W = lambda name: self.w[p + name]  # noqa: E731
        if not self.is_moe(l):
            return self.swiglu(x, W("gate_proj.weight"), W("up_proj.weight"), W("down_proj.weight"))
        E, k, ie = c["num_experts"], c["num_experts_per_tok"], c["moe_intermediate_size"]
        probs = torch.softmax(x @ W("gate.weight").T, dim=-1)
        topw, topi = torch.topk(probs, k, dim=-1)
        if c.get("norm_topk_prob", True) or self.type == "qwen3_5_moe":
            topw = topw / topw.sum(-1, keepdim=True)
        y = torch.zeros_like(x)
        for t in range(x.shape[0]):
            for w_e, e in zip(topw[t].tolist(), topi[t].tolist()):
                if self.type == "qwen3_5_moe":
                    gu = W("experts.gate_up_proj")[e]
                    gate, up, down = gu[:ie], gu[ie:], W("experts.down_proj")[e]
                else:
                    gate, up, down = (W(f"experts.{e}.{n}_proj.weight") for n in ("gate", "up", "down"))
                y[t] += w_e * self.swiglu(x[t:t + 1], gate, up, down)[0]
        if c.get("shared_expert_intermediate_size", 0) > 0:
            shared = self.swiglu(x, W("shared_expert.gate_proj.weight"), W("shared_expert.up_proj.weight"),
                                 W("shared_expert.down_proj.weight"))
            y = y + torch.sigmoid(x @ W("shared_expert_gate.weight").T) * shared
        return y

    def hidden(self, ids):
        """Final-normed hidden state of every position [T, H]: what lm_head reads, and the MTP head's input."""
        h = self.W("embed_tokens.weight")[torch.tensor(ids)]
        for l in range(self.L):
            lp = self.prefix + f"layers.{l}."
            x = self.norm(h, self.w[lp + "input_layernorm.weight"])
            h = h + (self.attention(lp, x) if self.full[l] else self.gdn(l, x))
            h = h + self.ffn(lp, l, self.norm(h, self.w[lp + "post_attention_layernorm.weight"]))
        return self.norm(h, self.W("norm.weight"))

    def head(self, h):
        head = self.W("embed_tokens.weight") if self.cfg.get("tie_word_embeddings") else self.w["lm_head.weight"]
        return h @ head.T

    def forward(self, ids, last_only=False):
        h = self.hidden(ids)
        return self.head(h[-1:] if last_only else h)

    def mtp(self, ids, hidden):
        """Logits [T-1, V] of the multi-token-prediction head's first draft step over a prompt
        (vLLM's Qwen3NextMultiTokenPredictor; Qwen3.5 keeps its mtp.* at the top level too):
        row i reads token ids[i + 1] and hidden[i], the target's final-normed hidden state at
        position i, attends causally over rows 0..i at RoPE position i, predicts ids[i + 2].
          z = fc([norm_e(embed(ids[i + 1])); norm_h(hidden[i])])   (embedding first)
          z += attn(input_layernorm(z)); z += ffn(post_attention_layernorm(z))
          logits = lm_head(mtp.norm(z))                              (the model's lm_head)
        Step 0 uses mtp.layers.0 (vLLM: step % num_mtp_layers), built as decoder layer
        num_hidden_layers (its FFN is MoE in the MoE models)."""
        p = "mtp.layers.0."
        e = self.norm(self.W("embed_tokens.weight")[torch.tensor(ids[1:])], self.w["mtp.pre_fc_norm_embedding.weight"])
        g = self.norm(hidden[:len(ids) - 1], self.w["mtp.pre_fc_norm_hidden.weight"])
        z = torch.cat([e, g], dim=-1) @ self.w["mtp.fc.weight"].T
        z = z + self.attention(p, self.norm(z, self.w[p + "input_layernorm.weight"]))
        z = z + self.ffn(p, self.L, self.norm(z, self.w[p + "post_attention_layernorm.weight"]))
        return self.head(self.norm(z, self.w["mtp.norm.weight"]))


def reference(m, ids, out=None, greedy_n=0, mtp_out=None):
    """Prompt logits to `out` and MTP logits to `mtp_out` (.npy, when given); returns greedy_n
    greedy tokens."""
    with torch.no_grad():
        if out or mtp_out:
            hidden = m.hidden(ids)
        if out:
            np.save(out, m.head(hidden).numpy())
        if mtp_out:
            np.save(mtp_out, m.mtp(ids, hidden).numpy())
        seq, greedy = list(ids), []
        for _ in range(greedy_n):
            nxt = int(m.forward(seq, last_only=True)[0].argmax())
            greedy.append(nxt)
            seq.append(nxt)
    return greedy


def cmd_ref(args):
    greedy = reference(Model(args.model_dir), [int(t) for t in args.ids.split(",")], args.out, args.greedy, args.mtp_out)
    print(json.dumps({"greedy": greedy}))


def run(cmd):
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"command failed: {' '.join(cmd)}\n{res.stderr}")
    return res.stdout


def make_dummy(pagellm, model, case):
    run([pagellm, "make-dummy-model", "--preset", case, "--dtype", "f32", "--out", model, "--seed", "7"])


def golden_prompts():
    rng = np.random.default_rng(99)
    return [[151644, 872, 198, 9707, 11, 1879, 0, 151645, 198],
            [int(t) for t in rng.integers(0, 151643, size=90)]]  # > 64 tokens: two GDN chunks


def rel_error(ours, theirs):
    """max |d| / max |reference logit| (the file's logit tolerance metric) and top-1 agreement."""
    return np.abs(ours - theirs).max() / np.abs(theirs).max(), (ours.argmax(1) == theirs.argmax(1)).mean()


def cmd_compare(args):
    model = os.path.join(args.work, args.case)
    if not os.path.exists(os.path.join(model, "config.json")):
        make_dummy(args.pagellm, model, args.case)
    hybrid = load_config(model)["model_type"] != "qwen3_moe"
    prompts = golden_prompts()
    # The reference in this process (as cmd_mtp does), loaded once for every prompt: a `ref`
    # subprocess per prompt imported torch and read the weights again each time.
    m = Model(model)
    failures = []
    for i, ids in enumerate(prompts):
        ids_arg = ",".join(map(str, ids))
        ours_path, ref_path = (os.path.join(args.work, f"{args.case}-{i}-{s}.npy") for s in ("ours", "ref"))
        greedy_n = GREEDY_TOKENS if i == 0 else 0
        if hybrid:
            ours_greedy = json.loads(run([args.hybrid_tool, model, ids_arg, ours_path, str(greedy_n)]))["token_ids"]
        else:
            run([args.pagellm, "logits", "--model", model, "--prompt-ids", ids_arg, "--out", ours_path,
                 "--dtype", "float32", "--kv-cache-dtype", "float32"])
            ours_greedy = []
            if greedy_n:
                ours_greedy = json.loads(run([args.pagellm, "generate", "--model", model, "--prompt-ids", ids_arg,
                                              "--temperature", "0", "--ignore-eos", "--max-tokens", str(greedy_n),
                                              "--output-format", "json", "--dtype", "float32",
                                              "--kv-cache-dtype", "float32", "--kv-cache-memory", str(64 << 20),
                                              "--max-model-len", "2048"]))["token_ids"]
        ref = {"greedy": reference(m, ids, ref_path, greedy_n)}
        stats = LogitStats(ours_path, ref_path)
        if not os.environ.get("PAGELLM_KEEP_GOLDEN"):  # [T, vocab] float64: drop once read
            os.remove(ours_path)
            os.remove(ref_path)
        if not stats.same_shape:
            failures.append(f"#{i}: shape {stats.shapes[0]} vs {stats.shapes[1]}")
            continue
        scale, rel, margin, agree = stats.scale, stats.rel, stats.margin, stats.agree
        print(f"{args.case} prompt#{i} T={len(ids)}: max|d|/scale={rel:.2e} logit-scale={scale:.1f} "
              f"median-margin={np.median(margin):.2f} min-margin={margin.min():.3f} top1-agree={agree.mean():.3f}")
        if rel > MAX_REL_ERR:
            failures.append(f"#{i}: max relative logit error {rel:.2e} > {MAX_REL_ERR}")
        if greedy_n and ours_greedy != ref["greedy"]:
            failures.append(f"#{i}: greedy differs\n  ours {ours_greedy}\n  ref  {ref['greedy']}")
        elif greedy_n:
            print(f"{args.case} prompt#{i}: {greedy_n} greedy tokens identical")
    for f in failures:
        print("FAIL", args.case, f)
    sys.exit(1 if failures else 0)


def cmd_mtp(args):
    if args.model:
        model, name = args.model, os.path.basename(os.path.normpath(args.model))
        prompts = [[int(t) for t in args.ids.split(",")]] if args.ids else golden_prompts()
    else:
        if not (args.case and args.pagellm and args.work):
            sys.exit("mtp: give --model DIR or --case NAME --pagellm BIN --work DIR")
        model, name, prompts = os.path.join(args.work, args.case), args.case, golden_prompts()
        if not os.path.exists(os.path.join(model, "config.json")):
            make_dummy(args.pagellm, model, args.case)
    m = Model(model)
    if "mtp.fc.weight" not in m.w and not args.model:  # a dummy written before checkpoints shipped the head
        make_dummy(args.pagellm, model, args.case)
        m = Model(model)
    if "mtp.fc.weight" not in m.w:
        sys.exit(f"{model} has no MTP head (mtp.* tensors)")
    work = args.work or tempfile.mkdtemp(prefix="qwen35-mtp-")
    failures = []
    for i, ids in enumerate(prompts):
        paths = [os.path.join(work, f"{name}-mtp{i}-{s}.npy") for s in ("main", "mtp")]
        out = json.loads(run([args.hybrid_tool, model, ",".join(map(str, ids)), paths[0], "0", "--mtp", paths[1]]))
        ours_main, ours_mtp = (np.load(p).astype(np.float64) for p in paths)
        if not os.environ.get("PAGELLM_KEEP_GOLDEN"):
            for p in paths:
                os.remove(p)
        hidden = m.hidden(ids)  # the reference's own hidden states, not pagellm's
        ref_main, ref_mtp = m.head(hidden).numpy(), m.mtp(ids, hidden).numpy()
        if ours_main.shape != ref_main.shape or ours_mtp.shape != ref_mtp.shape:
            failures.append(f"#{i}: shapes {ours_main.shape} {ours_mtp.shape} vs {ref_main.shape} {ref_mtp.shape}")
            continue
        main_rel, _ = rel_error(ours_main, ref_main)
        mtp_rel, agree = rel_error(ours_mtp, ref_mtp)
        print(f"{name} prompt#{i} T={len(ids)}: prompt max|d|/scale={main_rel:.2e}  MTP rows={len(ids) - 1} "
              f"max|d|/scale={mtp_rel:.2e} logit-scale={np.abs(ref_mtp).max():.1f} top1-agree={agree:.3f} "
              f"chunked-vs-whole={out['mtp_chunked_rel_err']:.2e}")
        if main_rel > MAX_REL_ERR:
            failures.append(f"#{i}: max relative prompt logit error {main_rel:.2e} > {MAX_REL_ERR}")
        if mtp_rel > MAX_MTP_REL_ERR:
            failures.append(f"#{i}: max relative MTP logit error {mtp_rel:.2e} > {MAX_MTP_REL_ERR}")
    if not args.work and not os.environ.get("PAGELLM_KEEP_GOLDEN"):
        os.rmdir(work)
    for f in failures:
        print("FAIL", name, "mtp", f)
    sys.exit(1 if failures else 0)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="mode", required=True)
    r = sub.add_parser("ref")
    r.add_argument("model_dir")
    r.add_argument("--ids", required=True)
    r.add_argument("--out")
    r.add_argument("--greedy", type=int, default=0)
    r.add_argument("--mtp-out")
    c = sub.add_parser("compare")
    for flag in ("--pagellm", "--hybrid-tool", "--work", "--case"):
        c.add_argument(flag, required=True)
    t = sub.add_parser("mtp")
    t.add_argument("--hybrid-tool", required=True)
    for flag in ("--model", "--ids", "--case", "--pagellm", "--work"):
        t.add_argument(flag)
    args = ap.parse_args()
    torch.set_grad_enabled(False)
    {"ref": cmd_ref, "compare": cmd_compare, "mtp": cmd_mtp}[args.mode](args)


if __name__ == "__main__":
    main()
