#!/usr/bin/env python3
"""Writes the reference fixtures of the Unicode and regex tests (development time only):

  tests/data/fixtures/unicode_reference.json  NFC/NFD/NFKC/NFKD of tricky strings, categories,
      case mappings (Python's unicodedata), and the code points Oniguruma's \\s \\w \\d match
  tests/data/fixtures/regex_reference.json    the matches of the real pre-tokenizer patterns
      (GPT-2, Llama-3, Qwen2, o200k) and of patterns for each engine feature on tricky texts

The regex ground truth is Hugging Face `tokenizers` (its Split pre-tokenizer runs Oniguruma,
as tokenizer.json files are run): run with a Python that has it, e.g.
    /work/torchenv/bin/python scripts/gen_unicode_reference.py
Offsets are in code points. Python's Unicode version must match the one of
src/data/tokenizers/unicode_tables.inc (scripts/gen_unicode_tables.py).
"""
import json
import pathlib
import random
import sys
import unicodedata

from tokenizers import Regex, pre_tokenizers

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests/data/fixtures"

PATTERNS = {
    "gpt2": r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+",
    "llama3": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    "qwen2": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    "o200k": r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
             r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
             r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+",
}

TEXTS = [
    "Hello world",
    "I'LL don't you'RE WE'VE it's I'm she'd they'D",
    "  leading and trailing spaces   ",
    "\n\n  indented\n\tTabbed\r\nWindows line\r\n",
    "digits 1234567890 and 12,345.67 and \u0661\u0662\u0663\u0664 and \u00b2\u00b3 and \u216b",
    "na\u00efve caf\u00e9 r\u00e9sum\u00e9 \u00dcn\u00efc\u00f6d\u00e9",
    "e\u0301 combining acute, a\u0308\u0304 and \u0301leading mark",
    "\u4e2d\u6587\u5b57\u7b26\u6d4b\u8bd5\uff0c\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3001\ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8",
    "emoji \U0001F600\U0001F44D\U0001F3FD family \U0001F468\u200d\U0001F469\u200d\U0001F467 flags \U0001F1EB\U0001F1F7",
    "def foo(x):\n    return x**2 + 1  # comment\n",
    "int main() { printf(\"%d\\n\", a[i]); }",
    "URL: https://example.com/path?q=1&r=2",
    "ALLCAPS CamelCase mixedCASE lowerUPPER",
    "\u01c4emo \u01c5ungla \u01c6 titlecase \u1f88\u1f89",
    "   ",
    "",
    "a",
    "tabs\t\t\tand\u00a0nbsp\u3000ideographic",
    "!!!???...,,, ---",
    "'s'S'T 'Re 'VE'm 'LL'd '' ' s",
    "hello\n\nworld \n \n  end  \n",
    "\u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac \u0420\u0443\u0441\u0441\u043a\u0438\u0439 \u0627\u0644\u0639\u0631\u0628\u064a\u0629 \u05e2\u05d1\u05e8\u05d9\u05ea",
    "\u0939\u093f\u0928\u094d\u0926\u0940 \u092d\u093e\u0937\u093e \u0ba4\u0bae\u0bbf\u0bb4\u0bcd",
    "x\u200by\u200dz",
    "\ufb01le \ufb00 Stra\u00dfe STRASSE \u01f0",
    "7 77 777 7777 77777",
    "foo/bar/baz\n//comment\n/// doc",
    "mixed1234abc 12ab 1a2b3c",
    "\u0085next line\u2028line sep\u2029para",
    "\U0001D518\U0001D52B\U0001D526\U0001D520\U0001D52C\U0001D521\U0001D522 \U0001D7D9\U0001D7DA\U0001D7DB math",
    "\u0149 Kelvin \u212a and long \u017f's '\u017f",
    "The year 2024's end; it's 3:45pm.",
    "trailing newline\n",
    "\r\r\n\n\r",
    "  \n\n  ",
    "word    \n   next",
]

