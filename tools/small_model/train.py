#!/usr/bin/env python3
"""Trains pagellm's small model: a Qwen3-architecture checkpoint on Python's documentation.

    /usr/bin/python3 tools/small_model/train.py --corpus DIR --work DIR --out DIR

CPU only (Debian's python3-torch), fixed seeds, resumable: every --save-every steps the
model, optimizer and step go to WORK/checkpoint.pt; a new run with the same arguments
continues from there and gives the same weights as an uninterrupted run (the batch of step
s depends only on the seed and s). At the end the weights are written to OUT as the
compact checkpoint that `pagellm unpack-model` expands into a Hugging Face Qwen3 directory.

Compact vocabulary, exactly. Only the ids that occur at least --min-count times in the
training text (~23k) get an embedding row of their own; every other id of the 151,936-row
vocabulary (never seen, or too rare to learn) shares one "rare" row. The exported
checkpoint is the full Qwen3 layout with that row copied into each of those ids, so its
next-token distribution over 151,936 ids is exactly the one trained here: a softmax over
[own rows + the shared row, whose logit counts log(num_rare) times] is the full softmax,
and the loss of a rare target is its true -log p in the full model. (An id that is never a
target would also get the same gradient as every other such row, so this is what training
the full vocabulary would do for them too.) Training pushes the shared logit far down:
that is what makes tokens absent from the training text carry negligible probability.
"""
import argparse
import json
import math
import os
import re
import struct
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # torch threads the batch; nested BLAS threads thrash
import numpy as np
import torch
import torch.nn.functional as F

VOCAB_SIZE = 151936  # Qwen3's embedding rows (151,669 tokens + padding)
END_OF_TEXT = 151643

MODEL = {
    "hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
    "head_dim": 64, "intermediate_size": 768, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
    "max_position_embeddings": 2048,
}


