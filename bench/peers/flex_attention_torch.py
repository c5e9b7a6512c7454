#!/usr/bin/env python3
"""PyTorch peer of `ember bench flex_attention`: torch.compile'd flex_attention forward with the
bench's causal sliding-window block mask (block size 128, head size 64, batch 1), median of
--reps runs after the compiling call, which is not timed. Each row compiles afresh
(dynamo reset), specialised to its shape. Prints one JSON row per --row. Needs PyTorch; not
part of the tests.

  python3 bench/peers/flex_attention_torch.py --heads 8 --row s8192_w256,8192,256,float32 [--row ...]
  (window 0: causal)
"""
import argparse
import json
import os
import time

import torch
from torch.nn.attention.flex_attention import create_block_mask, flex_attention


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--row", action="append", required=True, help="name,seq,window,float32|bfloat16")
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    for row in args.row:
        name, seq, window, dtype_name = row.split(",")
        seq, window = int(seq), int(window) or int(seq)
        dtype = torch.bfloat16 if dtype_name == "bfloat16" else torch.float32

        def sliding_window(b, h, q_idx, kv_idx):
            return (q_idx >= kv_idx) & (q_idx - kv_idx < window)

        torch._dynamo.reset()
        torch.manual_seed(0)
        block_mask = create_block_mask(sliding_window, 1, 1, seq, seq, device="cpu")
        q, k, v = (torch.randn(1, args.heads, seq, 64).to(dtype) for _ in range(3))
        compiled = torch.compile(flex_attention, dynamic=False)
        with torch.no_grad():
            compiled(q, k, v, block_mask=block_mask)  # compiles
            times = []
            for _ in range(args.reps):
                begin = time.perf_counter()
                compiled(q, k, v, block_mask=block_mask)
                times.append(time.perf_counter() - begin)
        print(json.dumps({"name": name, "dtype": dtype_name, "torch": torch.__version__,
                          "ms": 1000 * sorted(times)[len(times) // 2]}), flush=True)


if __name__ == "__main__":
    main()
