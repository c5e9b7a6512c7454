#!/usr/bin/env python3
"""Writes src/data/tokenizers/unicode_tables.inc, the Unicode data behind ember's tokenizers
(general categories, canonical combining classes, decompositions, compositions, simple case
mappings), from Python's own `unicodedata` module: no download, no third-party package.

Usage: python3 scripts/gen_unicode_tables.py [REPO_ROOT]
The tables follow the Unicode version of the Python that runs the script (written in the
file's header); rerun it with a newer Python to move to a newer Unicode version.
"""
import pathlib
import sys
import unicodedata

MAX_CODE_POINT = 0x10FFFF
CATEGORIES = ["Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps",
              "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs",
              "Co", "Cn"]
# Hangul syllables decompose and compose algorithmically (unicode.cpp), not through the tables.
HANGUL_FIRST, HANGUL_LAST = 0xAC00, 0xD7A3


def is_hangul_syllable(cp):
    return HANGUL_FIRST <= cp <= HANGUL_LAST


def category_runs():
    """Runs of equal general category over all code points: (first code point, category)."""
    runs = []
    for cp in range(MAX_CODE_POINT + 1):
        category = unicodedata.category(chr(cp))
        if not runs or runs[-1][1] != category:
            runs.append((cp, category))
    return runs


def combining_class_runs():
    runs = []
    for cp in range(MAX_CODE_POINT + 1):
        ccc = unicodedata.combining(chr(cp))
        if not runs or runs[-1][1] != ccc:
            runs.append((cp, ccc))
    return runs


def full_decompositions(form, unless_equal_to=None):
    """Code points whose NFD (or NFKD) differs from themselves (and from their decomposition
    in the form `unless_equal_to`, so that NFKD lists only what NFD lacks), fully decomposed."""
    result = []
    for cp in range(MAX_CODE_POINT + 1):
        if is_hangul_syllable(cp) or 0xD800 <= cp <= 0xDFFF:
            continue
        decomposed = unicodedata.normalize(form, chr(cp))
        if decomposed == chr(cp):
            continue
        if unless_equal_to and decomposed == unicodedata.normalize(unless_equal_to, chr(cp)):
            continue
        result.append((cp, [ord(c) for c in decomposed]))
    return result


def primary_composites():
    """(first, second) -> composite for every canonical pair decomposition that NFC recomposes
    (composition exclusions, singletons and non-starter decompositions drop out by the test)."""
    pairs = []
    for cp in range(MAX_CODE_POINT + 1):
        if is_hangul_syllable(cp) or 0xD800 <= cp <= 0xDFFF:
            continue
        mapping = unicodedata.decomposition(chr(cp))
        if not mapping or mapping.startswith("<"):
            continue
        parts = [int(p, 16) for p in mapping.split()]
        if len(parts) == 2 and unicodedata.normalize("NFC", chr(cp)) == chr(cp):
            pairs.append((parts[0], parts[1], cp))
    pairs.sort()
    return pairs


def simple_case_runs(convert):
    """The code points whose mapping is one other code point, as runs (first, last, stride,
    delta): every stride-th code point from first to last maps to itself + delta (A-Z is
    stride 1, the alternating upper/lower pairs of Latin Extended-A are stride 2)."""
    pairs = []
    for cp in range(MAX_CODE_POINT + 1):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        mapped = convert(chr(cp))
        if len(mapped) == 1 and mapped != chr(cp):
            pairs.append((cp, ord(mapped) - cp))
    runs = []
    for cp, delta in pairs:
        if runs:
            first, last, stride, run_delta = runs[-1]
            step = cp - last
            if run_delta == delta and step in (1, 2) and (first == last or step == stride):
                runs[-1] = (first, cp, step, delta)
                continue
        runs.append((cp, cp, 1, delta))
    return runs


def lowercase(text):
    # str.lower() is the full mapping; U+0130 (I with dot above) lowers to "i\u0307" there, and
    # to plain "i" in the simple mapping of UnicodeData.txt.
    return "i" if text == "\u0130" else text.lower()


