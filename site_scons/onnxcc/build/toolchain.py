"""The environments a model's C is compiled in: the target's toolchain file, or the
calling environment's own compiler (toolchain='env'), and the library's objects."""

import os

import SCons.Action
import SCons.Builder
import SCons.Util
from onnxcc.core.errors import OnnxccError
from onnxcc.target import UNUSED_ERRORS, WARNINGS, check_env_flags

#: ``toolchain=`` of OnnxModel: the target's toolchain file, or the calling environment's
#: own compiler and flags (a firmware that builds everything with its own)
TOOLCHAINS = ("target", "env")

#: one relocatable object of all the library's objects, in which every symbol but
#: ``<name>_run`` is made local: kernels, weights and the runtime's ``onnxcc_*`` functions
#: can then never clash with another model's, whatever the link order or --whole-archive.
#: (No --specs: a specs file may add a linker script, which a relocatable link must not get.)
LINK_MODEL = SCons.Builder.Builder(action=SCons.Action.Action(
    "$CC $ONNXCC_RELOCATABLE_FLAGS -nostdlib -r -o $TARGET $SOURCES && "
    "$OBJCOPY --keep-global-symbol=${ONNXCC_NAME}_run $TARGET", "$ONNXCC_LINKMODELCOMSTR"))


#: the weights' assembler file (weights_format=bin), assembled by the C compiler driver with
#: the C flags (the CPU, ABI and float-ABI flags reach the assembler, so the object links
#: with the C ones); its .incbin names the binary file alone, found through -I of its
#: folder: nothing of the build's paths ends up in the object.
ASSEMBLE_WEIGHTS = SCons.Builder.Builder(action=SCons.Action.Action(
    "$CC $CCFLAGS -Xassembler -I${SOURCE.dir} -c -o $TARGET $SOURCE", "$ONNXCC_ASCOMSTR"))


def compiled(e, at, sources, stack_usage):
    """The object of the library's C file ``sources[0]``, an unused parameter or variable
    an error (UNUSED_ERRORS); gcc's stack usage of it (.su, for the size report) goes to
    ``stack_usage``."""
    stem = os.path.splitext(os.path.basename(str(sources[0])))[0]
    obj, su = e.Object([at(stem + ".o"), at(stem + ".su")], sources[0],
                       CCFLAGS=e["CCFLAGS"] + list(UNUSED_ERRORS) + ["-fstack-usage"])
    stack_usage.append(su)
    return obj


def assembled(e, at, sources, stack_usage):
    """The object of the weights' assembler file ``sources[0]``, which includes the
    binary file ``sources[1]`` (a source too: the object follows its bytes)."""
    stem = os.path.splitext(os.path.basename(str(sources[0])))[0]
    return e.OnnxccAssembleWeights(at(stem + ".o"), sources)[0]


#: per ``weights_format``: the files the weights stage writes (codegen.run_weights), and
#: how the library's object is made of them
WEIGHTS = {"bin": (("S", "bin"), assembled), "c": (("c",), compiled)}


def _objcopy_beside(env):
    """The objcopy of the environment's compiler: $OBJCOPY, else <prefix>objcopy for <prefix>gcc."""
    cc = env.subst("$CC")
    objcopy = env.get("OBJCOPY") or (cc[:-3] + "objcopy" if cc.endswith("gcc") else "")
    if not objcopy or not env.WhereIs(env.subst(objcopy)):
        raise OnnxccError(f"toolchain='env': no objcopy found for CC={cc}",
                          hint="set OBJCOPY in the environment, e.g. OBJCOPY='arm-none-eabi-objcopy'")
    return objcopy


def link_files(target):
    """The files a target's link flags name (its linker script; target/ makes them
    absolute paths into the repository), for its programs and its footprint program."""
    return [f for f in dict.fromkeys(target.linkflags + target.footprint_linkflags)
            if os.path.isabs(f)]


def _repo_nodes(env, flags):
    """``flags`` with the repository paths in them (target.py makes them absolute: a
    linker script, x86-baremetal's -isystem folder) as nodes: on the command line and in
    the signature their path from the top folder, so that a clone elsewhere has the same
    signatures and shares a build cache (a linker script's bytes: _link_files)."""
    return [(env.Dir(f) if os.path.isdir(f) else env.File(f)) if os.path.isabs(f) else f
            for f in flags]


#: what the generated C assumes of its C dialect: no a * b + c contracted into a fused
#: multiply-add but where a kernel asks for it (tile.mako's ``contracted``), so that the
#: other kernels -- the reference ones, the int8 kernels' float steps (docs/int8.md) --
#: round as the target build's do. A target build has it from -std=c99; a toolchain='env'
#: build gets it before the tree's own flags, whose C dialect may be a GNU one, which
#: contracts everywhere once FMA is on
ENV_DIALECT = ["-ffp-contract=off"]


