#!/usr/bin/env python3
"""Checks scripts/libtorch_api_tests on sample_suite/sample.cpp, whose tests' names say what the
harness must report: the rewrite to ember's names, tests that do not compile (alone, or through
shared code) taken out while the rest run, failures at run time, failures on message text
alone, exclusions, and the table.

    check_harness.py HARNESS SAMPLE_DIR EMBER_LIBRARY_DIR
"""
import json
import os
import subprocess
import sys
import tempfile

harness, sample_dir, library_dir = sys.argv[1:4]
expected = {
    "SampleFixture.Passes": ("passed", ""),
    "SampleTest.AlsoPassesWithBracesInStrings": ("passed", ""),
    "SampleTest.FailsToCompile": ("failed", "compile"),
    "SampleTest.FailsToCompileThroughSharedCode": ("failed", "compile"),
    "SampleTest.FailsAtRunTime": ("failed", "run"),
    "SampleTest.FailsOnMessageTextOnly": ("failed", "message"),
    "SampleTest.ExcludedAsCUDA": ("excluded", "CUDA"),
    "SampleTest.ExcludedAsSparse": ("excluded", "sparse tensors"),
}
with tempfile.TemporaryDirectory() as work:
    report = os.path.join(work, "report.json")
    done = subprocess.run([harness, sample_dir, "--build", library_dir, "--json", report, "--quiet",
                           "--work", work], capture_output=True, text=True)
    print(done.stdout, done.stderr)
    if done.returncode != 0:
        sys.exit(f"the harness exited with {done.returncode}")
    with open(report) as stream:
        (sample,) = json.load(stream)["files"]

problems = []
found = {test["name"]: test for test in sample["tests"]}
if sorted(found) != sorted(expected):
    problems.append(f"tests found {sorted(found)}, expected {sorted(expected)}")
for name, (status, kind) in expected.items():
    test = found.get(name, {})
    if test.get("status") != status or not test.get("kind", "").startswith(kind):
        problems.append(f"{name}: {test.get('status')} ({test.get('kind')}), expected {status} ({kind})")
shared_cause = found.get("SampleTest.FailsToCompileThroughSharedCode", {}).get("reason", "")
if "helper_that_does_not_compile" not in shared_cause or "a_function_ember_does_not_have" not in shared_cause:
    problems.append(f"the shared-code failure names no root cause: {shared_cause!r}")
if "another_function_ember_does_not_have" not in found.get("SampleTest.FailsToCompile", {}).get("reason", ""):
    problems.append("the compile failure does not name the missing function")
row = "| sample.cpp | 6 | 4 | 2 | 2 | 1 | 1 | 2 |"
if row not in done.stdout:
    problems.append(f"the table has no row {row}")
if problems:
    sys.exit("\n".join(problems))
print("the harness reported every sample test as expected")
