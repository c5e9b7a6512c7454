#!/usr/bin/env python3
"""PyTorch peer of `ember bench train`: the same GPT (RoPE, RMSNorm, grouped-query
attention under a causal document mask, SwiGLU, LM head tied to the embedding), the same
default configuration, AdamW and gradient clipping, trained on the same packed byte stream.
Prints one JSON row per mode (eager, then torch.compile'd) with tokens_per_s; `ember bench
train` runs it between its own repetitions. --dtype bfloat16 trains under bf16 autocast.
Needs PyTorch (pip install torch); not part of the tests.

  python3 bench/peers/gpt_torch.py [--threads 2] [--steps 30] [--attention sdpa|flex]
      [--loss fused|unfused] [--modes eager,compile] [--dtype float32|bfloat16]
"""
import argparse
import json
import math
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Config:
    vocab_size = 256
    dim = 192
    n_layers = 4
    n_heads = 6
    n_kv_heads = 2
    hidden_dim = 512
    seq_len = 128
    batch_size = 16
    rope_theta = 10000.0
    norm_eps = 1e-5


def rope_tables(c):
    hd = c.dim // c.n_heads
    inv_freq = c.rope_theta ** (torch.arange(0, hd // 2, dtype=torch.float64) * (-2.0 / hd))
    angles = torch.outer(torch.arange(c.seq_len, dtype=torch.float64), inv_freq)
    return angles.cos().float(), angles.sin().float()


def apply_rope(x, cos, sin):
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


class Attention(nn.Module):
    def __init__(self, c, attention):
        super().__init__()
        self.c, self.hd, self.attention = c, c.dim // c.n_heads, attention
        self.wq = nn.Linear(c.dim, c.n_heads * self.hd, bias=False)
        self.wk = nn.Linear(c.dim, c.n_kv_heads * self.hd, bias=False)
        self.wv = nn.Linear(c.dim, c.n_kv_heads * self.hd, bias=False)
        self.wo = nn.Linear(c.n_heads * self.hd, c.dim, bias=False)

    def forward(self, x, cos, sin, mask):
        B, T, _ = x.shape
        c = self.c
        q = apply_rope(self.wq(x).view(B, T, c.n_heads, self.hd).transpose(1, 2), cos, sin)
        k = apply_rope(self.wk(x).view(B, T, c.n_kv_heads, self.hd).transpose(1, 2), cos, sin)
        v = self.wv(x).view(B, T, c.n_kv_heads, self.hd).transpose(1, 2)
        if self.attention == "flex":
            from torch.nn.attention.flex_attention import flex_attention
            out = flex_attention(q, k, v, block_mask=mask, enable_gqa=True)
        else:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
        return self.wo(out.transpose(1, 2).reshape(B, T, -1))


class FeedForward(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.w1 = nn.Linear(c.dim, c.hidden_dim, bias=False)
        self.w2 = nn.Linear(c.hidden_dim, c.dim, bias=False)
        self.w3 = nn.Linear(c.dim, c.hidden_dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    def __init__(self, c, attention):
        super().__init__()
        self.attention = Attention(c, attention)
        self.feed_forward = FeedForward(c)
        self.attention_norm = nn.RMSNorm(c.dim, eps=c.norm_eps)
        self.ffn_norm = nn.RMSNorm(c.dim, eps=c.norm_eps)

    def forward(self, x, cos, sin, mask):
        h = x + self.attention(self.attention_norm(x), cos, sin, mask)
        return h + self.feed_forward(self.ffn_norm(h))


class GPT(nn.Module):
    def __init__(self, c, attention, fused_head):
        super().__init__()
        self.tok_embeddings = nn.Embedding(c.vocab_size, c.dim)
        nn.init.normal_(self.tok_embeddings.weight, 0, 0.02)
        self.layers = nn.ModuleList(Block(c, attention) for _ in range(c.n_layers))
        self.norm = nn.RMSNorm(c.dim, eps=c.norm_eps)
        cos, sin = rope_tables(c)
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)
        self.fused_head = fused_head

    def loss(self, tokens, targets, mask):
        x = self.tok_embeddings(tokens)
        for layer in self.layers:
            x = layer(x, self.rope_cos, self.rope_sin, mask)
        h = self.norm(x).reshape(-1, x.shape[-1])
        if self.fused_head:
            return F.linear_cross_entropy(h, self.tok_embeddings.weight, targets.reshape(-1))
        return F.cross_entropy(F.linear(h, self.tok_embeddings.weight), targets.reshape(-1))


def corpus_bytes(path):
    files = [path] if os.path.isfile(path) else sorted(
        os.path.join(path, f) for f in os.listdir(path) if os.path.isfile(os.path.join(path, f)))
    tokens, doc_ids, doc = [], [], 0
    for name in files:
        with open(name, "rb") as f:
            for entry in f.read().split(b"\n%\n"):
                entry = entry.strip(b"\n") + b"\n"
                tokens.extend(entry)
                doc_ids.extend([doc] * len(entry))
                doc += 1
    return torch.tensor(tokens, dtype=torch.int64), torch.tensor(doc_ids, dtype=torch.int32)


def document_mask(doc_ids, attention):
    # doc_ids [B, T] -> causal same-document mask.
    B, T = doc_ids.shape
    if attention == "flex":
        from torch.nn.attention.flex_attention import create_block_mask

        def mask_mod(b, h, q, kv):
            return (q >= kv) & (doc_ids[b, q] == doc_ids[b, kv])
        return create_block_mask(mask_mod, B, None, T, T, device="cpu", BLOCK_SIZE=64)
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    return (causal & (doc_ids[:, :, None] == doc_ids[:, None, :]))[:, None]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup-steps", type=int, default=3)
    parser.add_argument("--attention", choices=["sdpa", "flex"], default="sdpa")
    parser.add_argument("--loss", choices=["fused", "unfused"], default="fused",
                        help="F.linear_cross_entropy (PyTorch >= 2.13) or F.linear + F.cross_entropy")
    parser.add_argument("--data", default="/usr/share/games/fortunes")
    parser.add_argument("--modes", default="eager", help="comma-separated: eager, compile (torch.compile)")
    parser.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32",
                        help="bfloat16: forward and backward under torch.autocast('cpu', torch.bfloat16)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(1337)
    c = Config()
    tokens, doc_ids = corpus_bytes(args.data)
    fused_head = args.loss == "fused" and hasattr(F, "linear_cross_entropy")
    model = GPT(c, args.attention, fused_head)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                                  lr=2e-3, betas=(0.9, 0.95))
    generator = torch.Generator().manual_seed(1)

    def loss_of(model_loss, index, mask):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.dtype == "bfloat16"):
            return model_loss(tokens[index], tokens[index + 1], mask)

    def run(mode):
        model_loss = torch.compile(model.loss) if mode == "compile" else model.loss

        def step():
            starts = torch.randint(0, len(tokens) - c.seq_len - 1, (c.batch_size,), generator=generator)
            index = starts[:, None] + torch.arange(c.seq_len)[None]
            mask = document_mask(doc_ids[index], args.attention)
            loss = loss_of(model_loss, index, mask)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            return loss.item()

        for _ in range(args.warmup_steps):
            step()
        # Median step time, as `ember bench train` reports.
        times = []
        for _ in range(args.steps):
            begin = time.perf_counter()
            loss = step()
            times.append(time.perf_counter() - begin)
        seconds = sorted(times)[len(times) // 2]
        print(json.dumps({
            "name": f"torch_{mode}_{args.attention}_{'fusedlce' if fused_head else 'unfused'}_d{c.dim}_l{c.n_layers}"
                    f"_h{c.n_heads}_kv{c.n_kv_heads}_f{c.hidden_dim}_t{c.seq_len}_b{c.batch_size}"
                    f"_{'bf16' if args.dtype == 'bfloat16' else 'f32'}_threads{args.threads}",
            "mode": mode, "dtype": args.dtype, "torch": torch.__version__,
            "tokens_per_s": c.batch_size * c.seq_len / seconds, "step_ms": 1000 * seconds, "loss": loss}), flush=True)

    for mode in args.modes.split(","):
        if mode not in ("eager", "compile"):
            parser.error(f"unknown mode {mode!r}")
        run(mode)


if __name__ == "__main__":
    main()
