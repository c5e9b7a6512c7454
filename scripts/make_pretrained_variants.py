#!/usr/bin/env python3
"""Regenerate tests/fixtures/pretrained/variants/: tiny checkpoints for the config switches the
seven main fixtures (scripts/make_pretrained_fixtures.py) leave out, each with transformers'
float32 logits of one random prompt.

Development time only (the C++ tests read the committed files). Run from the repository root
with the development venv:

    /work/torchenv/bin/python scripts/make_pretrained_variants.py

Each variant: config.json and model.safetensors as transformers' save_pretrained writes them
(transformers 5 spellings: rope_parameters, dtype; weights in bfloat16 to keep the files small),
reference.safetensors with input_ids int64
[1, 30] and logits float32 [1, 30, vocab] (eager attention, float32 compute over the
bfloat16-rounded weights). No tokenizer: ids are
random. Variants:
    llama_bias_linear    attention_bias, mlp_bias, rope type linear (factor 2), untied head
    phi3_partial_window  partial_rotary_factor 0.5, sliding_window 6
    qwen2_window         use_sliding_window, sliding_window 5 from max_window_layers 1 on
    qwen3_layer_types    explicit layer_types (sliding, full), head_dim 12 != 32 / 4
    gpt2_inverse_gelu    scale_attn_by_inverse_layer_idx, exact (erf) gelu, untied head
    gemma_legacy_gelu    Gemma's legacy hidden_act "gelu" (meaning the tanh approximation)
"""

import json
import os

import torch
from safetensors.torch import save_file
from transformers import (GemmaConfig, GemmaForCausalLM, GPT2Config, GPT2LMHeadModel, LlamaConfig,
                          LlamaForCausalLM, Phi3Config, Phi3ForCausalLM, Qwen2Config, Qwen2ForCausalLM,
                          Qwen3Config, Qwen3ForCausalLM)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fixtures", "pretrained", "variants")
VOCAB, SEQ = 96, 30
COMMON = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, max_position_embeddings=64, bos_token_id=1, eos_token_id=2)


def variants():
    yield "llama_bias_linear", LlamaForCausalLM, LlamaConfig(
        **COMMON, attention_bias=True, mlp_bias=True, rope_scaling={"type": "linear", "factor": 2.0},
        rope_theta=500.0, tie_word_embeddings=False)
    yield "phi3_partial_window", Phi3ForCausalLM, Phi3Config(
        **COMMON, partial_rotary_factor=0.5, sliding_window=6, pad_token_id=0)
    yield "qwen2_window", Qwen2ForCausalLM, Qwen2Config(
        **COMMON, use_sliding_window=True, sliding_window=5, max_window_layers=1)
    yield "qwen3_layer_types", Qwen3ForCausalLM, Qwen3Config(
        **COMMON, head_dim=12, use_sliding_window=True, sliding_window=7,
        layer_types=["sliding_attention", "full_attention"])
    yield "gpt2_inverse_gelu", GPT2LMHeadModel, GPT2Config(
        vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_inner=48, n_positions=64, bos_token_id=1,
        eos_token_id=2, scale_attn_by_inverse_layer_idx=True, activation_function="gelu", tie_word_embeddings=False)
    yield "gemma_legacy_gelu", GemmaForCausalLM, GemmaConfig(**COMMON, head_dim=8)


def main():
    torch.manual_seed(26)
    ids = torch.randint(0, VOCAB, (1, SEQ))
    for name, cls, config in variants():
        config._attn_implementation = "eager"
        model = cls(config).eval()
        with torch.no_grad():
            for key, parameter in model.named_parameters():
                # Norm weights off 1 (Gemma's, which scale by 1 + weight, off 0) and non-zero
                # biases: every tensor matters.
                is_norm_weight = parameter.dim() == 1 and key.endswith("weight") and not name.startswith("gemma")
                parameter.normal_(1.0 if is_norm_weight else 0.0, 0.1)
            # Rounded to bfloat16 once, so that the float32 reference uses the weights on disk.
            for parameter in model.parameters():
                parameter.copy_(parameter.to(torch.bfloat16).float())
        # The reference before the bfloat16 save: converting the module would round its rotary
        # buffers too.
        with torch.no_grad():
            logits = model(input_ids=ids).logits.float()
        directory = os.path.join(OUT, name)
        model.to(torch.bfloat16).save_pretrained(directory)
        # Only what the test reads: the generation config is the main fixtures' concern.
        if os.path.exists(os.path.join(directory, "generation_config.json")):
            os.remove(os.path.join(directory, "generation_config.json"))
        if name == "gemma_legacy_gelu":
            # transformers rewrites the legacy value when it builds the config; the released
            # files say "gelu".
            path = os.path.join(directory, "config.json")
            with open(path) as f:
                config_json = json.load(f)
            config_json["hidden_act"] = "gelu"
            with open(path, "w") as f:
                json.dump(config_json, f, indent=2, sort_keys=True)
                f.write("\n")
        save_file({"input_ids": ids, "logits": logits.contiguous()}, os.path.join(directory, "reference.safetensors"))
        print(f"{name}: max |logit| {logits.abs().max().item():.4f}")


if __name__ == "__main__":
    main()