# Patterns for the engine's features, run on FEATURE_TEXTS. tokenizers drops empty pieces, so
# the references hold the non-empty matches only (the tests compare those).
FEATURE_PATTERNS = [
    r"\w+", r"\d+", r"\s+", r"\S+", r"\W+", r"\D+",
    r"[a-c]+?x", r"a*?b", r"\p{L}+?\p{N}", r"[a-z]++[a-z]|\d+", r"(?:ab)++b|x", r"(?>a+)b|b",
    r"\p{L}+(?=\d)", r"\d+(?!\.)", r"\d{2}", r"\d{2,}", r"\d{,2}x", r"(?:ab){1,2}", r"a{2}?b",
    r"^\w+", r"\w+$", r"\bfoo\b", r"\Bo+", r"\A\w", r"\w\z", r"\w\Z",
    r"[^a-z\s]+", r"[\p{Lu}\d]+", r"[a\-z]+", r"[-+*/]+", r"[]a]+", r"[^]a\s]+",
    r"(?i:[a-z]+)", r"(?i)hello|world", r"(?i:k)", r"(?i:[^a-z\s])+",
    r"a.c", r".+", r"\p{Uppercase_Letter}+", r"\p{^L}+", r"\P{L}+", r"\p{ll}+", r"\p{Lo}\p{M}*",
    r"\x41\x{42}\u0043", r"\t+", r"\\", r"\.", r"((a|b)c)+", r"(a|ab)(c|bcd)", r"(?:a|b)*c",
    r"x|y|\s+(?!\S)",
    # Loops whose iterations can match nothing, and ^ at the end of the text, where a random
    # comparison once found the engine and Oniguruma apart.
    r"(\W?+|\d*?|\S++)++|s{2}", r"(?:x?|ab){1,2}c", r"^'{0,2}x{1,2}?| [\r\n]^", r"(\b){2}a|($)*b|(?i:^|a)+x",
    r"\B(\s\W{1,3}|b{0,2}k?|[^a\s]++ *+){1,3}(?!\p{Lu}++)|[^\s\p{L}\p{N}]{2}(?> *+)+?(\p{Lu}+|\b){1,3}",
]
FEATURE_TEXTS = [
    "abc ABC aBc x 123 45.6 foo foobar Foo\nbar\n abx acbx a-z [a] +-*/ \\ . \t\t end",
    "aaab abab ababb aab b ccx AbC a1b2 hello HELLO World K \u212a k abcd acbcd",
    "Caf\u00e9 \u00c9T\u00c9 \u4e2d\u6587 \u0915\u093f 12345 \u0661\u0662 \u00b2 \u216b ab_c \u24b6\u24d0 x\u200dy  \n",
    "\u4e2d!\u4e2dK bB4K?\u00c9b2b\u0301\\n\u0301\u0301 1 ax \u017f,_ abababc 42\t\tK\u017f2\u4e2d \n",
]

# Random patterns over the supported constructs, each on a random text: a broad comparison
# with Oniguruma beyond the hand-picked cases (patterns Oniguruma refuses are left out).
RANDOM_ATOMS = ["a", "b", "A", "'", " ", "\\s", "\\S", "\\d", "\\w", "\\W", "\\p{L}", "\\p{Lu}", "\\p{Ll}", "\\p{N}",
                "\\P{L}", ".", "[ab]", "[^a\\s]", "[\\p{L}\\d]", "[a-c]", "\\n", "[\\r\\n]", "x", "\u00e9", "\\p{M}",
                "[^\\s\\p{L}\\p{N}]", "k", "s"]
RANDOM_QUANTIFIERS = ["", "", "", "?", "*", "+", "??", "*?", "+?", "?+", "*+", "++", "{2}", "{1,3}", "{2,}", "{0,2}", "{1,2}?"]
RANDOM_TEXT_CHARACTERS = "aabbAB' \n\t1234xk\u00e9\u0301\u00c9\u4e2d!?.,\u017fK\u212a\r_"


