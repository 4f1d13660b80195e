"""The ``onnxcc`` command: the command-line build (build/main.py) as verbs and flags.

    onnxcc verify path/to/net.onnx --target cortex-m4 -o build

Each verb runs SCons on the package's build/SConstruct from the folder it is run in, so
paths are relative to it and incremental builds, the cache and every stage rule are the
same code path as ``scons ... model=`` in a checkout. Every build option is a flag of the
same name and default (build/options.py); ``-o`` is ``build_dir``.
"""

import argparse
import os
import subprocess
import sys

from onnxcc import __version__
from onnxcc.build.options import OPTIONS, VERBS
from onnxcc.core.ctext import model_c_name
from onnxcc.core.errors import OnnxccError
from onnxcc.core.paths import PACKAGE_DIR
from onnxcc.target import build_target, catalog, load_target
from onnxcc.verbs import export

SCONSTRUCT = os.path.join(PACKAGE_DIR, "build", "SConstruct")
#: onnxcc_add_model() for CMake, onnxcc_model for Make
BUILDSYSTEMS = os.path.join(PACKAGE_DIR, "buildsystems")
#: verbs of the command beyond the build's (build/options.VERBS), which build the library
#: (SCons' default target): what they do and their own option defaults
EXTRA_VERBS = {
    "build": ("build the library and print the footprint", {}),
    "report": ("build, then print the footprint and the path of report.html", {}),
    "quantize": ("quantize the float model (quantize=int8) and build; prints quantized.onnx's path",
                 {"quantize": "int8"}),
    "export": ("build, then copy the C sources, the runtime and a README with the compiler "
               "flags into --sources DIR, for an IDE project (weights as C arrays)",
               {"weights_format": "c"}),
}


def _add_options(parser):
    parser.add_argument("model", help="the ONNX model to compile")
    parser.add_argument("-o", "--output", dest="build_dir", default="build",
                        help="where <target>/<name>/ goes (build_dir=; default build)")
    for o in OPTIONS:
        if o.name in ("model", "build_dir"):
            continue
        flag = "--" + o.name.replace("_", "-")
        if o.kind == "bool":
            parser.add_argument(flag, dest=o.name, action=argparse.BooleanOptionalAction,
                                default=o.default, help=o.help)
        else:
            parser.add_argument(flag, dest=o.name, default=o.default, metavar="VALUE",
                                help=f"{o.help} (default: {o.default or 'none'})")


class _Print(argparse.Action):
    """A flag that prints its text and exits, like --version."""

    def __init__(self, option_strings, text, **kwargs):
        super().__init__(option_strings, nargs=0, **kwargs)
        self.text = text

    def __call__(self, parser, namespace, values, option_string=None):
        print(self.text)
        parser.exit()


def parser():
    p = argparse.ArgumentParser(prog="onnxcc", description=__doc__.split("\n\n")[0])
    p.add_argument("--version", action="version", version=f"onnxcc {__version__}")
    p.add_argument("--cmake-dir", action=_Print, text=BUILDSYSTEMS,
                   help="print the folder of onnxccConfig.cmake (cmake -Donnxcc_DIR=...) and exit")
    p.add_argument("--make-include", action=_Print, text=os.path.join(BUILDSYSTEMS, "onnxcc.mk"),
                   help="print the path of onnxcc.mk, for a Makefile's include, and exit")
    verbs = p.add_subparsers(dest="verb", required=True, metavar="VERB")
    for verb, (what, _) in EXTRA_VERBS.items():
        sub = verbs.add_parser(verb, help=what, description=what)
        _add_options(sub)
        if verb == "export":
            sub.add_argument("--sources", required=True, metavar="DIR",
                             help="the folder to copy the sources into")
    for verb, what in VERBS:
        _add_options(verbs.add_parser(verb, help=what, description=what))
    targets = verbs.add_parser("targets", help="the targets and boards, the names they go by, and their memory")
    targets.add_argument("name", nargs="?", help="print only the target this name builds (for build files)")
    return p


def _value(args, option):
    """The value of ``option`` for this run: the flag's, or the verb's own default
    (EXTRA_VERBS: quantize=int8 for ``quantize``) where the flag was left at the build's."""
    value = getattr(args, option.name)
    verb_defaults = EXTRA_VERBS.get(args.verb, ("", {}))[1]
    return verb_defaults.get(option.name, value) if value == option.default else value


def _scons_arguments(args):
    """name=value for every option that differs from its default (and model, build_dir)."""
    out = [f"model={args.model}", f"build_dir={args.build_dir}"]
    for o in OPTIONS:
        if o.name in ("model", "build_dir"):
            continue
        value = _value(args, o)
        if value != o.default:
            out.append(f"{o.name}={int(value) if o.kind == 'bool' else value}")
    return out


def main(argv=None):
    args = parser().parse_args(argv)
    try:
        if args.verb == "targets" and args.name:
            print(load_target(args.name).name)
            return 0
        if args.verb == "targets":
            try:
                print("\n".join(catalog()))
            except BrokenPipeError:  # onnxcc targets | head
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0
        if os.path.isdir(args.model):
            raise OnnxccError("a folder, not a model file", where=args.model,
                              hint="give the path of an .onnx file, relative to this folder")
        if not os.path.isfile(args.model):
            raise OnnxccError("no such model file", where=args.model,
                              hint="give the path of an .onnx file, relative to this folder")
    except OnnxccError as e:
        print(f"onnxcc: error: {e}", file=sys.stderr)
        return 2
    scons_targets = [] if args.verb in EXTRA_VERBS else [args.verb]
    arguments = _scons_arguments(args)
    command = [sys.executable, "-m", "SCons", "-Q", "-f", SCONSTRUCT, *arguments, *scons_targets]
    # the SConstruct imports this package: from where it is, installed or in a checkout
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(PACKAGE_DIR)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    status = subprocess.run(command, env=env).returncode
    if status != 0:
        return status
    name = model_c_name(args.name or os.path.splitext(os.path.basename(args.model))[0])  # as OnnxModel
    given = dict(a.split("=", 1) for a in arguments)  # what the build was told, as it resolves it
    target = build_target(given.get("target"), given.get("board", ""))[0].name
    folder = os.path.join(args.build_dir, target, name)
    if args.verb in ("report", "quantize"):
        found = "report.html" if args.verb == "report" else "quantized.onnx"
        print(f"[{args.verb}] {os.path.join(folder, found)}")
    if args.verb == "export":
        try:
            weights_format = _value(args, next(o for o in OPTIONS if o.name == "weights_format"))
            files = export.export_sources(folder, name, target, args.model, args.sources,
                                          weights_format)
        except OnnxccError as e:
            print(f"onnxcc: error: {e}", file=sys.stderr)
            return 2
        print(f"[export] {name}: {len(files)} files in {args.sources} (README.txt: the compiler flags)")
    return status
