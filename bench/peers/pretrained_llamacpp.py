#!/usr/bin/env python3
"""llama.cpp peer of `ember bench pretrained`: converts the Hugging Face directory that the suite
wrote (config.json + safetensors, random weights, real configuration; Qwen2ForCausalLM or
LlamaForCausalLM) to GGUF files and measures llama.cpp's prefill and greedy decoding on them
through llama-cpp-python, as llama-bench's pp/tg tests do. Prints one JSON row per GGUF type:
{"type": "bf16", "prefill_tokens_per_s": X, "decode_tokens_per_s": Y}.

Needs numpy, `gguf` and `llama-cpp-python` from PyPI (the latter compiles llama.cpp);
--check-logits also needs torch and transformers. On a Xeon with AMX-INT8, llama-cpp-python
0.3.36's default (native) build died with SIGILL in its AMX matrix product at the first Q8_0
prompt; built with CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
-DGGML_AVX512=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON -DGGML_AMX_TILE=OFF
-DGGML_AMX_INT8=OFF" it runs (its decoding uses the vector kernels either way). A development-time peer: not part of the
tests. EMBER_LLAMACPP_PYTHON names the python that has them.

  python3 bench/peers/pretrained_llamacpp.py --model DIR [--types bf16,f16,q8_0,q4_0]
      [--threads 2] [--prefill 512] [--decode 64] [--reps 3] [--flash-attn]
  python3 bench/peers/pretrained_llamacpp.py --model DIR --check-logits [--check-tokens 64]

The converter is written here rather than taken from llama.cpp's convert_hf_to_gguf.py because
that script refuses tokenizers it does not recognise by hash, and the bench's directories have
no tokenizer at all. It writes what llama.cpp's loader reads: the architecture's hyperparameter
keys, its tensor names, q/k rows permuted to llama.cpp's rope layout where the architecture
needs it, the llama3 rope-scaling factors as a tensor, and a placeholder byte-level BPE vocab of
the configured size (the bench feeds token ids and never text). --check-logits shows the
conversion computes what transformers computes, not merely that llama.cpp loads it: with K and V
kept in float32, the float32 file's logits match transformers' to float32 precision.
"""
import argparse
import json
import math
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import gguf
import llama_cpp

from peer_timing import best_seconds

# ---------------------------------------------------------------------------------------------
# Reading safetensors with numpy alone, so the timing path needs no torch. bfloat16 has no numpy
# type: it is read as its uint16 bit patterns.

SAFETENSORS_DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": np.uint16}


class CheckpointTensor:
    def __init__(self, path, dtype, shape, data_start, data_end):
        self.path, self.dtype, self.shape = path, dtype, tuple(shape)
        self.data_start, self.data_end = data_start, data_end

    def raw(self):
        """The stored values (bfloat16 as uint16 bits), memory-mapped."""
        data = np.memmap(self.path, dtype=np.uint8, mode="r", offset=self.data_start,
                         shape=(self.data_end - self.data_start,))
        return data.view(SAFETENSORS_DTYPES[self.dtype]).reshape(self.shape)

    def float32(self):
        values = self.raw()
        if self.dtype == "BF16":
            return (values.astype(np.uint32) << 16).view(np.float32)
        return values.astype(np.float32)


