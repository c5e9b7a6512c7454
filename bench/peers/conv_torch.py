#!/usr/bin/env python3
"""PyTorch peer of `ember bench conv`: nn.Conv2d (no bias, padding kernel // 2),
nn.BatchNorm2d (training), nn.MaxPool2d(3, 2, 1), nn.AvgPool2d(3, 2, 1) and
nn.AdaptiveAvgPool2d(1) forward + backward (of the output's
sum) on [batch, in, size, size], median wall and process CPU time of --reps runs after one
warm-up. Prints one JSON row per --case, in order. Needs PyTorch; not part of the tests.

  python3 bench/peers/conv_torch.py --case conv,64,64,3,56 [--case bn,64,64,0,56 ...] [--batch 8]
A case may end in ",bf16": module and input in bfloat16.
"""
import argparse
import json
import os
import time

import torch


def module_of(kind, c_in, c_out, kernel):
    if kind == "conv":
        return torch.nn.Conv2d(c_in, c_out, kernel, padding=kernel // 2, bias=False)
    if kind == "bn":
        return torch.nn.BatchNorm2d(c_in)
    if kind == "avgpool":
        return torch.nn.AvgPool2d(3, stride=2, padding=1)
    if kind == "adaptiveavgpool":
        return torch.nn.AdaptiveAvgPool2d(1)
    return torch.nn.MaxPool2d(3, stride=2, padding=1)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--case", action="append", required=True, help="kind,in,out,kernel,size")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    for case in args.case:
        kind, c_in, c_out, kernel, size, *dtype = case.split(",")
        c_in, c_out, kernel, size = int(c_in), int(c_out), int(kernel), int(size)
        dtype = torch.bfloat16 if dtype == ["bf16"] else torch.float32
        torch.manual_seed(0)
        module = module_of(kind, c_in, c_out, kernel).to(dtype)
        x = torch.randn(args.batch, c_in, size, size).to(dtype).requires_grad_()

        def step():
            x.grad = None
            module.zero_grad()
            module(x).sum().backward()

        step()
        times, cpu_times = [], []
        for _ in range(args.reps):
            begin, cpu_begin = time.perf_counter(), time.process_time()
            step()
            cpu_times.append(time.process_time() - cpu_begin)
            times.append(time.perf_counter() - begin)
        print(json.dumps({"case": case, "torch": torch.__version__, "ms": 1000 * sorted(times)[len(times) // 2],
                          "cpu_ms": 1000 * sorted(cpu_times)[len(cpu_times) // 2]}), flush=True)


if __name__ == "__main__":
    main()
