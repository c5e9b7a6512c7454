#!/usr/bin/env bash
# Runs examples/autograd.cpp and checks what it prints against values derived by hand:
#   x = ones(2, 2), y = x + 2 = 3, z = 3 y^2 = 27, out = mean(z) = 27, d(out)/dx = 6 y / 4 = 4.5;
#   y = x * 2^k with k the first power past norm 1000, so backward(v) gives x.grad = v * 2^k and
#   1000 <= norm(y) < 2000; LinearFunction y = x W^T summed gives every row of x.grad equal to
#   W's column sums and every row of W.grad equal to x's column sums (so rows repeat);
#   MulConstant(x, 5.5) summed gives 5.5 everywhere. The gradient penalty's input.grad depends on
#   random weights the example does not print: it is checked finite, of shape [3, 4].
set -euo pipefail
example=$1
"$example" > /dev/null  # a failing run stops here, before its output is parsed
"$example" | python3 -c '
import math, re, sys
text = sys.stdin.read()
number = r"[-+]?(?:nan|inf|[0-9.]+(?:e[-+]?[0-9]+)?)"

def parse(body):
    rows = re.findall(r"\[([^\[\]]*)\]", body) if body.count("[") > 1 else [body.strip("[]")]
    return [[float(v) for v in re.findall(number, row)] for row in rows]

tensors = [parse(m) for m in re.findall(r"tensor\((.*?), dtype=", text, re.S)]
flags = [line for line in text.splitlines() if line in ("true", "false")]
names = [line for line in text.splitlines() if line.endswith("Backward") or re.search(r"Backward[0-9]+$", line)]
failures = []

def expect(what, ok):
    if not ok:
        failures.append(what)

def close(a, b, rel=2e-3):
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-30)

def all_equal(t, value):
    return all(v == value for row in t for v in row)

expect("11 tensors printed", len(tensors) == 11)
if len(tensors) == 11:
    x, y, z, out, x_grad, y_vjp, g, penalty_grad, linear_x_grad, linear_w_grad, mul_grad = tensors
    expect("x = ones(2, 2)", x == [[1, 1], [1, 1]])
    expect("y = x + 2 = 3", y == [[3, 3], [3, 3]])
    expect("z = 3 y^2 = 27", z == [[27, 27], [27, 27]])
    expect("out = mean(z) = 27", out == [[27]])
    expect("d(out)/dx = 4.5", x_grad == [[4.5, 4.5], [4.5, 4.5]])
    scale = g[0][1]  # v[1] = 1, so this is 2^k
    expect("2^k is a power of two >= 2", scale >= 2 and math.log2(scale).is_integer())
    expect("x.grad = v * 2^k", close(g[0][0], 0.1 * scale) and close(g[0][2], 1e-4 * scale))
    norm = math.sqrt(sum(v * v for v in y_vjp[0]))
    expect("1000 <= norm(y) < 2000", 1000 * (1 - 2e-3) <= norm < 2000)
    expect("penalty input.grad finite, [3, 4]",
           len(penalty_grad) == 3 and all(len(r) == 4 and all(map(math.isfinite, r)) for r in penalty_grad))
    expect("LinearFunction x.grad rows equal, [2, 3]",
           len(linear_x_grad) == 2 and len(linear_x_grad[0]) == 3 and linear_x_grad[0] == linear_x_grad[1])
    expect("LinearFunction weight.grad rows equal, [4, 3]",
           len(linear_w_grad) == 4 and len(linear_w_grad[0]) == 3 and all(r == linear_w_grad[0] for r in linear_w_grad))
    expect("MulConstant grad = 5.5", mul_grad == [[5.5, 5.5]])
expect("requires_grad flags", flags == ["false", "true", "true", "true", "false", "true", "false", "true"])
expect("grad_fn names", [re.sub(r"[0-9]+$", "", n) for n in names] ==
       ["AddBackward", "MulBackward", "MeanBackward", "SumBackward", "MulBackward"])
if failures:
    print("FAIL:", "; ".join(failures))
    print(text)
    sys.exit(1)
print("autograd.cpp: all printed values match their hand-derived ones")
'
