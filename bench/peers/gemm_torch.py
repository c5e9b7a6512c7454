#!/usr/bin/env python3
"""PyTorch peer of `ember bench gemm`: torch.matmul on the bench's products (op(A) and op(B) as
transposed views where the row says so), median of --reps runs after --warm-up-ms of warm-up
runs (at least one), fewer where the first run took over 1/--reps of two seconds (PyTorch's
float16 matmul on CPUs without AVX512-FP16 runs below 1 GFLOP/s). Prints one JSON row per --product. Needs PyTorch; not part
of the tests.

  python3 bench/peers/gemm_torch.py --product matmul_f32_2048x2048x2048,float32,2048,2048,2048,0,0 [--product ...]
  (name,dtype,m,k,n,trans_a,trans_b)
"""
import argparse
import json
import os
import time

import torch

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--product", action="append", required=True, help="name,dtype,m,k,n,trans_a,trans_b")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--reps", type=int, default=9)
    parser.add_argument("--warm-up-ms", type=float, default=20.0, help="products run before the timed ones")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    for product in args.product:
        name, dtype_name, m, k, n, trans_a, trans_b = product.split(",")
        m, k, n, dtype = int(m), int(k), int(n), DTYPES[dtype_name]
        a = torch.randn(k, m).to(dtype).mT if trans_a == "1" else torch.randn(m, k).to(dtype)
        b = torch.randn(n, k).to(dtype).mT if trans_b == "1" else torch.randn(k, n).to(dtype)
        begin = time.perf_counter()
        torch.matmul(a, b)
        reps = max(1, min(args.reps, int(2.0 / (time.perf_counter() - begin))))
        while time.perf_counter() - begin < args.warm_up_ms / 1e3:  # --warm-up-ms in all
            torch.matmul(a, b)
        times = []
        for _ in range(reps):
            begin = time.perf_counter()
            torch.matmul(a, b)
            times.append(time.perf_counter() - begin)
        seconds = sorted(times)[len(times) // 2]
        print(json.dumps({"name": name, "torch": torch.__version__, "gflops": 2.0 * m * k * n / seconds / 1e9}),
              flush=True)


if __name__ == "__main__":
    main()
