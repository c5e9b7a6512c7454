#!/usr/bin/env python3
"""Regenerate the pretrained-model fixtures under tests/fixtures/pretrained/ (issue 26).

Development time only: the C++ tests read the committed files and never run this script,
and neither CI nor scripts/test needs Python, PyTorch or the network.

Run it from the repository root with the development venv (outside the repository):

    /work/torchenv/bin/python scripts/make_pretrained_fixtures.py

The venv holds torch, transformers, tokenizers, safetensors and numpy from PyPI. The committed
files were made with torch 2.15.0, transformers 5.25.0, tokenizers 0.23.3, safetensors 0.8.0
and numpy 2.4.6 (also recorded in tests/fixtures/pretrained/VERSIONS.json). Other versions
may give slightly different files (tokenizer merges, random weights, float rounding).

No network: tokenizers are trained here with the `tokenizers` library on corpus.txt, models
are built from transformers config classes with seeded random weights. Every run with the
same versions gives the same files (fixed seeds, deterministic CPU float32 compute).

Inputs (committed, written by hand from public-domain documents):
    tests/fixtures/pretrained/corpus.txt    tokenizer training text
    tests/fixtures/pretrained/heldout.txt   perplexity / held-out text
Outputs: everything else under tests/fixtures/pretrained/ (see its README.md and
/work/plan/PRETRAINED_PLAN.md, "Fixture layout"):
    VERSIONS.json
    tokenizers/texts.json
    tokenizers/<family>/{tokenizer.json, tokenizer_config.json, expected.json}
        family in gpt2 llama3 qwen2 llama2 metaspace gemma
    models/<arch>/{config.json, generation_config.json, tokenizer.json,
                   tokenizer_config.json, model.safetensors (mistral: 2 shards + index),
                   reference.safetensors, reference.json}
        arch in llama mistral qwen2 qwen3 gemma phi3 gpt2
"""

import json
import math
import os
import shutil
import sys
import unicodedata

import numpy as np
import torch

import tokenizers
import transformers
import safetensors
from safetensors.torch import save_file
from tokenizers import Tokenizer, Regex, AddedToken
from tokenizers import models as tk_models
from tokenizers import normalizers, pre_tokenizers, decoders, processors, trainers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "pretrained")
TOKENIZERS_DIR = os.path.join(FIXTURES, "tokenizers")
MODELS_DIR = os.path.join(FIXTURES, "models")

PROMPT_LEN = 24
GREEDY_NEW = 32
PPL_CTX = 32
MIN_TOP2_GAP = 1e-3

# ---------------------------------------------------------------------------------------------
# Split patterns. These are the public patterns of the GPT-2, Llama-3 and Qwen2 tokenizers
# (written here from their documented definitions).

GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
LLAMA3_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"""
    r"""| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
QWEN2_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"""
    r"""| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)

# ---------------------------------------------------------------------------------------------
# Reference texts for the tokenizers (tokenizers/texts.json).

CPP_SNIPPET = """#include <cstdio>

int main(int argc, char** argv) {
    for (int i = 0; i < argc; ++i) {
        std::printf("%d: %s\\n", i, argv[i]);  // print each argument
    }
    return 0;
}
"""

PY_SNIPPET = """class Counter:
    def __init__(self, start=0):
        self.value = start

    def step(self, by=1):
        \"\"\"Advance the counter.\"\"\"
        self.value += by
        return self.value


if __name__ == "__main__":
\tprint(Counter(41).step())
"""