class Qwen3Small(torch.nn.Module):
    """Qwen3's decoder (q/k RMS norms, GQA, SwiGLU, tied embeddings) with the compact
    vocabulary described above. Parameter names follow Hugging Face's Qwen3 layout."""

    def __init__(self, num_rows, cfg):
        super().__init__()
        h, nh, nkv, hd, inter = (cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"],
                                 cfg["head_dim"], cfg["intermediate_size"])
        self.cfg = cfg
        self.embed = torch.nn.Parameter(torch.randn(num_rows, h) * 0.02)
        self.layers = torch.nn.ModuleList()
        for _ in range(cfg["num_hidden_layers"]):
            layer = torch.nn.Module()
            layer.q_proj = torch.nn.Linear(h, nh * hd, bias=False)
            layer.k_proj = torch.nn.Linear(h, nkv * hd, bias=False)
            layer.v_proj = torch.nn.Linear(h, nkv * hd, bias=False)
            layer.o_proj = torch.nn.Linear(nh * hd, h, bias=False)
            layer.q_norm = torch.nn.Parameter(torch.ones(hd))
            layer.k_norm = torch.nn.Parameter(torch.ones(hd))
            layer.gate_proj = torch.nn.Linear(h, inter, bias=False)
            layer.up_proj = torch.nn.Linear(h, inter, bias=False)
            layer.down_proj = torch.nn.Linear(inter, h, bias=False)
            layer.input_layernorm = torch.nn.Parameter(torch.ones(h))
            layer.post_attention_layernorm = torch.nn.Parameter(torch.ones(h))
            for lin in (layer.q_proj, layer.k_proj, layer.v_proj, layer.gate_proj, layer.up_proj):
                torch.nn.init.normal_(lin.weight, std=0.02)
            for lin in (layer.o_proj, layer.down_proj):  # residual branches scaled as GPT-2 does
                torch.nn.init.normal_(lin.weight, std=0.02 / math.sqrt(2 * cfg["num_hidden_layers"]))
            self.layers.append(layer)
        self.norm = torch.nn.Parameter(torch.ones(h))
        inv = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
        self.register_buffer("inv_freq", inv.float(), persistent=False)

    def rms(self, x, w):
        eps = self.cfg["rms_norm_eps"]
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w

    def rope(self, x, pos):  # x [B, heads, T, hd]; rotate_half (neox) layout as Hugging Face Qwen3
        freqs = pos[:, None].float() * self.inv_freq[None, :]
        emb = torch.cat([freqs, freqs], dim=-1)
        cos, sin = emb.cos(), emb.sin()
        x1, x2 = x.chunk(2, dim=-1)
        return x * cos + torch.cat([-x2, x1], dim=-1) * sin

    def hidden(self, rows):  # rows [B, T] compact row indices -> [B, T, H]
        cfg = self.cfg
        B, T = rows.shape
        nh, nkv, hd = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
        pos = torch.arange(T)
        mask = torch.full((T, T), float("-inf")).triu(1)
        x = F.embedding(rows, self.embed)
        for L in self.layers:
            h = self.rms(x, L.input_layernorm)
            q = self.rms(L.q_proj(h).view(B, T, nh, hd), L.q_norm).transpose(1, 2)
            k = self.rms(L.k_proj(h).view(B, T, nkv, hd), L.k_norm).transpose(1, 2)
            v = L.v_proj(h).view(B, T, nkv, hd).transpose(1, 2)
            q, k = self.rope(q, pos), self.rope(k, pos)
            k = k.repeat_interleave(nh // nkv, dim=1)
            v = v.repeat_interleave(nh // nkv, dim=1)
            att = (q @ k.transpose(-1, -2)) / math.sqrt(hd) + mask
            o = (att.softmax(-1) @ v).transpose(1, 2).reshape(B, T, nh * hd)
            x = x + L.o_proj(o)
            h = self.rms(x, L.post_attention_layernorm)
            x = x + L.down_proj(F.silu(L.gate_proj(h)) * L.up_proj(h))
        return self.rms(x, self.norm)

    def head(self, h, log_num_unseen):
        """[..., num_rows]: the last column is the shared unseen row, its logit raised by
        log(num_unseen) so that a softmax over these columns equals the full-vocabulary one."""
        z = h @ self.embed.t()
        return torch.cat([z[..., :-1], z[..., -1:] + log_num_unseen], dim=-1)

    def logits(self, rows, log_num_unseen):
        return self.head(self.hidden(rows), log_num_unseen)


def load_tokens(path):
    return np.fromfile(path, dtype=np.uint32).astype(np.int64)


def batch_starts(step, seed, num_tokens, batch, seq_len):
    rng = np.random.RandomState((seed * 1000003 + step) % (2 ** 32))
    return rng.randint(0, num_tokens - seq_len - 1, size=batch)


IM_START, IM_END, ASSISTANT, NEWLINE = 151644, 151645, 77091, 198


def chat_documents(train, row_of):
    """Phase 2's chat data: the chat documents (those opening with <|im_start|>), each
    ended by <|endoftext|>, concatenated as compact rows; the offset where each starts; and
    a weight per target that is 1 inside an assistant turn (after `<|im_start|>assistant\n`,
    up to its <|im_end|>) and 0 elsewhere: the model learns to answer the question it is
    given, not to write questions."""
    ends = np.nonzero(train == END_OF_TEXT)[0]
    starts = np.concatenate([[0], ends[:-1] + 1])
    docs = [train[a:b + 1] for a, b in zip(starts, ends) if b > a and train[a] == IM_START]
    doc_starts = np.cumsum([0] + [len(d) for d in docs[:-1]])
    tokens = np.concatenate(docs)
    in_answer = np.zeros(len(tokens), dtype=np.float32)
    inside = False
    for i in range(3, len(tokens)):
        if tokens[i - 3] == IM_START and tokens[i - 2] == ASSISTANT and tokens[i - 1] == NEWLINE:
            inside = True
        in_answer[i] = 1.0 if inside else 0.0
        if tokens[i] == IM_END:
            inside = False
    return row_of[tokens], in_answer, doc_starts


# The modules most programs use: phase 2 shows their questions more often, so that the
# model learns what their functions do rather than only that they exist.
CORE_MODULES = ("os os.path sys json re collections itertools functools math string pathlib subprocess shutil "
                "datetime time random typing argparse logging csv io glob tempfile copy").split()
QUESTION = re.compile(r"<\|im_start\|>user\n(.*?)<\|im_end\|>", re.S)


def is_core_question(text):
    """A chat document asking about a core module or one of its names, or a glossary term
    (the questions that name no API)."""
    names = re.findall(r"`([\w.]+)`", QUESTION.search(text).group(1))
    if not names:
        return True
    parts = names[0].split(".")
    return any(".".join(parts[:i]) in CORE_MODULES for i in range(1, len(parts) + 1))


def core_stream(corpus_dir, chat_rows, chat_weight, chat_starts):
    """The chat documents about core modules (train.jsonl's chat lines, in the order the
    token stream has them) concatenated: rows, answer weights, document starts."""
    texts = [d["text"] for d in map(json.loads, open(os.path.join(corpus_dir, "train.jsonl"), encoding="utf-8"))
             if d["kind"] == "chat"]
    assert len(texts) == len(chat_starts), (len(texts), len(chat_starts))
    ends = np.append(chat_starts[1:], len(chat_rows))
    picked = [i for i, t in enumerate(texts) if is_core_question(t)]
    rows = np.concatenate([chat_rows[chat_starts[i]:ends[i]] for i in picked])
    weight = np.concatenate([chat_weight[chat_starts[i]:ends[i]] for i in picked])
    starts = np.cumsum([0] + [ends[i] - chat_starts[i] for i in picked[:-1]])
    return rows, weight, starts


def phase2_batch(step, args, train_rows, chat, core):
    """Phase 2's batch of step `step` (a function of the seed and the step only): windows
    that open at the start of a chat document, so the question is always in view of its
    answer (the answer opens by naming what was asked: that copy is what phase 2 teaches),
    loss on the answers only; and --chat-fraction's complement of windows anywhere in the
    whole text, loss on every token, so the documentation is not forgotten."""
    rng = np.random.RandomState((args.seed * 7919 + step) % (2 ** 32))
    n_core = int(round(args.batch * args.core_fraction))
    n_chat = int(round(args.batch * args.chat_fraction)) - n_core
    rows, weights = [], []
    for (stream_rows, stream_weight, stream_starts), n in ((core, n_core), (chat, n_chat)):
        for d in rng.randint(0, len(stream_starts), size=n):
            s = min(stream_starts[d], len(stream_rows) - args.seq_len - 1)
            rows.append(stream_rows[s:s + args.seq_len + 1])
            weights.append(stream_weight[s + 1:s + args.seq_len + 1])
    for s in rng.randint(0, len(train_rows) - args.seq_len - 1, size=args.batch - n_core - n_chat):
        rows.append(train_rows[s:s + args.seq_len + 1])
        weights.append(np.ones(args.seq_len, dtype=np.float32))
    return torch.from_numpy(np.stack(rows)), torch.from_numpy(np.stack(weights))


def lr_at(step, args):
    if step >= args.steps:  # phase 2: cosine from lr/2 to lr/20 over the chat steps
        t = (step - args.steps) / max(1, args.chat_steps)
        return args.lr / 2 * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))
    if step < args.warmup:
        return args.lr * (step + 1) / args.warmup
    t = (step - args.warmup) / max(1, args.steps - args.warmup)
    return args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))