def random_pattern(rng, depth=0):
    alternatives = []
    for _ in range(rng.randint(1, 3)):
        sequence = ""
        for _ in range(rng.randint(1, 3)):
            roll = rng.random()
            if roll < 0.15 and depth < 3:
                opener = rng.choice(["(?:", "(", "(?=", "(?!", "(?i:", "(?>"])
                atom = opener + random_pattern(rng, depth + 1) + ")"
                if opener in ("(?=", "(?!"):
                    sequence += atom
                    continue
            elif roll < 0.2:
                sequence += rng.choice(["^", "$", "\\b", "\\B", "\\A", "\\z"])
                continue
            else:
                atom = rng.choice(RANDOM_ATOMS)
            sequence += atom + rng.choice(RANDOM_QUANTIFIERS)
        alternatives.append(sequence)
    return "|".join(alternatives)


def random_cases(count, seed):
    rng = random.Random(seed)
    cases = []
    while len(cases) < count:
        pattern = random_pattern(rng)
        text = "".join(rng.choice(RANDOM_TEXT_CHARACTERS) for _ in range(rng.randint(0, 20)))
        try:
            cases.append({"pattern": pattern, "text": text, "matches": matches(pattern, text)})
        except BaseException:  # refused by Oniguruma, or over its backtracking limit (a Rust panic)
            continue
    return cases


def matches(pattern, text):
    """Oniguruma's matches, as tokenizers' Split sees them: (begin, end) in code points."""
    split = pre_tokenizers.Split(Regex(pattern), "removed", invert=True)
    result = []
    for piece, (begin, end) in split.pre_tokenize_str(text):
        assert text[begin:end] == piece, (pattern, text, piece, begin, end)
        result.append([begin, end])
    return result


def covered_exactly(pattern, text, found):
    """For the real patterns every code point belongs to some match: check that the isolated
    split (matches and gaps) has no gaps, so no empty match can hide."""
    isolated = pre_tokenizers.Split(Regex(pattern), "isolated").pre_tokenize_str(text)
    return [list(offsets) for _, offsets in isolated] == found


def onig_property_ranges(pattern):
    """The assigned code points (in Python's Unicode version) that `pattern` (one code point,
    e.g. \\w) matches in Oniguruma, as [first, last] ranges."""
    codepoints = [cp for cp in range(0x110000)
                  if not 0xD800 <= cp <= 0xDFFF and unicodedata.category(chr(cp)) != "Cn"]
    text = "".join(chr(cp) for cp in codepoints)
    hit = set()
    for begin, end in matches(pattern + "+", text):
        hit.update(codepoints[begin:end])
    ranges = []
    for cp in sorted(hit):
        if ranges and ranges[-1][1] + 1 == cp:
            ranges[-1][1] = cp
        else:
            ranges.append([cp, cp])
    return ranges


NORMALIZATION_STRINGS = [
    "", "plain ASCII", "caf\u00e9", "cafe\u0301", "\u212b", "\u2126", "\u00c5\u0301", "\ufb01", "\u2460",
    "\u01c5", "\ud55c\uad6d\uc5b4", "\u1112\u1161\u11ab", "\u1100\u1161\u11a8", "\uac00\u11a8", "\uac00\u1161",
    "\u0344", "\u0958", "a\u0328\u0301\u0323", "q\u0307\u0323", "\u1e0b\u0323", "\u1e9b\u0323", "\u0f73",
    "\uf900", "x\u0300\u0300", "\u0301a", "\u0301\u0300", "\uff76\uff9e", "\U0001d15e", "\u0390",
    "\u03a9\u0308\u0301", "\u00bd \u00b2 \u2075 \u33a1", "\u3000\u00a0\u2002", "\u1e9b", "\ufdfa",
    "o\u0302\u0300\u0323", "\u0041\u030a\u0327", "\u0e40\u0e37\u0e48\u0e2d", "\u09c7\u09be", "\u0b47\u0b3e\u0b56",
    "\u1100\u1100\u1161", "\u115f\u1161", "\uac00\u11a7", "\U0001109a", "\U00011099\U000110ba",
    "\u0623\u0655", "\u05e9\u05bc\u05c1", "\ufb2c", "\u2000\u2001", "\u00e0\u0316", "e\u0316\u0300\u0301",
]