TEXTS = [
    "Hello world! This is a plain English sentence, with punctuation.",
    "We hold these truths to be self-evident, that all men are created equal.",
    "Café, naïve, façade, Müller, Straße, niño, señor, crème brûlée, œuvre.",
    "Cafe\u0301 and nai\u0308ve with combining marks; A\u030a, n\u0303 and o\u0308 too.",
    "Ünïcödé ÀÉÎÕÜ ÇÑ ß ẞ, the ligature ﬁ, Ⅻ and ① stay as they are under NFC.",
    "中文测试：我们今天学习中文。日本語のテキスト、カタカナとひらがな。한국어 텍스트입니다.",
    "Emoji 😀👍🏽❤️🔥 family 👨‍👩‍👧‍👦 coder 👩‍💻 rainbow 🏳️‍🌈 flags 🇺🇸🇯🇵🇫🇷 done",
    "1 12 123 1234 12345 123456 1234567 12345678 123456789 1234567890 00007",
    "pi is 3.14159, e is 2.71828; on 2026-12-04 at 12:30:45 it cost $1,234.56 (99.9%).",
    "two  spaces,   three,    four, and\ttab\t\tdouble tab",
    "line one\nline two\n\n\nafter three newlines\r\nwindows line\n",
    "trailing spaces   ",
    "   leading spaces",
    " \n ",
    "I'LL don't It'S we're THEY'VE she'd I'm you'll 'tis",
    CPP_SNIPPET,
    PY_SNIPPET,
    "hello<|endoftext|>world",
    "<|begin_of_text|>Hi there<|eot_id|><|end_of_text|>",
    "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
    "<s>Hello</s> and <unk> in the middle <s> of text",
    "<bos>hello<eos><pad> and an unfinished <|endoftext",
    "Unseen: 𝔘𝔫𝔦𝔠𝔬𝔡𝔢, rare CJK 龘靐齉 𠀀, and ᚠᛇᚻ runes.",
    "non\u00a0breaking\u2003em space\u200bzero width and \u3000ideographic space",
    "",
    " ",
    "    indented four spaces\n        eight spaces\n\tand a tab",
]

# ---------------------------------------------------------------------------------------------
# Small helpers.


def log(*args):
    print(*args, flush=True)


def write_json(path, obj, indent=2):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, indent=indent)
        f.write("\n")


def read_text(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as f:
        return f.read()


def training_chunks(text, lines_per_chunk=6):
    """The corpus as chunks of a few lines each, newlines kept (the trainers see them)."""
    lines = text.splitlines(keepends=True)
    return ["".join(lines[i:i + lines_per_chunk]) for i in range(0, len(lines), lines_per_chunk)]


BYTE_TOKENS = ["<0x%02X>" % b for b in range(256)]
BYTE_FALLBACK_ALPHABET = 160
PRINTABLE_ASCII = [chr(c) for c in range(33, 127)]

# ---------------------------------------------------------------------------------------------
# Tokenizer families.


def train_bpe(tok, corpus, vocab_size, special_tokens=(), initial_alphabet=(),
              limit_alphabet=None):
    kw = {} if limit_alphabet is None else {"limit_alphabet": limit_alphabet}
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, show_progress=False,
                                  special_tokens=list(special_tokens),
                                  initial_alphabet=list(initial_alphabet), **kw)
    tok.train_from_iterator(training_chunks(corpus), trainer=trainer)
    return tok


