#!/usr/bin/env python3
"""Writes tests/data/fixtures/tokenizer_components.json: Hugging Face tokenizers' output for
each normalizer, pre-tokenizer and decoder ember implements, over a few texts, and whole small
tokenizers that exercise the added tokens' lstrip, rstrip, single_word and normalized flags
and fuse_unk. Development time only: needs the `tokenizers` package (a venv outside the repo).

Usage: python3 scripts/make_tokenizer_cases.py > tests/data/fixtures/tokenizer_components.json
"""
import json
from tokenizers import Tokenizer, pre_tokenizers as P, normalizers as N, decoders as D
texts = ["Hello, world! 123 4567 x2y", "  two  spaces\tand\ttabs\n", "naïve café ½ Ⅻ ٣٤", "", "a-b_c--d..e",
         "▁already▁there  x", "中文，测试。", " lead", "#!$%&()*+", "won't stop'n"]
cases = []
def pt(cfg, obj):
    for t in texts:
        cases.append({"kind": "pre_tokenizer", "json": cfg, "input": t, "output": [s for s, _ in obj.pre_tokenize_str(t)]})
pt({"type": "Digits", "individual_digits": True}, P.Digits(individual_digits=True))
pt({"type": "Digits", "individual_digits": False}, P.Digits(individual_digits=False))
pt({"type": "Whitespace"}, P.Whitespace())
pt({"type": "WhitespaceSplit"}, P.WhitespaceSplit())
pt({"type": "BertPreTokenizer"}, P.BertPreTokenizer())
for b in ["isolated", "removed", "merged_with_previous", "merged_with_next", "contiguous"]:
    pt({"type": "Punctuation", "behavior": {"isolated":"Isolated","removed":"Removed","merged_with_previous":"MergedWithPrevious","merged_with_next":"MergedWithNext","contiguous":"Contiguous"}[b]}, P.Punctuation(behavior=b))
from tokenizers import Regex
for b in ["isolated", "removed", "merged_with_previous", "merged_with_next", "contiguous"]:
    B = {"isolated":"Isolated","removed":"Removed","merged_with_previous":"MergedWithPrevious","merged_with_next":"MergedWithNext","contiguous":"Contiguous"}[b]
    for inv in [False, True]:
        pt({"type": "Split", "pattern": {"Regex": r"\s+|\d"}, "behavior": B, "invert": inv}, P.Split(Regex(r"\s+|\d"), behavior=b, invert=inv))
        pt({"type": "Split", "pattern": {"String": "t"}, "behavior": B, "invert": inv}, P.Split("t", behavior=b, invert=inv))
for scheme in ["always", "first", "never"]:
    for split in [True, False]:
        pt({"type": "Metaspace", "replacement": "▁", "prepend_scheme": scheme, "split": split}, P.Metaspace(replacement="▁", prepend_scheme=scheme, split=split))
for aps in [True, False]:
    for ur in [True, False]:
        pt({"type": "ByteLevel", "add_prefix_space": aps, "trim_offsets": True, "use_regex": ur}, P.ByteLevel(add_prefix_space=aps, use_regex=ur))