def read_checkpoint(directory):
    """{HF tensor name: CheckpointTensor} over model.safetensors or the shards of its index."""
    index = directory / "model.safetensors.index.json"
    if index.exists():
        files = sorted(set(json.loads(index.read_text())["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    tensors = {}
    for file in files:
        path = directory / file
        with open(path, "rb") as f:
            header_size = int.from_bytes(f.read(8), "little")
            header = json.loads(f.read(header_size))
        data_offset = 8 + header_size
        for name, entry in header.items():
            if name == "__metadata__":
                continue
            if entry["dtype"] not in SAFETENSORS_DTYPES:
                raise SystemExit(f"{path}: tensor {name} has dtype {entry['dtype']}; expected F32, F16 or BF16")
            begin, end = entry["data_offsets"]
            tensors[name] = CheckpointTensor(path, entry["dtype"], entry["shape"], data_offset + begin,
                                             data_offset + end)
    return tensors


# ---------------------------------------------------------------------------------------------
# The model description llama.cpp reads.

# HF architecture -> (GGUF architecture, whether q/k rows need the rope permutation). llama.cpp
# rotates adjacent pairs (x[2i], x[2i+1]) for its "llama" architecture but split halves
# (x[i], x[i + d/2]) for "qwen2", as HF does for both.
ARCHITECTURES = {
    "LlamaForCausalLM": ("llama", True),
    "Qwen2ForCausalLM": ("qwen2", False),
}

LAYER_TENSOR_NAMES = {
    "input_layernorm": "attn_norm",
    "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output",
    "post_attention_layernorm": "ffn_norm",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}


def gguf_tensor_name(hf_name):
    if hf_name == "model.embed_tokens.weight":
        return "token_embd.weight"
    if hf_name == "model.norm.weight":
        return "output_norm.weight"
    if hf_name == "lm_head.weight":
        return "output.weight"
    parts = hf_name.split(".")
    if len(parts) >= 5 and parts[:2] == ["model", "layers"]:
        layer, module, kind = parts[2], ".".join(parts[3:-1]), parts[-1]
        if module in LAYER_TENSOR_NAMES and kind in ("weight", "bias"):
            return f"blk.{layer}.{LAYER_TENSOR_NAMES[module]}.{kind}"
    raise SystemExit(f"no GGUF name for checkpoint tensor {hf_name}")


def to_rope_pairs(rows, heads):
    """Reorders each head's rows from HF's split-half rope layout to adjacent pairs: the row of
    the i-th rotation's first half goes to 2i, its second half to 2i + 1. Works on weights
    [heads * head_dim, in] and biases [heads * head_dim]."""
    head_dim = rows.shape[0] // heads
    return rows.reshape(heads, 2, head_dim // 2, *rows.shape[1:]).swapaxes(1, 2).reshape(rows.shape)


def rope_settings(config):
    """(rope_theta, scaling dict or {}) from either spelling: transformers 4 writes rope_theta and
    rope_scaling beside the other fields, transformers 5 writes rope_parameters holding both;
    rope_scaling wins where both are set, as transformers reads them."""
    scaling = config.get("rope_scaling") or config.get("rope_parameters") or {}
    theta = scaling.get("rope_theta", config.get("rope_theta", 10000.0))
    if scaling.get("rope_type", scaling.get("type", "default")) == "default":
        scaling = {}
    return theta, scaling


def llama3_rope_factors(theta, scaling, head_dim, max_positions):
    """The per-frequency divisors of rope_type llama3 (long wavelengths slowed by `factor`, short
    ones kept, a smooth ramp between), which llama.cpp reads from the rope_freqs tensor."""
    factor = scaling["factor"]
    low, high = scaling.get("low_freq_factor", 1.0), scaling.get("high_freq_factor", 4.0)
    original = scaling.get("original_max_position_embeddings", max_positions)
    factors = []
    for i in range(0, head_dim, 2):
        wavelength = 2 * math.pi * theta ** (i / head_dim)
        if wavelength < original / high:
            factors.append(1.0)
        elif wavelength > original / low:
            factors.append(factor)
        else:
            smooth = (original / wavelength - low) / (high - low)
            factors.append(1.0 / ((1 - smooth) / factor + smooth))
    return np.array(factors, dtype=np.float32)


# bytes 0..255 -> the printable characters that byte-level BPE vocabularies spell them with
# (GPT-2's table): printable Latin-1 stands for itself, the rest is shifted past U+0100.
def byte_level_alphabet():
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    chars, shifted = {}, 0
    for b in range(256):
        if b in printable:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + shifted)
            shifted += 1
    return [chars[b] for b in range(256)]


def placeholder_vocab(vocab_size, special_ids):
    """A byte-level BPE vocabulary of `vocab_size` tokens that llama.cpp loads: the 256 byte
    tokens (its loader tokenizes "\\n" and decodes every token's text through the byte table, so
    all texts must be spelled in it), one merge with its result, then unique placeholders."""
    alphabet = byte_level_alphabet()
    if vocab_size < len(alphabet) + 1:
        raise SystemExit(f"vocab_size {vocab_size} is below the {len(alphabet) + 1} tokens of the placeholder vocab")
    space = alphabet[ord(" ")]
    tokens = alphabet + [space + space]
    tokens += [f"<placeholder_{i}>" for i in range(len(tokens), vocab_size)]
    types = [gguf.TokenType.NORMAL] * vocab_size
    for i in special_ids:
        types[i] = gguf.TokenType.CONTROL
    return tokens, types, [f"{space} {space}"]


GGUF_TYPES = {
    # name -> (tensor type of 2-D weights, file type recorded in general.file_type)
    "f32": (gguf.GGMLQuantizationType.F32, gguf.LlamaFileType.ALL_F32),
    "f16": (gguf.GGMLQuantizationType.F16, gguf.LlamaFileType.MOSTLY_F16),
    "bf16": (gguf.GGMLQuantizationType.BF16, gguf.LlamaFileType.MOSTLY_BF16),
}


def stored_array(values_f32, qtype):
    """The GGUF payload of one tensor: 1-D tensors (norms, biases) stay float32 as in llama.cpp's
    own conversions; 2-D ones take `qtype` (bfloat16 as uint16 bits, rounded to nearest even,
    which is exact when the checkpoint is bfloat16)."""
    if values_f32.ndim <= 1 or qtype == gguf.GGMLQuantizationType.F32:
        return values_f32.astype(np.float32, copy=False)
    if qtype == gguf.GGMLQuantizationType.F16:
        return values_f32.astype(np.float16)
    bits = values_f32.view(np.uint32)  # finite values never carry past 32 bits here
    return ((bits + np.uint32(0x7FFF) + ((bits >> 16) & np.uint32(1))) >> 16).astype(np.uint16)


def convert(model_dir, out_path, type_name):
    """Writes model_dir as a GGUF file of `type_name` (f32, f16, bf16), one tensor at a time so a
    1B model never sits in memory whole."""
    config = json.loads((model_dir / "config.json").read_text())
    hf_arch = config["architectures"][0]
    if hf_arch not in ARCHITECTURES:
        raise SystemExit(f"{model_dir}/config.json: architecture {hf_arch}; expected one of {sorted(ARCHITECTURES)}")
    arch, permute_qk = ARCHITECTURES[hf_arch]
    qtype, file_type = GGUF_TYPES[type_name]
    heads, kv_heads = config["num_attention_heads"], config.get("num_key_value_heads", config["num_attention_heads"])
    head_dim = config.get("head_dim") or config["hidden_size"] // heads
    vocab_size = config["vocab_size"]
    tied = config.get("tie_word_embeddings", False)

    writer = gguf.GGUFWriter(str(out_path), arch)
    writer.add_name(model_dir.name)
    writer.add_file_type(file_type)
    writer.add_quantization_version(gguf.GGML_QUANT_VERSION)
    writer.add_vocab_size(vocab_size)
    writer.add_context_length(config.get("max_position_embeddings", 4096))
    writer.add_embedding_length(config["hidden_size"])
    writer.add_block_count(config["num_hidden_layers"])
    writer.add_feed_forward_length(config["intermediate_size"])
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    writer.add_key_length(head_dim)
    writer.add_value_length(head_dim)
    writer.add_rope_dimension_count(head_dim)
    rope_theta, rope_scaling = rope_settings(config)
    writer.add_rope_freq_base(rope_theta)
    writer.add_layer_norm_rms_eps(config["rms_norm_eps"])

    bos = config.get("bos_token_id")
    eos = config.get("eos_token_id")
    eos = eos[0] if isinstance(eos, list) else eos
    special = [i for i in (bos, eos) if i is not None]
    tokens, token_types, merges = placeholder_vocab(vocab_size, special)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types(token_types)
    writer.add_token_merges(merges)
    if bos is not None:
        writer.add_bos_token_id(bos)
    if eos is not None:
        writer.add_eos_token_id(eos)

    # (GGUF name, function giving the float32 values): planned first, since GGUF puts every
    # tensor's name, shape and type before the data.
    checkpoint = read_checkpoint(model_dir)
    plan = []
    for hf_name, tensor in checkpoint.items():
        if hf_name == "lm_head.weight" and tied:
            continue  # llama.cpp reuses token_embd when there is no output.weight
        name = gguf_tensor_name(hf_name)
        rows_heads = None
        if permute_qk and ".self_attn.q_proj." in hf_name:
            rows_heads = heads
        elif permute_qk and ".self_attn.k_proj." in hf_name:
            rows_heads = kv_heads

        def values(tensor=tensor, rows_heads=rows_heads):
            v = tensor.float32()
            return to_rope_pairs(v, rows_heads) if rows_heads else v

        plan.append((name, tensor.shape, values))
    if rope_scaling.get("rope_type", rope_scaling.get("type")) == "llama3":
        factors = llama3_rope_factors(rope_theta, rope_scaling, head_dim, config.get("max_position_embeddings", 8192))
        plan.append(("rope_freqs.weight", factors.shape, lambda factors=factors: factors))
    elif rope_scaling:
        raise SystemExit(f"{model_dir}/config.json: rope_scaling {rope_scaling} is not converted")

    for name, shape, _ in plan:
        is_matrix = len(shape) >= 2
        if not is_matrix or qtype == gguf.GGMLQuantizationType.F32:
            writer.add_tensor_info(name, shape, np.dtype(np.float32), 4 * int(np.prod(shape)))
        elif qtype == gguf.GGMLQuantizationType.F16:
            writer.add_tensor_info(name, shape, np.dtype(np.float16), 2 * int(np.prod(shape)))
        else:
            writer.add_tensor_info(name, shape, np.dtype(np.uint16), 2 * int(np.prod(shape)), raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for name, shape, values in plan:
        writer.write_tensor_data(stored_array(np.ascontiguousarray(values()), qtype))
    writer.close()


# GGUF types made by llama.cpp's own quantizer, with llama-quantize's defaults (under Q4_0 the
# output matrix, or the token embedding that stands for a tied one, is kept at Q6_K).
QUANTIZED_TYPES = {"q8_0": llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0, "q4_0": llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_0}


def quantize(source_path, out_path, threads, type_name):
    """A quantized type as llama-quantize makes it, through llama.cpp's own quantizer."""
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = QUANTIZED_TYPES[type_name]
    params.nthread = threads
    if llama_cpp.llama_model_quantize(str(source_path).encode(), str(out_path).encode(), params) != 0:
        raise SystemExit(f"llama_model_quantize failed on {source_path}")


class GgufFiles:
    """The GGUF file of each type in a scratch directory, converted on first use (or kept from an
    earlier run over the same directory, when newer than the checkpoint's files). Q8_0 and Q4_0
    come from a GGUF in the checkpoint's own precision, so they quantize the stored weights
    themselves."""

    def __init__(self, model_dir, scratch, threads):
        self.model_dir, self.scratch, self.threads = model_dir, scratch, threads
        self.paths = {}
        stored = {t.dtype for t in read_checkpoint(model_dir).values()}
        self.source_type = "bf16" if stored == {"BF16"} else "f16" if stored == {"F16"} else "f32"

    def is_current(self, out):
        newest_input = max(f.stat().st_mtime for f in Path(self.model_dir).iterdir())
        return out.exists() and out.stat().st_mtime >= newest_input

    def path(self, type_name):
        if type_name not in self.paths:
            out = self.scratch / f"model-{type_name}.gguf"
            if self.is_current(out):
                pass  # written by an earlier run over the same scratch directory and weights
            elif type_name in QUANTIZED_TYPES:
                quantize(self.path(self.source_type), out, self.threads, type_name)
            elif type_name in GGUF_TYPES:
                convert(self.model_dir, out, type_name)
            else:
                raise SystemExit(f"unknown GGUF type {type_name}; expected f32, f16, bf16, q8_0 or q4_0")
            self.paths[type_name] = out
        return self.paths[type_name]


# ---------------------------------------------------------------------------------------------
# Timing, as llama-bench does: pp = one batch of `prefill` tokens into an empty cache,
# tg = single-token evaluations.

def load(path, threads, n_ctx, n_batch, logits_all=False, kv_type=None, flash_attn=False):
    return llama_cpp.Llama(model_path=str(path), n_threads=threads, n_threads_batch=threads, n_ctx=n_ctx,
                           n_batch=n_batch, logits_all=logits_all, type_k=kv_type, type_v=kv_type,
                           flash_attn=flash_attn, verbose=False)


def last_logits(llm):
    return np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm.ctx, -1), shape=(llm.n_vocab(),))


def measure(path, args):
    llm = load(path, args.threads, args.prefill + args.decode + 16, args.prefill, flash_attn=args.flash_attn)
    prompt = np.random.default_rng(0).integers(0, llm.n_vocab(), args.prefill).tolist()

    def prefill():
        llm.reset()  # with n_tokens at 0, eval drops the whole cache before evaluating
        llm.eval(prompt)

    prefill_seconds = best_seconds(prefill, args.reps)

    def decode_after_short_prompt():
        llm.reset()
        llm.eval(prompt[:16])
        start = time.perf_counter()
        for _ in range(args.decode):
            llm.eval([int(np.argmax(last_logits(llm)))])
        return time.perf_counter() - start

    decode_after_short_prompt()  # warm-up
    decode_seconds = min(decode_after_short_prompt() for _ in range(args.reps))
    llm.close()
    return {"prefill_tokens_per_s": args.prefill / prefill_seconds,
            "decode_tokens_per_s": args.decode / decode_seconds}


# ---------------------------------------------------------------------------------------------
# --check-logits: llama.cpp's logits on the converted file against transformers' on the
# directory, for the same token ids.

# Largest max|difference| / max|logit| accepted per type. The check keeps K and V in float32, so
# the float32 file must match transformers to float32 precision: that is the conversion's test.
# llama.cpp rounds activations to the weights' dot-product type (float16, bfloat16, Q8_0 blocks),
# and random attention amplifies that, so the other bounds are coarse: they catch a tensor in the
# wrong layout or place (differences the size of the logits themselves), not precision.
CHECK_TOLERANCES = {"f32": 1e-4, "f16": 3e-2, "bf16": 0.2, "q8_0": 0.4, "q4_0": 1.0}


def check_logits(args, files):
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32).eval()
    tokens = np.random.default_rng(1).integers(0, model.config.vocab_size, args.check_tokens).tolist()
    with torch.inference_mode():
        reference = model(torch.tensor([tokens])).logits[0].numpy()
    scale = float(np.abs(reference).max())
    ok = True
    for type_name in args.types.split(","):
        llm = load(files.path(type_name), args.threads, len(tokens) + 16, len(tokens), logits_all=True,
                   kv_type=llama_cpp.GGML_TYPE_F32)
        llm.eval(tokens)
        logits = np.array(llm.scores[:len(tokens)], dtype=np.float32)
        llm.close()
        difference = float(np.abs(logits - reference).max())
        row = {"check": "logits", "type": type_name, "tokens": len(tokens), "max_abs_diff": difference,
               "logits_scale": scale, "relative": difference / scale,
               "argmax_agree": float(np.mean(logits.argmax(-1) == reference.argmax(-1))),
               "tolerance": CHECK_TOLERANCES[type_name]}
        ok = ok and difference / scale <= CHECK_TOLERANCES[type_name]
        print(json.dumps(row), flush=True)
    return ok


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True, help="Hugging Face directory: config.json + safetensors")
    parser.add_argument("--types", default="bf16,f16,q8_0", help="comma-separated: f32, f16, bf16, q8_0, q4_0")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--prefill", type=int, default=512)
    parser.add_argument("--decode", type=int, default=64)
    parser.add_argument("--reps", type=int, default=3)
    # off by default, as llama-cpp-python's Llama has it; on, to see llama.cpp's other attention path
    parser.add_argument("--flash-attn", action="store_true")
    parser.add_argument("--check-logits", action="store_true",
                        help="compare llama.cpp's logits with transformers' instead of timing")
    parser.add_argument("--check-tokens", type=int, default=64)
    parser.add_argument("--scratch", help="directory for the GGUF files (default: a temporary one, removed)")
    args = parser.parse_args()

    model_dir = Path(args.model)
    scratch = Path(args.scratch) if args.scratch else Path(tempfile.mkdtemp(prefix="ember-llamacpp-"))
    scratch.mkdir(parents=True, exist_ok=True)
    try:
        files = GgufFiles(model_dir, scratch, args.threads)
        if args.check_logits:
            sys.exit(0 if check_logits(args, files) else 1)
        for type_name in args.types.split(","):
            speeds = measure(files.path(type_name), args)
            print(json.dumps({"type": type_name, **speeds}), flush=True)
    finally:
        if not args.scratch:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