def byte_level_table():
    """byte -> character of the ByteLevel alphabet (GPT-2's public bytes-to-unicode table)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def byte_level_chars(text):
    """The ByteLevel spelling of text."""
    table = byte_level_table()
    return "".join(table[b] for b in text.encode("utf-8"))


def byte_level_tokenizer(corpus, pre_tokenizer, vocab_size, specials, normalizer=None,
                         ignore_merges=False, extra_words=()):
    tok = Tokenizer(tk_models.BPE(ignore_merges=ignore_merges))
    if normalizer is not None:
        tok.normalizer = normalizer
    tok.pre_tokenizer = pre_tokenizer
    train_bpe(tok, corpus, vocab_size, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    if extra_words:
        # Whole words in the vocab that no merge makes (as the released Llama-3 vocab has):
        # only ignore_merges emits them, so the fixtures see whether it is honoured.
        data = json.loads(tok.to_str())
        vocab = data["model"]["vocab"]
        for w in extra_words:
            w = byte_level_chars(w)
            assert w not in vocab, w
            vocab[w] = len(vocab)
        tok = Tokenizer.from_str(json.dumps(data, ensure_ascii=False))
        data["model"]["ignore_merges"] = not ignore_merges
        other = Tokenizer.from_str(json.dumps(data, ensure_ascii=False))
        for w in extra_words:
            assert tok.encode(w).ids != other.encode(w).ids, w
    tok.decoder = decoders.ByteLevel()
    # Special tokens after the trained vocabulary, as the real files have them
    # (GPT-2 50256, Llama-3 128000+, Qwen2 151643+).
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in specials])
    return tok


def make_gpt2(corpus):
    tok = byte_level_tokenizer(
        corpus, pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True), 1000,
        ["<|endoftext|>"])
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    cfg = {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>",
           "unk_token": "<|endoftext|>"}
    return tok, cfg


def make_llama3(corpus):
    pre = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False),
    ])
    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"]
    tok = byte_level_tokenizer(corpus, pre, 1000, specials, ignore_merges=True,
                               extra_words=[" truths", " unfinished"])
    bot = tok.token_to_id("<|begin_of_text|>")
    # As the released Llama-3 files: ByteLevel (offsets only) then the template adding BOS.
    tok.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(
            single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A <|begin_of_text|> $B:1",
            special_tokens=[("<|begin_of_text|>", bot)]),
    ])
    cfg = {"bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>"}
    return tok, cfg


def make_qwen2(corpus):
    pre = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
    ])
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tok = byte_level_tokenizer(corpus, pre, 1000, specials, normalizer=normalizers.NFC())
    tok.post_processor = processors.ByteLevel(trim_offsets=False)  # adds no token
    cfg = {"bos_token": None, "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>",
           "unk_token": None}
    return tok, cfg


def fix_byte_fallback_json(tok, n_specials, legacy_merges=False):
    """Keep the 256 <0xNN> tokens in the model vocab only (not as added tokens), as the
    Llama-2 / Gemma files have them, and optionally write merges as "a b" strings."""
    data = json.loads(tok.to_str())
    data["added_tokens"] = [t for t in data["added_tokens"] if t["content"] not in BYTE_TOKENS]
    assert len(data["added_tokens"]) == n_specials
    model = data["model"]
    assert model["type"] == "BPE" and model["byte_fallback"] and model["unk_token"] == "<unk>"
    for b in BYTE_TOKENS:
        assert b in model["vocab"], b
    if legacy_merges:
        for a, b in model["merges"]:
            assert " " not in a and " " not in b, (a, b)
        model["merges"] = ["%s %s" % (a, b) for a, b in model["merges"]]
    return data


def alphabet_limit(corpus, at_least, initial):
    """The smallest alphabet size >= at_least that falls between two character counts: the
    trainer's limit_alphabet breaks ties in an unspecified order, so a limit inside a run of
    equal counts would make the alphabet (and every id) change from run to run. The trainer
    sees every character of the corpus (spaces as "▁") in all three byte-fallback setups, and
    counts the characters of its initial alphabet as the maximum."""
    from collections import Counter
    counter = Counter(corpus.replace(" ", "▁"))
    for c in initial:
        counter[c] = sys.maxsize
    counts = sorted(counter.values(), reverse=True)
    n = at_least
    while n < len(counts) and counts[n - 1] == counts[n]:
        n += 1
    assert n < len(counts), "the corpus has too few distinct characters"
    return n


def train_byte_fallback(corpus, specials, train_normalizer, train_pre_tokenizer, vocab_size):
    tok = Tokenizer(tk_models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    if train_normalizer is not None:
        tok.normalizer = train_normalizer
    tok.pre_tokenizer = train_pre_tokenizer
    # specials then the 256 byte tokens take the first ids (Llama-2: <unk> <s> </s> <0x00>...).
    # The alphabet keeps the most frequent characters only (as sentencepiece's character
    # coverage does): the rarer CJK and emoji of the corpus go through byte fallback, and the
    # vocabulary has room for merges of multi-byte characters.
    # Printable ASCII is always in the alphabet, as in the released sentencepiece models.
    train_bpe(tok, corpus, vocab_size, special_tokens=list(specials) + BYTE_TOKENS,
              initial_alphabet=PRINTABLE_ASCII,
              limit_alphabet=alphabet_limit(corpus, BYTE_FALLBACK_ALPHABET, PRINTABLE_ASCII))
    for i, s in enumerate(list(specials) + BYTE_TOKENS):
        assert tok.token_to_id(s) == i, s
    return tok


def make_llama2(corpus):
    specials = ["<unk>", "<s>", "</s>"]
    # Trained with Metaspace splitting so no merge crosses a word start; the saved file has
    # the Llama-2 layout: Prepend + Replace normalizer and no pre-tokenizer.
    tok = train_byte_fallback(
        corpus, specials, None,
        pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=True), 1000)
    tok.pre_tokenizer = None
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"),
                                           normalizers.Replace(" ", "▁")])
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(),
                                     decoders.Fuse(), decoders.Strip(" ", 1, 0)])
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B:1", special_tokens=[("<s>", 1)])
    pairs_version = Tokenizer.from_str(json.dumps(fix_byte_fallback_json(tok, 3)))
    data = fix_byte_fallback_json(tok, 3, legacy_merges=True)
    tok = Tokenizer.from_str(json.dumps(data, ensure_ascii=False))
    # The legacy "a b" spelling must load and give the same ids as the [a, b] pairs.
    for t in TEXTS + [corpus[:4000]]:
        assert tok.encode(t).ids == pairs_version.encode(t).ids, t
    cfg = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
           "add_bos_token": True, "add_eos_token": False}
    return tok, cfg, data


def make_metaspace(corpus):
    specials = ["<unk>", "<s>", "</s>"]
    meta = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=True)
    tok = train_byte_fallback(corpus, specials, None, meta, 1000)
    # ByteFallback before the Metaspace decoder so that byte-fallback tokens decode to text (a
    # bare Metaspace decoder leaves "<0xE4>" spelled out). No Fuse: the Metaspace decoder
    # (tokenizers 0.23) drops EVERY "▁" of the first token, so fusing first would lose all
    # the spaces; per token it only drops the first token's leading one.
    tok.decoder = decoders.Sequence([
        decoders.ByteFallback(),
        decoders.Metaspace(replacement="▁", prepend_scheme="first", split=True)])
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B:1", special_tokens=[("<s>", 1)])
    data = fix_byte_fallback_json(tok, 3)
    tok = Tokenizer.from_str(json.dumps(data, ensure_ascii=False))
    cfg = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
           "add_bos_token": True, "add_eos_token": False}
    return tok, cfg, data


def make_gemma(corpus):
    specials = ["<pad>", "<eos>", "<bos>", "<unk>"]
    # Trained with splits before each "▁" (no merge across a word start); saved with the
    # Gemma layout: normalizer Replace(" ", "▁") only and no pre-tokenizer.
    tok = train_byte_fallback(
        corpus, specials, normalizers.Replace(" ", "▁"),
        pre_tokenizers.Split("▁", behavior="merged_with_next"), 1000)
    tok.pre_tokenizer = None
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(),
                                     decoders.Fuse()])
    tok.post_processor = processors.TemplateProcessing(
        single="<bos> $A", pair="<bos> $A <bos> $B:1", special_tokens=[("<bos>", 2)])
    data = fix_byte_fallback_json(tok, 4)
    tok = Tokenizer.from_str(json.dumps(data, ensure_ascii=False))
    cfg = {"bos_token": "<bos>", "eos_token": "<eos>", "unk_token": "<unk>",
           "pad_token": "<pad>", "add_bos_token": True, "add_eos_token": False}
    return tok, cfg, data


FAMILIES = ["gpt2", "llama3", "qwen2", "llama2", "metaspace", "gemma"]


def tokenizer_config(cfg):
    out = {"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 128,
           "clean_up_tokenization_spaces": False}
    out.update(cfg)
    return out


def multibyte_merge_count(tok):
    """Merges whose result holds a byte >= 0x80 (byte-level) or a non-ASCII character other
    than "▁" (byte fallback): the merges of multi-byte characters."""
    data = json.loads(tok.to_str())
    byte_level = data["decoder"] is not None and data["decoder"]["type"] == "ByteLevel"
    high = {c for b, c in byte_level_table().items() if b >= 128}
    n = 0
    for m in data["model"]["merges"]:
        a, b = m.split(" ") if isinstance(m, str) else m
        if byte_level:
            n += any(c in high for c in a + b)
        else:
            n += any(ord(c) >= 128 and c != "▁" for c in a + b)
    return n


def build_tokenizers(corpus):
    os.makedirs(TOKENIZERS_DIR, exist_ok=True)
    write_json(os.path.join(TOKENIZERS_DIR, "texts.json"), TEXTS)
    result = {}
    for family in FAMILIES:
        d = os.path.join(TOKENIZERS_DIR, family)
        os.makedirs(d, exist_ok=True)
        maker = globals()["make_" + family]
        made = maker(corpus)
        if len(made) == 3:
            tok, cfg, data = made
            write_json(os.path.join(d, "tokenizer.json"), data)
        else:
            tok, cfg = made
            tok.save(os.path.join(d, "tokenizer.json"), pretty=True)
        write_json(os.path.join(d, "tokenizer_config.json"), tokenizer_config(cfg))
        # Everything below uses the file as written.
        tok = Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
        expected = []
        lossy = []
        for text in TEXTS:
            enc = tok.encode(text, add_special_tokens=False)
            enc_sp = tok.encode(text, add_special_tokens=True)
            decoded = tok.decode(enc.ids, skip_special_tokens=False)
            entry = {"text": text, "ids": enc.ids, "ids_with_special": enc_sp.ids,
                     "tokens": enc.tokens, "decoded": decoded,
                     "lossless": decoded == text}
            if decoded != text:
                lossy.append(text)
            expected.append(entry)
        # Byte-level families without a normalizer never lose text; Qwen2's NFC only changes
        # texts that are not already NFC.
        for text in lossy:
            if family in ("gpt2", "llama3"):
                raise AssertionError("%s: decode(encode(x)) != x for %r" % (family, text))
            if family == "qwen2" and unicodedata.normalize("NFC", text) == text:
                raise AssertionError("qwen2: lossy on an NFC text %r" % text)
        # One entry a line: readable, diffable and a third of the indented size.
        with open(os.path.join(d, "expected.json"), "w", encoding="utf-8") as f:
            f.write("[\n" + ",\n".join(json.dumps(e, ensure_ascii=False) for e in expected)
                    + "\n]\n")
        vocab = tok.get_vocab_size(with_added_tokens=True)
        log("tokenizer %-9s vocab %4d  multi-byte merges %3d  lossy texts %d %s" % (
            family, vocab, multibyte_merge_count(tok), len(lossy),
            [t[:24] for t in lossy]))
        assert multibyte_merge_count(tok) >= 5, family
        result[family] = (tok, cfg)
    return result


# ---------------------------------------------------------------------------------------------
# Models.

COMMON = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
              num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)

# arch -> (tokenizer family, dtype on disk)
ARCHS = {
    "llama": ("llama3", torch.float32),
    "mistral": ("llama2", torch.bfloat16),
    "qwen2": ("qwen2", torch.float32),
    "qwen3": ("qwen2", torch.bfloat16),
    "gemma": ("gemma", torch.float32),
    "phi3": ("llama2", torch.float16),
    "gpt2": ("gpt2", torch.float32),
}

DTYPE_NAMES = {torch.float32: "float32", torch.bfloat16: "bfloat16", torch.float16: "float16"}

INIT_STD = 0.08


def make_config(arch, tok):
    from transformers import (LlamaConfig, MistralConfig, Qwen2Config, Qwen3Config,
                              GemmaConfig, Phi3Config, GPT2Config)
    vocab = tok.get_vocab_size(with_added_tokens=True)
    tid = tok.token_to_id
    if arch == "llama":
        # Llama 3.1 style: rope_scaling llama3 and a list of EOS ids. theta 1e5 puts the 8
        # frequencies of head_dim 16 in all three bands (kept, smoothed, divided by factor).
        return LlamaConfig(
            vocab_size=vocab, **COMMON, head_dim=16, hidden_act="silu", rms_norm_eps=1e-5,
            rope_theta=100000.0,
            rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                          "high_freq_factor": 4.0, "original_max_position_embeddings": 32},
            tie_word_embeddings=True, attention_bias=False, mlp_bias=False,
            initializer_range=INIT_STD, bos_token_id=tid("<|begin_of_text|>"),
            eos_token_id=[tid("<|end_of_text|>"), tid("<|eot_id|>")])
    if arch == "mistral":
        return MistralConfig(
            vocab_size=vocab, **COMMON, head_dim=16, hidden_act="silu", rms_norm_eps=1e-5,
            rope_theta=10000.0, sliding_window=8, tie_word_embeddings=False,
            initializer_range=INIT_STD, bos_token_id=tid("<s>"), eos_token_id=tid("</s>"))
    if arch == "qwen2":
        return Qwen2Config(
            vocab_size=vocab, **COMMON, hidden_act="silu", rms_norm_eps=1e-6,
            rope_theta=1000000.0, use_sliding_window=False, tie_word_embeddings=True,
            initializer_range=INIT_STD, bos_token_id=tid("<|endoftext|>"),
            eos_token_id=tid("<|im_end|>"))
    if arch == "qwen3":
        return Qwen3Config(
            vocab_size=vocab, **COMMON, head_dim=32, hidden_act="silu", rms_norm_eps=1e-6,
            rope_theta=1000000.0, attention_bias=False, use_sliding_window=False,
            tie_word_embeddings=False, initializer_range=INIT_STD,
            bos_token_id=tid("<|endoftext|>"), eos_token_id=tid("<|endoftext|>"))
    if arch == "gemma":
        return GemmaConfig(
            vocab_size=vocab, **COMMON, head_dim=32, hidden_act="gelu_pytorch_tanh",
            hidden_activation="gelu_pytorch_tanh", rms_norm_eps=1e-6, rope_theta=10000.0,
            tie_word_embeddings=True, initializer_range=INIT_STD, pad_token_id=tid("<pad>"),
            bos_token_id=tid("<bos>"), eos_token_id=tid("<eos>"))
    if arch == "phi3":
        return Phi3Config(
            vocab_size=vocab, **COMMON, hidden_act="silu", rms_norm_eps=1e-5,
            rope_theta=10000.0, tie_word_embeddings=False, initializer_range=INIT_STD,
            bos_token_id=tid("<s>"), eos_token_id=tid("</s>"), pad_token_id=None)
    if arch == "gpt2":
        eot = tid("<|endoftext|>")
        return GPT2Config(
            vocab_size=vocab, n_positions=128, n_embd=64, n_layer=2, n_head=4, n_inner=128,
            activation_function="gelu_new", layer_norm_epsilon=1e-5,
            initializer_range=INIT_STD, tie_word_embeddings=True, bos_token_id=eot,
            eos_token_id=eot)
    raise ValueError(arch)


def perturb_(model, seed):
    """Make every parameter matter: norm weights off 1 (Gemma: off 0), biases non-zero."""
    g = torch.Generator().manual_seed(seed + 1000)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1:
                noise = torch.randn(p.shape, generator=g, dtype=torch.float32)
                if name.endswith("bias"):
                    p.copy_(0.05 * noise)
                else:
                    p.add_(0.1 * noise)


def hub_style_config(path, arch):
    """transformers 5 writes "rope_parameters" and "dtype"; released checkpoints (made with
    transformers 4) have "rope_theta", "rope_scaling" and "torch_dtype". Rewrite config.json in
    that released form, except for qwen3, which keeps the transformers-5 spelling so that the
    fixtures hold both."""
    with open(path) as f:
        cfg = json.load(f)
    if arch == "qwen3":
        return cfg
    out = {}
    for k, v in cfg.items():
        if k == "dtype":
            out["torch_dtype"] = v
        elif k == "rope_parameters":
            rp = dict(v)
            theta = rp.pop("rope_theta", None)
            if theta is not None:
                out["rope_theta"] = theta
            if rp.get("rope_type", "default") == "default":
                out["rope_scaling"] = None
            else:
                out["rope_scaling"] = rp
        else:
            out[k] = v
    write_json(path, dict(sorted(out.items())))
    return out


def load(model_dir, dtype):
    from transformers import AutoModelForCausalLM
    m = AutoModelForCausalLM.from_pretrained(model_dir, dtype=dtype, attn_implementation="eager")
    m.eval()
    return m


@torch.no_grad()
def logits_of(model, ids):
    return model(input_ids=ids).logits.float()


@torch.no_grad()
def greedy(model, prompt, n):
    ids = prompt.clone()
    gaps = []
    for _ in range(n):
        last = model(input_ids=ids).logits[0, -1].double()
        top2 = torch.topk(last, 2).values
        gaps.append(float(top2[0] - top2[1]))
        nxt = int(torch.argmax(last))
        ids = torch.cat([ids, torch.tensor([[nxt]], dtype=torch.long)], dim=1)
    return ids[0, prompt.shape[1]:].tolist(), min(gaps)


@torch.no_grad()
def perplexity(model, ids, ctx):
    n = len(ids) // ctx
    windows = torch.tensor(ids[: n * ctx], dtype=torch.long).view(n, ctx)
    total, count = 0.0, 0
    for start in range(0, n, 16):
        batch = windows[start:start + 16]
        logits = model(input_ids=batch).logits.float()
        logp = torch.log_softmax(logits.double(), dim=-1)
        # positions 0..ctx-2 predict tokens 1..ctx-1 (the window's tokens 2..ctx)
        tgt = batch[:, 1:]
        lp = logp[:, :-1].gather(-1, tgt.unsqueeze(-1)).squeeze(-1)
        total += float(-lp.sum())
        count += tgt.numel()
    nll = total / count
    return {"file": "heldout.txt", "ctx": ctx, "tokens": count, "nll": nll,
            "perplexity": math.exp(nll)}


def generation_config(arch, config, tok):
    tid = tok.token_to_id
    gen = {"bos_token_id": config.bos_token_id, "eos_token_id": config.eos_token_id}
    if arch == "llama":  # as Llama 3.1 ships it
        gen.update({"do_sample": True, "temperature": 0.6, "top_p": 0.9})
    if arch == "qwen2":  # as Qwen2.5-Instruct: stop at <|im_end|> or <|endoftext|>
        gen.update({"eos_token_id": [tid("<|im_end|>"), tid("<|endoftext|>")],
                    "pad_token_id": tid("<|endoftext|>"), "do_sample": True,
                    "temperature": 0.7, "top_p": 0.8, "top_k": 20, "repetition_penalty": 1.05})
    if arch == "gemma":
        gen["pad_token_id"] = tid("<pad>")
    gen["transformers_version"] = transformers.__version__
    return gen


def save_model(arch, family, dtype, tok, tok_dir, prompt_ids, heldout_ids):
    from transformers import AutoModelForCausalLM
    d = os.path.join(MODELS_DIR, arch)
    for attempt in range(20):
        seed = 1234 + 101 * attempt + sum(map(ord, arch))
        if os.path.isdir(d):
            shutil.rmtree(d)
        os.makedirs(d)
        torch.manual_seed(seed)
        config = make_config(arch, tok)
        model = AutoModelForCausalLM.from_config(config, attn_implementation="eager")
        perturb_(model, seed)
        model = model.to(dtype)
        kw = {}
        if arch == "mistral":
            kw["max_shard_size"] = "260KB"
        model.save_pretrained(d, **kw)
        hub_style_config(os.path.join(d, "config.json"), arch)
        write_json(os.path.join(d, "generation_config.json"),
                   generation_config(arch, config, tok))
        shutil.copy(os.path.join(tok_dir, "tokenizer.json"), d)
        shutil.copy(os.path.join(tok_dir, "tokenizer_config.json"), d)

        m32 = load(d, torch.float32)
        prompt = torch.tensor([prompt_ids], dtype=torch.long)
        greedy_ids, gap = greedy(m32, prompt, GREEDY_NEW)
        if gap > MIN_TOP2_GAP:
            break
        log("  %s seed %d: top-2 gap %.2e too small, reseeding" % (arch, seed, gap))
    else:
        raise RuntimeError("no seed gave clear greedy steps for " + arch)

    logits = logits_of(m32, prompt)
    mbf = load(d, torch.bfloat16)
    logits_bf16 = logits_of(mbf, prompt)
    ppl = perplexity(m32, heldout_ids, PPL_CTX)
    save_file({"input_ids": prompt.contiguous(), "logits": logits.contiguous(),
               "logits_bf16": logits_bf16.contiguous()},
              os.path.join(d, "reference.safetensors"))
    ref = {"prompt_ids": prompt_ids, "greedy_ids": greedy_ids, "perplexity": ppl,
           "torch_dtype_on_disk": DTYPE_NAMES[dtype], "seed": seed,
           "min_top2_gap": gap, "logits_absmax": float(logits.abs().max()),
           "logits_std": float(logits.std())}
    write_json(os.path.join(d, "reference.json"), ref)
    checks(arch, d, m32, prompt, logits)
    return ref


def checks(arch, d, m32, prompt, logits):
    files = sorted(os.listdir(d))
    if arch == "mistral":
        shards = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
        assert [f for f in files if f.startswith("model")] == \
            shards + ["model.safetensors.index.json"], files
        with open(os.path.join(d, "model.safetensors.index.json")) as f:
            index = json.load(f)
        assert set(index["weight_map"].values()) == set(shards)
        # The sliding window must matter for this prompt: positions < 8 equal the full
        # causal result, later ones differ.
        from transformers import AutoModelForCausalLM
        import copy
        cfg = copy.deepcopy(m32.config)
        cfg.sliding_window = None
        full = AutoModelForCausalLM.from_config(cfg, attn_implementation="eager")
        full.load_state_dict(m32.state_dict())
        full.eval()
        lf = logits_of(full, prompt)
        assert torch.allclose(lf[:, :8], logits[:, :8], atol=1e-5)
        assert (lf[:, 8:] - logits[:, 8:]).abs().max() > 1e-3
    else:
        assert "model.safetensors" in files, files
    with open(os.path.join(d, "config.json")) as f:
        cfg = json.load(f)
    if arch == "llama":
        rp = m32.config.rope_parameters
        assert rp["rope_type"] == "llama3" and rp["factor"] == 8.0, rp
        assert cfg["rope_scaling"]["rope_type"] == "llama3" and cfg["rope_theta"] == 100000.0
        assert isinstance(cfg["eos_token_id"], list)
    if arch == "qwen3":
        assert "rope_parameters" in cfg and "dtype" in cfg
    if arch in ("qwen2", "qwen3"):
        assert all(t == "full_attention" for t in m32.config.layer_types)


def summary():
    log("\nsummary (re-loaded from disk):")
    from transformers import AutoModelForCausalLM, AutoTokenizer
    with open(os.path.join(TOKENIZERS_DIR, "texts.json"), encoding="utf-8") as f:
        texts = json.load(f)
    for arch in ARCHS:  # transformers' own tokenizer loading agrees with `tokenizers`
        d = os.path.join(MODELS_DIR, arch)
        hf, ref = AutoTokenizer.from_pretrained(d), Tokenizer.from_file(
            os.path.join(d, "tokenizer.json"))
        for t in texts:
            assert hf(t, add_special_tokens=True)["input_ids"] == ref.encode(t).ids, (arch, t)
    for family in FAMILIES:
        p = os.path.join(TOKENIZERS_DIR, family, "tokenizer.json")
        tok = Tokenizer.from_file(p)
        log("  tokenizers/%-9s vocab %5d  %7d bytes" % (
            family, tok.get_vocab_size(with_added_tokens=True), os.path.getsize(p)))
    for arch in ARCHS:
        d = os.path.join(MODELS_DIR, arch)
        m = AutoModelForCausalLM.from_pretrained(d)
        dtypes = sorted({str(p.dtype).replace("torch.", "") for p in m.parameters()})
        size = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))
        with open(os.path.join(d, "reference.json")) as f:
            ref = json.load(f)
        log("  models/%-8s %-18s params %7d  dtypes %-10s  dir %8d bytes  ppl %.2f" % (
            arch, type(m).__name__, sum(p.numel() for p in m.parameters()),
            ",".join(dtypes), size, ref["perplexity"]["perplexity"]))
    total = 0
    for root, _, files in os.walk(FIXTURES):
        total += sum(os.path.getsize(os.path.join(root, f)) for f in files)
    log("  total %d bytes" % total)


def main():
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(2)
    corpus = read_text("corpus.txt")
    heldout = read_text("heldout.txt")
    write_json(os.path.join(FIXTURES, "VERSIONS.json"), {
        "python": sys.version.split()[0], "torch": torch.__version__,
        "transformers": transformers.__version__, "tokenizers": tokenizers.__version__,
        "safetensors": safetensors.__version__, "numpy": np.__version__,
        "script": "scripts/make_pretrained_fixtures.py"})
    toks = build_tokenizers(corpus)
    if os.path.isdir(MODELS_DIR):
        shutil.rmtree(MODELS_DIR)
    os.makedirs(MODELS_DIR)
    for arch, (family, dtype) in ARCHS.items():
        tok, _ = toks[family]
        heldout_ids = tok.encode(heldout, add_special_tokens=False).ids
        prompt_ids = heldout_ids[:PROMPT_LEN]
        ref = save_model(arch, family, dtype, tok, os.path.join(TOKENIZERS_DIR, family),
                         prompt_ids, heldout_ids)
        log("model %-8s (%s, %s) seed %d  min top-2 gap %.3g  logits std %.3f  nll %.4f" % (
            arch, family, DTYPE_NAMES[dtype], ref["seed"], ref["min_top2_gap"],
            ref["logits_std"], ref["perplexity"]["nll"]))
    summary()


if __name__ == "__main__":
    main()