def random_normalization_strings(count, length, seed):
    rng = random.Random(seed)
    pools = [range(0x41, 0x7b), range(0xc0, 0x250), range(0x300, 0x370), range(0x1100, 0x1176),
             range(0x11a8, 0x11c3), range(0xac00, 0xac40), range(0x1e00, 0x1f00), range(0xfb00, 0xfb50),
             range(0x3300, 0x3340), range(0xff00, 0xffa0), range(0x0590, 0x0600), range(0x0900, 0x0980)]
    result = []
    while len(result) < count:
        text = "".join(chr(rng.choice(rng.choice(pools))) for _ in range(length))
        if all(unicodedata.category(c) != "Cn" for c in text):
            result.append(text)
    return result


def unicode_reference():
    strings = NORMALIZATION_STRINGS + random_normalization_strings(60, 16, seed=26)
    normalization = [{"text": s, **{form.lower(): unicodedata.normalize(form, s) for form in ("NFC", "NFD", "NFKC", "NFKD")}}
                     for s in strings]
    rng = random.Random(7)
    sample = sorted(set(list(range(0x300)) + [rng.randrange(0x110000) for _ in range(1500)]
                        + [0x1F600, 0x10FFFF, 0xE000, 0xF0000, 0x20000, 0x2A6DF, 0xD800, 0xDFFF, 0xFFFF, 0x10000]))
    categories = [[cp, unicodedata.category(chr(cp))] for cp in sample]
    case_sample = sorted(set(list(range(0x250)) + list(range(0x370, 0x530)) + list(range(0x1e00, 0x2000))
                             + [0x130, 0x131, 0x17f, 0x212a, 0x212b, 0x1e9e, 0x10400, 0x10428, 0x1e900, 0x2c00, 0xa640]))
    lowercase = [[cp, ord(chr(cp).lower()) if len(chr(cp).lower()) == 1 else (0x69 if cp == 0x130 else cp)]
                 for cp in case_sample]
    folds = [[cp, ord(chr(cp).casefold()) if len(chr(cp).casefold()) == 1 else None] for cp in case_sample]
    return {
        "unicode_version": unicodedata.unidata_version,
        "normalization": normalization,
        "categories": categories,
        "lowercase": lowercase,
        "case_folds": folds,
        "combining_classes": [[cp, unicodedata.combining(chr(cp))] for cp in sorted(set(sample[::4] + list(range(0x300, 0x370))))],
        "oniguruma": {name: onig_property_ranges(p) for name, p in (("whitespace", r"\s"), ("word", r"\w"), ("digit", r"\d"))},
    }


def regex_reference():
    real = []
    for name, pattern in PATTERNS.items():
        cases = []
        for text in TEXTS:
            found = matches(pattern, text)
            assert covered_exactly(pattern, text, found), (name, text)
            cases.append({"text": text, "matches": found})
        real.append({"name": name, "pattern": pattern, "cases": cases})
    features = [{"pattern": p, "cases": [{"text": t, "matches": matches(p, t)} for t in FEATURE_TEXTS]}
                for p in FEATURE_PATTERNS]
    return {"generator": "scripts/gen_unicode_reference.py (tokenizers " + __import__("tokenizers").__version__ + ")",
            "real_patterns": real, "feature_patterns": features, "random_cases": random_cases(400, seed=26)}


def main():
    FIXTURES.mkdir(parents=True, exist_ok=True)
    for name, data in (("unicode_reference.json", unicode_reference()), ("regex_reference.json", regex_reference())):
        path = FIXTURES / name
        path.write_text(json.dumps(data, ensure_ascii=True, separators=(",", ":")) + "\n")
        print(f"wrote {path} ({path.stat().st_size} bytes)")


if __name__ == "__main__":
    sys.exit(main())
