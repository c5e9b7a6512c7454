#!/usr/bin/env python3
"""transformers peer of `ember bench pretrained`: loads the Hugging Face directory that the
suite wrote (random weights, real configuration) and measures prefill and greedy decoding as a
transformers user runs them: eager PyTorch, `generate` with its KV cache. Prints one JSON row:
{"prefill_tokens_per_s": X, "decode_tokens_per_s": Y}.
Needs torch and transformers (a development-time venv; EMBER_TORCH_PYTHON names its python);
not part of the tests.

  python3 bench/peers/pretrained_torch.py --model DIR --dtype bfloat16|float32
      [--threads 2] [--prefill 512] [--decode 64] [--reps 3]
"""
import argparse
import json

import torch
from transformers import AutoModelForCausalLM

from peer_timing import best_seconds


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float32"])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--prefill", type=int, default=512)
    parser.add_argument("--decode", type=int, default=64)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    dtype = getattr(torch, args.dtype)
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=dtype)
    model.eval()
    vocab = model.config.vocab_size
    generator = torch.Generator().manual_seed(0)
    prompt = torch.randint(0, vocab, (1, args.prefill), generator=generator)
    short = prompt[:, :16]

    with torch.inference_mode():
        prefill = best_seconds(lambda: model(prompt, use_cache=False), args.reps)

        def generate(new_tokens):
            model.generate(short, max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False,
                           pad_token_id=0)

        # Decoding alone: generate(1 + n) less generate(1), both prefilling the same 16 tokens.
        with_decode = best_seconds(lambda: generate(1 + args.decode), args.reps)
        prefill_only = best_seconds(lambda: generate(1), args.reps)
    print(json.dumps({
        "prefill_tokens_per_s": args.prefill / prefill,
        "decode_tokens_per_s": args.decode / max(with_decode - prefill_only, 1e-9),
    }))


if __name__ == "__main__":
    main()