def casefold(text):
    # Simple case folding: str.casefold() where it gives one code point, else the lowercase
    # (CaseFolding.txt status S falls back to C/S; multi-character F folds are listed apart).
    folded = text.casefold()
    return folded if len(folded) == 1 else lowercase(text)


def multi_character_folds():
    return [(cp, [ord(c) for c in chr(cp).casefold()]) for cp in range(MAX_CODE_POINT + 1)
            if not 0xD800 <= cp <= 0xDFFF and len(chr(cp).casefold()) > 1]


def write_rows(out, rows, per_line=8):
    for i in range(0, len(rows), per_line):
        out.append("    " + " ".join(rows[i:i + per_line]))


def write_decompositions(out, name, decompositions):
    offsets, data = [], []
    for cp, parts in decompositions:
        offsets.append(f"{{0x{cp:X},{len(data)},{len(parts)}}},")
        data.extend(parts)
    out.append(f"constexpr Decomposition {name}[] = {{")
    write_rows(out, offsets, 6)
    out.append("};")
    out.append(f"constexpr char32_t {name}Data[] = {{")
    write_rows(out, [f"0x{cp:X}," for cp in data], 12)
    out.append("};")


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    out = [
        f"// Unicode {unicodedata.unidata_version} tables for src/data/tokenizers/unicode.cpp, generated",
        f"// by scripts/gen_unicode_tables.py from the unicodedata module of Python {sys.version.split()[0]}.",
        "// Do not edit: regenerate with `python3 scripts/gen_unicode_tables.py` (a newer Python gives",
        "// a newer Unicode version). Included once, by unicode.cpp, which defines the row types.",
        "",
        f'constexpr const char* kUnicodeVersion = "{unicodedata.unidata_version}";',
        "",
        "// General category runs: each row's category holds from its code point to the next row's.",
        "constexpr CategoryRun kCategoryRuns[] = {",
    ]
    write_rows(out, [f"{{0x{cp:X},{cat}}}," for cp, cat in category_runs()], 8)
    out += ["};", "", "// Canonical combining class runs, as the category runs.",
            "constexpr CombiningClassRun kCombiningClassRuns[] = {"]
    write_rows(out, [f"{{0x{cp:X},{ccc}}}," for cp, ccc in combining_class_runs()], 8)
    out += ["};", "", "// Full canonical (NFD) and compatibility (NFKD) decompositions, Hangul syllables",
            "// apart: {code point, offset into the data array, length}, sorted by code point."]
    write_decompositions(out, "kCanonicalDecompositions", full_decompositions("NFD"))
    out += ["// Compatibility rows only where NFKD differs from NFD; the canonical rows serve the rest."]
    write_decompositions(out, "kCompatibilityDecompositions", full_decompositions("NFKD", "NFD"))
    out += ["", "// Primary composites: {first, second, composite}, sorted by (first, second).",
            "constexpr Composition kCompositions[] = {"]
    write_rows(out, [f"{{0x{a:X},0x{b:X},0x{c:X}}}," for a, b, c in primary_composites()], 6)
    out += ["};", "", "// Simple lowercase mapping: {first, last, stride, delta}: every stride-th code point",
            "// of [first, last] lowercases to itself + delta. Sorted, disjoint.",
            "constexpr CaseRun kLowercase[] = {"]
    write_rows(out, [f"{{0x{a:X},0x{b:X},{s},{d}}}," for a, b, s, d in simple_case_runs(lowercase)], 6)
    out += ["};", "", "// Simple case folding, as the lowercase runs.", "constexpr CaseRun kCaseFolds[] = {"]
    write_rows(out, [f"{{0x{a:X},0x{b:X},{s},{d}}}," for a, b, s, d in simple_case_runs(casefold)], 6)
    out += ["};", "", "// Full case folds to more than one code point (U+00DF -> \"ss\"): {code point,",
            "// offset, length} into the data array, sorted by code point."]
    write_decompositions(out, "kMultiCharacterFolds", multi_character_folds())
    path = root / "src/data/tokenizers/unicode_tables.inc"
    path.write_text("\n".join(out) + "\n")
    print(f"wrote {path} ({path.stat().st_size} bytes, Unicode {unicodedata.unidata_version})")


if __name__ == "__main__":
    main()