def _add_target_flags(e, target):
    """toolchain='env': the target's instruction-set flags (x86's -mavx2 -mfma ...) and
    ENV_DIALECT go first in ``e``'s CCFLAGS, so that the code is the target build's -- the
    vectors the kernels are written for, without -Wpsabi on vmath's functions that take
    them -- whatever the tree's own flags name; a flag of the tree's that turns one off
    again stops the build in one line (target.check_env_flags). They change no ABI
    <name>_run exports (pointers, an int), so code compiled without them calls it. ARM
    targets have none (their FPU flags set the float ABI too, which is the firmware's):
    there the tree's flags must enable the target's features themselves."""
    cc = e.subst_list("$CC")[0]
    program = e.WhereIs(str(cc[0])) if cc else None
    if not program:
        raise OnnxccError(f"toolchain='env': no compiler CC={e.subst('$CC')} found",
                          hint="set CC in the environment, e.g. CC='arm-none-eabi-gcc'")
    own = [str(f) for f in e.subst_list("$CFLAGS $CCFLAGS")[0]]
    check_env_flags(target, [program] + [str(w) for w in cc[1:]], own)
    # (CLVar: a CCFLAGS given as one string becomes its words, as on the command line)
    e.Replace(CCFLAGS=SCons.Util.CLVar(target.isa_cflags + ENV_DIALECT)
              + SCons.Util.CLVar(e.get("CCFLAGS", [])))


def model_env(env, target, toolchain, verbose, launcher=""):
    """A clone of ``env`` that compiles for ``target``: with the target's toolchain file, or
    (``toolchain='env'``) with env's own CC, AR, CCFLAGS, CFLAGS and CPPDEFINES. The size
    report and verify programs link with the target's startup code and linker script either way.
    ``launcher`` (``ccache``, ``distcc``) runs every compile, outside the signature: with
    or without it the objects are the same, and so are their build cache entries."""
    tc = target.toolchain
    e = env.Clone()
    if toolchain == "target":
        # ar in deterministic mode (D): no timestamps, uids or modes in lib<name>.a, whatever
        # the distribution's default; it writes the symbol index itself (s), the same bytes
        # ranlib -D adds in a second copy of the archive (of ResNet-18's 98 MB: 0.3 s)
        e.Replace(CC=tc.tool("gcc"), LINK=tc.tool("gcc"), AR=tc.tool("ar"), ARFLAGS=["rcsD"],
                  RANLIBCOM="", OBJCOPY=tc.tool("objcopy"))
        cflags = _repo_nodes(e, tc.cflags + target.cflags)
        e.Replace(CCFLAGS=cflags + list(WARNINGS), CFLAGS=["-std=c99"])
        link = cflags + tc.linkflags
    else:
        e.Replace(OBJCOPY=_objcopy_beside(e), LINK="$CC")
        _add_target_flags(e, target)
        link = ["$CCFLAGS"] + tc.linkflags
    # the size report's footprint program links the same way, with the target's own flags
    # for it (a minimal bare-metal link)
    e.Replace(LINKFLAGS=link + _repo_nodes(e, target.linkflags),
              ONNXCC_FOOTPRINT_LINKFLAGS=link + _repo_nodes(e, target.footprint_linkflags))
    if launcher:
        if not e.WhereIs(launcher.split()[0]):
            raise OnnxccError(f"launcher={launcher}: no program {launcher.split()[0]}",
                              hint="install it, e.g. apt-get install ccache, or leave launcher= out")
        e.Replace(ONNXCC_LAUNCHER=launcher.split(), CCCOM="$( $ONNXCC_LAUNCHER $) " + e["CCCOM"])
    compile_flags = [str(f) for f in e.subst_list("$CCFLAGS")[0]]
    # (recorded in the fragments: the flags a firmware must be compatible with)
    e.Replace(ONNXCC_TARGET_CFLAGS=list(target.cflags) if toolchain == "target" else compile_flags,
              ONNXCC_RELOCATABLE_FLAGS=[f for f in compile_flags if not f.startswith("--specs")])
    if not verbose:
        e.Replace(CCCOMSTR="[compile] $SOURCE", ONNXCC_ASCOMSTR="[compile] $SOURCE", ARCOMSTR="[archive] $TARGET", RANLIBCOMSTR="",
                  LINKCOMSTR="[link] $TARGET",
                  ONNXCC_LINKMODELCOMSTR="[link] $TARGET (exports ${ONNXCC_NAME}_run only)")
    return e