pt({"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}, {"type": "Digits", "individual_digits": True}, {"type": "ByteLevel", "add_prefix_space": False, "use_regex": False}]},
   P.Sequence([P.WhitespaceSplit(), P.Digits(individual_digits=True), P.ByteLevel(add_prefix_space=False, use_regex=False)]))
ntexts = texts + ["Ünïcödé ﬁ Å Ⅻ ①", "MiXeD CaSe ÀÉ", "İSTANBUL ΣΑΣ ǅ ẞ"]
def nm(cfg, obj):
    for t in ntexts:
        cases.append({"kind": "normalizer", "json": cfg, "input": t, "output": obj.normalize_str(t)})
nm({"type": "NFC"}, N.NFC()); nm({"type": "NFD"}, N.NFD()); nm({"type": "NFKC"}, N.NFKC()); nm({"type": "NFKD"}, N.NFKD())
nm({"type": "Lowercase"}, N.Lowercase())
nm({"type": "Strip", "strip_left": True, "strip_right": True}, N.Strip(left=True, right=True))
nm({"type": "Strip", "strip_left": False, "strip_right": True}, N.Strip(left=False, right=True))
nm({"type": "Prepend", "prepend": "▁"}, N.Prepend("▁"))
nm({"type": "Replace", "pattern": {"String": " "}, "content": "▁"}, N.Replace(" ", "▁"))
nm({"type": "Replace", "pattern": {"Regex": r"\s+"}, "content": "_"}, N.Replace(Regex(r"\s+"), "_"))
nm({"type": "Sequence", "normalizers": [{"type": "NFKC"}, {"type": "Lowercase"}, {"type": "Prepend", "prepend": "▁"}]}, N.Sequence([N.NFKC(), N.Lowercase(), N.Prepend("▁")]))
token_lists = [["▁Hello", "▁world", "<0xE4>", "<0xB8>", "<0xAD>", "!"], ["▁▁a▁b", "▁c"], ["<0x80>", "a", "<0xE4>", "<0xB8>"],
               ["ĠHello", "Ġworld", "Ċ", "ä¸Ń", "<|endoftext|>", "中"], ["  ab  ", "x", "  "], [], ["<0x+A>", "<0xzz>", "<0x41>"]]
def dc(cfg, obj):
    for t in token_lists:
        try:
            out = obj.decode(t)
        except BaseException:  # HF's Strip panics where its two cuts cross: no reference
            continue
        cases.append({"kind": "decoder", "json": cfg, "input": t, "output": out})
dc({"type": "ByteLevel"}, D.ByteLevel())
for scheme in ["always", "first", "never"]:
    dc({"type": "Metaspace", "replacement": "▁", "prepend_scheme": scheme, "split": True}, D.Metaspace(prepend_scheme=scheme))
dc({"type": "ByteFallback"}, D.ByteFallback())
dc({"type": "Fuse"}, D.Fuse())
dc({"type": "Replace", "pattern": {"String": "▁"}, "content": " "}, D.Replace("▁", " "))
dc({"type": "Strip", "content": " ", "start": 2, "stop": 1}, D.Strip(" ", 2, 1))
dc({"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "}, {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
   D.Sequence([D.Replace("▁", " "), D.ByteFallback(), D.Fuse(), D.Strip(" ", 1, 0)]))
from tokenizers import models, AddedToken
chars = "abcdefghijklmnopqrstuvwxyz <>[]_-.!"
vocab = {"<unk>": 0}
for c in chars: vocab[c] = len(vocab)
merges = [("a", "b"), ("ab", "c"), ("c", "d"), (" ", "a"), ("x", "y")]
for a, b in merges: vocab.setdefault(a + b, len(vocab))
def full(name, normalizer, pre, decoder, added, texts2, extra=None):
    m = models.BPE(vocab=dict(vocab), merges=list(merges), unk_token="<unk>", **(extra or {}))
    t = Tokenizer(m)
    if normalizer: t.normalizer = normalizer
    if pre: t.pre_tokenizer = pre
    if decoder: t.decoder = decoder
    t.add_tokens(added)
    cfg = json.loads(t.to_str())
    for text in texts2:
        ids = t.encode(text, add_special_tokens=False).ids
        cases.append({"kind": "tokenizer", "name": name, "json": cfg, "input": text, "output": ids,
                      "decoded": t.decode(ids, skip_special_tokens=False), "decoded_skip": t.decode(ids, skip_special_tokens=True)})
added = [AddedToken("<L>", lstrip=True, special=True, normalized=False), AddedToken("<R>", rstrip=True, special=True, normalized=False),
         AddedToken("<W>", single_word=True, normalized=False), AddedToken("<N>", normalized=True), AddedToken("<LR>", lstrip=True, rstrip=True, normalized=False),
         AddedToken("[x]", special=True, normalized=False), AddedToken("[xy]", normalized=False)]
atexts = ["ab <L> ab", "ab   <L>", "<R>  ab", "ab <R>  <L> cd", "x<W>y", "x <W> y", "<W>", "é<W>", "AB <N> <n> cD", "A<N>b",
          "[x][xy][xyz] abc", "  <LR>  mid  <LR>  ", "", "zz<unknown>", "abcd xy ab-c", "ab<L><L>", "ÿ é"]
full("added", N.Lowercase(), None, None, added, atexts)
full("added_no_normalizer", None, P.WhitespaceSplit(), D.Fuse(), added, atexts)
full("fuse_unk", None, None, None, [], ["aé€b", "éé ab", "ÀÀÀ"], {"fuse_unk": True})
full("no_fuse_unk", None, None, None, [], ["aé€b", "éé ab", "ÀÀÀ"], {"fuse_unk": False})
# continuing_subword_prefix and end_of_word_suffix.
t = Tokenizer(models.BPE(vocab={"a": 0, "##b": 1, "b": 2, "c</w>": 3, "##c</w>": 4, "ab": 5, "<unk>": 6, "##bc</w>": 7},
                         merges=[("a", "##b"), ("##b", "##c</w>")], continuing_subword_prefix="##",
                         end_of_word_suffix="</w>", unk_token="<unk>"))
t.pre_tokenizer = P.WhitespaceSplit()
for text in ["abc", "ab", "c", "a", "b bc abc", "abbc"]:
    ids = t.encode(text, add_special_tokens=False).ids
    cases.append({"kind": "tokenizer", "name": "subword_affixes", "json": json.loads(t.to_str()), "input": text, "output": ids,
                  "decoded": t.decode(ids, skip_special_tokens=False), "decoded_skip": t.decode(ids, skip_special_tokens=True)})
# Byte-level BPE with added tokens the byte-level alphabet does not spell.
byte_vocab = {c: i for i, c in enumerate(sorted(P.ByteLevel.alphabet()))}
t = Tokenizer(models.BPE(vocab=byte_vocab, merges=[]))
t.pre_tokenizer = P.ByteLevel(add_prefix_space=True)
t.decoder = D.ByteLevel()
t.add_special_tokens([AddedToken("<|中|>", special=True, normalized=False)])
t.add_tokens([AddedToken("naïve", normalized=False), AddedToken(" ok", normalized=False, single_word=True)])
for text in ["a <|中|> naïve é", "<|中|><|中|>", "so ok", "so ok!", "oki ok"]:
    ids = t.encode(text, add_special_tokens=False).ids
    cases.append({"kind": "tokenizer", "name": "byte_level_added", "json": json.loads(t.to_str()), "input": text, "output": ids,
                  "decoded": t.decode(ids, skip_special_tokens=False), "decoded_skip": t.decode(ids, skip_special_tokens=True)})
# Long texts through whole fixture tokenizers: without a pre-tokenizer the text is one word,
# which ember cuts where no merge can join (Note [Long words] in src/data/tokenizers/bpe.cpp).
import pathlib
fixtures = pathlib.Path(__file__).resolve().parent.parent / "tests/fixtures/pretrained"
long_text = (fixtures / "heldout.txt").read_text()[:4000] + " 中文 😀 ÀÉ\n\n  end"
for family in ["gpt2", "llama3", "qwen2", "llama2", "metaspace", "gemma"]:
    t = Tokenizer.from_file(str(fixtures / "tokenizers" / family / "tokenizer.json"))
    cases.append({"kind": "family", "name": family, "input": long_text, "output": t.encode(long_text, add_special_tokens=False).ids})
import tokenizers
print(json.dumps({"tokenizers_version": tokenizers.__version__, "cases": cases}, ensure_ascii=False, separators=(",", ":")).replace('{"kind"', '\n{"kind"'))
