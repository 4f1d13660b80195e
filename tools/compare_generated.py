"""Compare what two checkouts of onnxcc generate for every example model on every target:
the C sources and headers, the weights, plan.json and tactics.json, byte for byte. A
refactoring must leave them identical; a fix lists the files it changes.

    python tools/compare_generated.py OLD_CHECKOUT NEW_CHECKOUT [--targets T,..] [--models M,..]

Each checkout builds with its own compiler package and templates, through the generate
stage only (nothing is compiled), into a fresh folder; exit status 1 when anything differs.
"""

import argparse
import glob
import hashlib
import json
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGETS = ["x86_64", "x86_64-avx512", "x86_64-zen4", "armv7", "cortex-m7", "armv7a", "aarch64",
           "riscv32", "riscv64", "x86-baremetal"]
#: the generate stage's outputs (and the plan and tactics it reads), per model folder
FILES = ["{name}.c", "{name}.h", "{name}_kernels.c", "{name}_kernels.h", "{name}_weights.bin",
         "{name}_weights.S", "plan.json", "tactics.json"]
SCONSTRUCT = """
import json, os
from SCons.Script import ARGUMENTS, Default, Environment
job = json.load(open(ARGUMENTS["job"]))
env = Environment(ENV=os.environ, tools=["default", "onnxcc"])
env.SConsignFile(os.path.join(job["build_dir"], ".sconsign"))
for target in job["targets"]:
    for model in job["models"]:
        m = env.OnnxModel(None, model, target=target, build_dir=job["build_dir"])
        Default([env.File(os.path.join(str(m.dir), f.format(name=m.name))) for f in job["files"]])
"""


def example_models(checkout):
    return sorted(glob.glob(os.path.join(checkout, "models", "*.onnx"))
                  + glob.glob(os.path.join(checkout, "models", "int8", "*.onnx")))


def generate(checkout, models, targets, work, jobs):
    """{relative path: sha256} of every file of FILES the checkout generates."""
    build_dir = os.path.join(work, "build")
    job = os.path.join(work, "job.json")
    with open(job, "w") as f:
        json.dump({"build_dir": build_dir, "targets": targets, "models": models, "files": FILES}, f)
    sconstruct = os.path.join(work, "SConstruct")
    with open(sconstruct, "w") as f:
        f.write(SCONSTRUCT)
    proc = subprocess.run([sys.executable, "-m", "SCons", "-Q", f"-j{jobs}", "-f", sconstruct,
                           f"--site-dir={os.path.join(checkout, 'site_scons')}", f"job={job}"],
                          cwd=checkout, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"compare_generated: {checkout} failed to generate:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    digests = {}
    for path in sorted(glob.glob(os.path.join(build_dir, "*", "*", "*"))):
        if os.path.isfile(path) and not os.path.basename(path).startswith("."):
            with open(path, "rb") as f:
                digests[os.path.relpath(path, build_dir)] = hashlib.sha256(f.read()).hexdigest()
    return digests


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--models", help="comma-separated model files (default: the examples)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)
    old, new = os.path.abspath(args.old), os.path.abspath(args.new)
    models = args.models.split(",") if args.models else example_models(new)
    models = [os.path.abspath(m) for m in models]
    targets = args.targets.split(",")
    kinds = {f.format(name="") for f in FILES}
    with tempfile.TemporaryDirectory() as work:
        sides = []
        for checkout, side in ((old, "old"), (new, "new")):
            os.makedirs(os.path.join(work, side))
            found = generate(checkout, models, targets, os.path.join(work, side), args.jobs)
            sides.append({p: d for p, d in found.items()
                          if any(os.path.basename(p).endswith(k) for k in kinds)})
    before, after = sides
    changed = sorted(p for p in before.keys() & after.keys() if before[p] != after[p])
    only = sorted(before.keys() ^ after.keys())
    print(f"{len(models)} models x {len(targets)} targets: {len(before.keys() & after.keys()) - len(changed)} "
          f"files identical, {len(changed)} differ, {len(only)} in one checkout only")
    for path in changed:
        print(f"  differs: {path}")
    for path in only:
        print(f"  only in {'old' if path in before else 'new'}: {path}")
    return 1 if changed or only else 0


if __name__ == "__main__":
    sys.exit(main())
