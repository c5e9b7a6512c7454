#!/usr/bin/env python3
"""Development-time check (never run by scripts/test or CI) that a model fine-tuned by
`ember train --init` leaves ember in the formats the Python tools read:

1. runs `ember export-hf --run RUN --out DIR` with --logits-text/--logits-out, so that ember
   writes its logits for a fixed prompt (merged model, and for LoRA the unmerged adapters);
2. loads DIR with transformers (float32, eager attention) and compares its logits with ember's;
3. for LoRA, loads the base model named in RUN/run.json with PEFT's
   PeftModel.from_pretrained(base, RUN) and compares its logits with the exported model's in
   transformers and with ember's adapters; merge_and_unload's weights against DIR's.

Run in a venv with torch, transformers, safetensors and peft (here /work/torchenv):
    /work/torchenv/bin/python scripts/check_pretrained_exports.py --run RUN --out DIR
Prints max |delta| of the logits beside the logits' scale, and exits 1 when one exceeds
--tolerance (relative to the scale).
"""
import argparse
import json
import pathlib
import subprocess
import sys

import torch
from safetensors.torch import load_file

DEFAULT_TEXT = "We hold these truths to be self-evident, that all men are created equal"


def transformers_logits(model, input_ids):
    with torch.no_grad():
        return model(input_ids).logits.float()


def report(name, got, expected, tolerance, failures):
    delta = (got.double() - expected.double()).abs().max().item()
    scale = expected.double().abs().max().item()
    ok = delta <= tolerance * scale
    print(f"{name}: max |delta| = {delta:.3e} (logits' scale {scale:.3f}, relative {delta / scale:.2e}) "
          f"{'ok' if ok else 'TOO LARGE'}")
    if not ok:
        failures.append(name)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", required=True, help="the --out of `ember train --init`")
    parser.add_argument("--out", required=True, help="where export-hf writes the HF directory")
    parser.add_argument("--ember", default=str(pathlib.Path(__file__).resolve().parent.parent / "build/bin/ember"))
    parser.add_argument("--text", default=DEFAULT_TEXT, help="the prompt whose logits are compared")
    parser.add_argument("--tolerance", type=float, default=1e-4, help="max |delta| / max |logits| allowed")
    args = parser.parse_args()

    from transformers import AutoModelForCausalLM

    run_dir, out_dir = pathlib.Path(args.run), pathlib.Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    logits_path = out_dir / "ember_logits.safetensors"
    subprocess.run([args.ember, "export-hf", "--run", str(run_dir), "--out", str(out_dir), "--logits-text",
                    args.text, "--logits-out", str(logits_path)], check=True)
    ember = load_file(str(logits_path))
    logits_path.unlink()  # not part of the model directory
    input_ids = ember["input_ids"]
    run = json.loads((run_dir / "run.json").read_text())
    print(f"run {run_dir} (base {run['base_model']}, lora {run['lora']}), prompt of {input_ids.shape[1]} tokens")

    failures = []
    exported = AutoModelForCausalLM.from_pretrained(str(out_dir), dtype=torch.float32, attn_implementation="eager")
    exported.eval()
    merged_logits = transformers_logits(exported, input_ids)
    report("transformers(export-hf DIR) vs ember merged", ember["logits_merged"], merged_logits, args.tolerance,
           failures)

    if run["lora"]:
        from peft import PeftModel

        base = AutoModelForCausalLM.from_pretrained(run["base_model"], dtype=torch.float32,
                                                    attn_implementation="eager")
        peft_model = PeftModel.from_pretrained(base, str(run_dir))
        peft_model.eval()
        peft_logits = transformers_logits(peft_model, input_ids)
        report("PEFT(base + RUN adapters) vs transformers(export-hf DIR)", peft_logits, merged_logits,
               args.tolerance, failures)
        report("PEFT(base + RUN adapters) vs ember adapters", peft_logits, ember["logits_adapters"], args.tolerance,
               failures)
        merged_by_peft = peft_model.merge_and_unload().state_dict()
        worst = max((merged_by_peft[k].double() - v.double()).abs().max().item()
                    for k, v in exported.state_dict().items() if k in merged_by_peft)
        print(f"PEFT merge_and_unload weights vs export-hf weights: max |delta| = {worst:.3e}")

    if failures:
        print("FAILED: " + ", ".join(failures))
        sys.exit(1)
    print("all within tolerance")


if __name__ == "__main__":
    main()