def progress(step, total, loss, tok_s, start):
    done = step / total
    bar = "#" * int(30 * done) + "-" * (30 - int(30 * done))
    eta = (time.time() - start) / max(done, 1e-9) * (1 - done)
    sys.stderr.write(f"\rtrain [{bar}] {step}/{total} loss {loss:.3f} {tok_s:.0f} tok/s eta {eta / 60:.1f} min ")
    sys.stderr.flush()


def evaluate(model, tokens, row_of, seq_len, log_num_unseen, max_windows=64):
    """Mean negative log-likelihood (nats/token) over non-overlapping windows of heldout."""
    model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for w in range(min(max_windows, (len(tokens) - 1) // seq_len)):
            chunk = torch.from_numpy(row_of[tokens[w * seq_len:(w + 1) * seq_len + 1]])
            z = model.logits(chunk[None, :-1], log_num_unseen)
            total += F.cross_entropy(z[0], chunk[1:], reduction="sum").item()
            count += seq_len
    model.train()
    return total / count


THINK_END = 151668  # </think>


def answer_opening_accuracy(model, tokens, row_of, log_num_unseen, span=8):
    """Share of the first `span` answer tokens of the held-out chat documents that the
    model predicts right (greedy, given the conversation so far). An answer opens with the
    name it was asked about, so this measures whether the model answers the question asked
    rather than some other one."""
    ends = np.nonzero(tokens == END_OF_TEXT)[0]
    right = total = 0
    model.eval()
    with torch.no_grad():
        for a, b in zip(np.concatenate([[0], ends[:-1] + 1]), ends):
            doc = tokens[a:b + 1]
            think = np.nonzero(doc == THINK_END)[0]
            if doc[0] != IM_START or len(think) == 0:
                continue
            rows = torch.from_numpy(row_of[doc])
            first = think[-1] + 2  # after "</think>" and "\n\n"
            last = min(first + span, len(doc) - 1)
            pred = model.logits(rows[None, :last - 1], log_num_unseen)[0, first - 1:].argmax(-1)
            right += int((pred == rows[first:last]).sum())
            total += last - first
    model.train()
    return right / max(1, total)


def write_safetensors(path, tensors, metadata):
    """tensors: name -> (dtype name, shape, bytes)."""
    header, offset = {"__metadata__": metadata}, 0
    for name, (dtype, shape, data) in tensors.items():
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    blob = json.dumps(header, separators=(",", ":")).encode()
    blob += b" " * (-len(blob) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(blob)))
        f.write(blob)
        for _, (_, _, data) in tensors.items():
            f.write(data)


def bf16_bytes(t):
    return t.detach().contiguous().to(torch.bfloat16).view(torch.int16).numpy().tobytes()


def export_compact(model, seen_ids, out_dir, stats):
    """OUT/compact.safetensors: every weight in bf16 under its Hugging Face name, the
    embedding as `model.embed_tokens.weight.compact` [num_seen + 1, H] (last row: the shared
    unseen row) with `model.embed_tokens.weight.rows` (int32 token id of each seen row)."""
    os.makedirs(out_dir, exist_ok=True)
    t = {"model.embed_tokens.weight.compact": ("BF16", model.embed.shape, bf16_bytes(model.embed)),
         "model.embed_tokens.weight.rows": ("I32", (len(seen_ids),), seen_ids.astype("<i4").tobytes()),
         "model.norm.weight": ("BF16", model.norm.shape, bf16_bytes(model.norm))}
    for i, L in enumerate(model.layers):
        p = f"model.layers.{i}."
        for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
            w = getattr(L, name).weight
            t[p + f"self_attn.{name}.weight"] = ("BF16", w.shape, bf16_bytes(w))
        for name in ("q_norm", "k_norm"):
            t[p + f"self_attn.{name}.weight"] = ("BF16", getattr(L, name).shape, bf16_bytes(getattr(L, name)))
        for name in ("gate_proj", "up_proj", "down_proj"):
            w = getattr(L, name).weight
            t[p + f"mlp.{name}.weight"] = ("BF16", w.shape, bf16_bytes(w))
        for name in ("input_layernorm", "post_attention_layernorm"):
            t[p + f"{name}.weight"] = ("BF16", getattr(L, name).shape, bf16_bytes(getattr(L, name)))
    write_safetensors(os.path.join(out_dir, "compact.safetensors"), t,
                      {"format": "pt", "pagellm_compact_vocab_size": str(VOCAB_SIZE)})
    config = {
        "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "attention_bias": False,
        "attention_dropout": 0.0, "bos_token_id": 151643, "eos_token_id": 151645, "hidden_act": "silu",
        "initializer_range": 0.02, "rope_scaling": None, "sliding_window": None, "use_sliding_window": False,
        "max_window_layers": MODEL["num_hidden_layers"], "tie_word_embeddings": True, "torch_dtype": "bfloat16",
        "use_cache": True, "vocab_size": VOCAB_SIZE, **MODEL,
    }
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    gen = {"bos_token_id": 151643, "eos_token_id": [151645, 151643], "pad_token_id": 151643, "do_sample": True,
           "temperature": 0.7, "top_p": 0.8, "top_k": 20, "repetition_penalty": 1.05}
    with open(os.path.join(out_dir, "generation_config.json"), "w") as f:
        json.dump(gen, f, indent=2)
        f.write("\n")
    with open(os.path.join(out_dir, "training.json"), "w") as f:
        json.dump(stats, f, indent=2)
        f.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", required=True, help="folder with train.u32 and heldout.u32")
    ap.add_argument("--work", required=True, help="checkpoint folder (resume from it)")
    ap.add_argument("--out", required=True, help="where the compact checkpoint goes")
    ap.add_argument("--steps", type=int, default=800, help="steps over all of the text")
    # Phase 1 alone (800 steps) wrote fluent documentation but answered about other APIs
    # than asked (the answer's opening name was right 40% of the time); 250 steps on chat
    # answers alone taught some of that copy (53%) but forgot the prose (perplexity 65 ->
    # 108). Phase 2 mixes both (see phase2_batch).
    ap.add_argument("--chat-steps", type=int, default=1000,
                    help="then steps mixing chat answers and the whole text (phase 2)")
    ap.add_argument("--chat-fraction", type=float, default=0.75,
                    help="phase 2: share of each batch that is chat windows, loss on answers only")
    ap.add_argument("--core-fraction", type=float, default=0.5,
                    help="phase 2: share of each batch that is chat windows about the core modules")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq-len", type=int, default=256)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--warmup", type=int, default=60)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--min-count", type=int, default=3, help="ids seen fewer times share the rare row")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--save-every", type=int, default=50)
    ap.add_argument("--eval-every", type=int, default=250)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)

    train = load_tokens(os.path.join(args.corpus, "train.u32"))
    heldout = load_tokens(os.path.join(args.corpus, "heldout.u32"))
    counts = np.bincount(train, minlength=VOCAB_SIZE)
    seen_ids = np.nonzero(counts >= args.min_count)[0]
    row_of = np.full(VOCAB_SIZE, len(seen_ids), dtype=np.int64)  # unseen ids -> the shared row
    row_of[seen_ids] = np.arange(len(seen_ids))
    log_num_unseen = math.log(VOCAB_SIZE - len(seen_ids))
    train_rows = row_of[train]
    chat = chat_documents(train, row_of)
    core = core_stream(args.corpus, *chat)
    print(f"corpus: {len(train)} training tokens, {len(heldout)} heldout, {len(seen_ids)} ids with a row of their "
          f"own (>= {args.min_count} occurrences, {counts[seen_ids].sum() / len(train):.2%} of the text), +1 "
          f"shared row for the other {VOCAB_SIZE - len(seen_ids)}", flush=True)

    model = Qwen3Small(len(seen_ids) + 1, MODEL)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1)
    os.makedirs(args.work, exist_ok=True)
    ckpt_path = os.path.join(args.work, "checkpoint.pt")
    step, elapsed, history = 0, 0.0, []
    if os.path.exists(ckpt_path):
        ck = torch.load(ckpt_path)
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
        step, elapsed, history = ck["step"], ck["elapsed"], ck["history"]
        print(f"resumed from {ckpt_path} at step {step}", flush=True)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"model: {n_params / 1e6:.2f} M parameters ({model.embed.numel() / 1e6:.2f} M in the compact "
          f"embedding), {args.steps} + {args.chat_steps} (chat answers) steps of {args.batch} x {args.seq_len} "
          f"tokens", flush=True)
    total_steps = args.steps + args.chat_steps

    start, loss_avg = time.time() - elapsed, None
    while step < total_steps:
        t0 = time.time()
        if step < args.steps:
            starts = batch_starts(step, args.seed, len(train_rows), args.batch, args.seq_len)
            chunk = torch.from_numpy(np.stack([train_rows[s:s + args.seq_len + 1] for s in starts]))
            weight = None
        else:
            chunk, weight = phase2_batch(step, args, train_rows, chat, core)
        for g in opt.param_groups:
            g["lr"] = lr_at(step, args)
        if weight is None:
            z = model.logits(chunk[:, :-1], log_num_unseen)
            loss = F.cross_entropy(z.reshape(-1, z.shape[-1]), chunk[:, 1:].reshape(-1), reduction="none").mean()
        else:
            # Logits only where the loss looks: the 23k-row head is most of a step's work.
            keep = weight.reshape(-1) > 0
            h = model.hidden(chunk[:, :-1]).reshape(-1, model.cfg["hidden_size"])[keep]
            loss = F.cross_entropy(model.head(h, log_num_unseen), chunk[:, 1:].reshape(-1)[keep])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        loss_avg = loss.item() if loss_avg is None else 0.95 * loss_avg + 0.05 * loss.item()
        progress(step, total_steps, loss_avg, args.batch * args.seq_len / (time.time() - t0), start)
        if step % args.eval_every == 0 or step in (args.steps, total_steps):
            nll = evaluate(model, heldout, row_of, args.seq_len, log_num_unseen)
            opening = answer_opening_accuracy(model, heldout, row_of, log_num_unseen)
            history.append({"step": step, "train_loss": loss_avg, "heldout_nll": nll,
                            "answer_opening_accuracy": opening})
            sys.stderr.write(f"\nstep {step}: heldout perplexity {math.exp(nll):.2f}, answer openings "
                             f"{opening:.1%} right\n")
        if step % args.save_every == 0 or step in (args.steps, total_steps):
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step,
                        "elapsed": time.time() - start, "history": history}, ckpt_path + ".tmp")
            os.replace(ckpt_path + ".tmp", ckpt_path)
    sys.stderr.write("\n")
    stats = {"steps": args.steps, "chat_steps": args.chat_steps, "chat_fraction": args.chat_fraction,
             "core_fraction": args.core_fraction, "core_documents": int(len(core[2])), "batch": args.batch, "seq_len": args.seq_len, "lr": args.lr, "seed": args.seed,
             "training_tokens_seen": total_steps * args.batch * args.seq_len, "corpus_tokens": int(len(train)),
             "distinct_ids_seen": int(len(seen_ids)), "parameters_compact": int(n_params),
             "train_seconds": round(time.time() - start, 1), "threads": args.threads, "history": history}
    export_compact(model, seen_ids, args.out, stats)
    print(f"wrote {args.out}: heldout perplexity {math.exp(history[-1]['heldout_nll']):.2f} after "
          f"{stats['train_seconds'] / 60:.1f} min", flush=True)


if __name__ == "__main__":
    main()
