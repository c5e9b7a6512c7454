#!/usr/bin/env python3
"""PyTorch peer of `ember bench linear_cross_entropy`: F.linear_cross_entropy with its default
options=None (the reference path: PyTorch's fastest here, its chunked path LinearCrossEntropyOptions()
ran 4-9x slower on CPU) forward + backward on the bench's shapes, median of
--reps runs after one warm-up. Prints one JSON row per shape. Needs PyTorch; not part of
the tests.

  python3 bench/peers/linear_cross_entropy_torch.py --shape 4096,1024,128256 [--shape ...] [--dtype float32|bfloat16]
"""
import argparse
import json
import os
import time

import torch
import torch.nn.functional as F


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", action="append", required=True, help="tokens,hidden,classes")
    parser.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--reps", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    dtype = torch.bfloat16 if args.dtype == "bfloat16" else torch.float32
    for shape in args.shape:
        tokens, hidden, classes = (int(v) for v in shape.split(","))
        torch.manual_seed(0)
        x = torch.randn(tokens, hidden).to(dtype).requires_grad_()
        weight = (torch.randn(classes, hidden) * 0.02).to(dtype).requires_grad_()
        target = torch.randint(classes, (tokens,))

        def step():
            x.grad = None
            weight.grad = None
            F.linear_cross_entropy(x, weight, target).backward()

        step()
        times = []
        for _ in range(args.reps):
            begin = time.perf_counter()
            step()
            times.append(time.perf_counter() - begin)
        print(json.dumps({"tokens": tokens, "hidden": hidden, "classes": classes, "dtype": args.dtype,
                          "torch": torch.__version__, "ms": 1000 * sorted(times)[len(times) // 2]}), flush=True)


if __name__ == "__main__":
    main()
