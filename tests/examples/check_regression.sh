#!/usr/bin/env bash
# Runs examples/regression.cpp and checks its result against the target it prints, in float64
# here: the loop stops on a batch loss below 1e-3, so the learned polynomial must be the
# actual one within a margin. Coefficient i multiplies x^(i+1) (make_features; poly_desc labels
# the terms in the reverse order, as PyTorch's original does, the same way for both lines).
#   - the printed loss is below 1e-3 after at least one batch;
#   - |learned - actual| <= 0.1 on every x of a grid over [-1, 1] (the bulk of the batches'
#     N(0, 1) inputs; a fit of a batch loss of 1e-3 stays within about 0.05 there);
#   - every coefficient is within 0.25 of its target (targets are N(0, 25) draws).
set -euo pipefail
example=$1
output=$("$example")
python3 -c '
import re, sys
text = sys.argv[1]
number = r"[-+]?[0-9.]+(?:e[-+]?[0-9]+)?"
failures = []

def expect(what, ok):
    if not ok:
        failures.append(what)

def coefficients(label):
    line = re.search(label + r":\s*y = (.*)", text)
    if not line:
        return None
    terms = re.findall(r"(" + number + r") x\^[0-9]+", line.group(1))
    bias = re.search(r"\+ (" + number + r")\s*$", line.group(1))
    return [float(t) for t in terms] + ([float(bias.group(1))] if bias else [])

loss = re.search(r"Loss: (" + number + r") after ([0-9]+) batches", text)
expect("a line \"Loss: L after N batches\"", loss is not None)
if loss:
    expect("loss below 1e-3", float(loss.group(1)) < 1e-3)
    expect("at least one batch", int(loss.group(2)) >= 1)
learned, actual = coefficients("Learned function"), coefficients("Actual function")
expect("4 weights and a bias learned and actual", learned is not None and actual is not None
       and len(learned) == 5 and len(actual) == 5)
if not failures:
    def value(c, x):
        return sum(c[i] * x ** (i + 1) for i in range(4)) + c[4]
    worst = max(abs(value(learned, k / 50) - value(actual, k / 50)) for k in range(-50, 51))
    expect("learned within 0.1 of actual on [-1, 1] (worst %g)" % worst, worst <= 0.1)
    expect("every coefficient within 0.25 of its target",
           all(abs(l - a) <= 0.25 for l, a in zip(learned, actual)))
if failures:
    print("FAIL:", "; ".join(failures))
    print(text)
    sys.exit(1)
print("regression.cpp: the learned polynomial matches the actual one")
' "$output"
