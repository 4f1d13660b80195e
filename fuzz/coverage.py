"""Which fast paths the differential fuzzer's graphs reach, without building them.

    python -m fuzz.coverage [--target T] [--graphs N] [--seed S] [--batch B] [--images] [--int8]

Draws the graphs a campaign of the same arguments would (graphs.drawn), takes each
through the compiler's own import, optimize and select stages in the fuzzer's
configurations that choose fast tactics (the cost model's, and the spec's forced tactics
with its fusion setting), lowers every node and names the branches of the kernels it gets
that a small shape misses: a stride-2 or -4 row of a depthwise or implicit convolution
split by vector shuffles (whole vectors or halves only; several rows at another row
stride) or, without
the planes, split in registers (depthwise_s2: one or several column blocks), a 1x1
convolution's pixel or channel-vector tiles (and its fused input scale), winograd over several tiles and several
chunks (and vectors of tiles across its rows of tiles, its patch planes split by shuffles,
its cut tiles), implicit tiles over groups of rows and its channel-vector tiles' two stores (and
a group convolution's long ones),
pooling rows of several
vectors, the recurrent blocked tactic's chunked projection, a LayerNorm chain fused. Prints how many graphs reach
each path (docs/trust.md, "What the draws reach").
"""

import argparse
import collections
import os
import sys
import tempfile

import onnx
from .graphs import drawn
from .spec import build_model

from onnxcc import ops
from onnxcc.tactics import stage as tactics  # noqa: E402 (after fuzz.spec put site_scons on the path)
from onnxcc.codegen.render import _lookup  # noqa: E402
from onnxcc.core.errors import OnnxccError  # noqa: E402
from onnxcc.importer.stage import import_model  # noqa: E402
from onnxcc.passes import optimize  # noqa: E402
from onnxcc.target import load_target  # noqa: E402
from onnxcc.ops.common.tiling import MAX_ROWS  # noqa: E402


def _split_phases():
    """conv_planes.mako's own test of which stride-2 and -4 fills run by vector shuffles."""
    return _lookup.get_template("/kernels/lib/conv_planes.mako").module.split_phases


def paths(call, node):
    """The names of the fast branches kernel call ``call`` (of ``node``) takes."""
    p, found = call.params, {f"{node.op}:{call.template}"}
    if call.template == "conv2d_depthwise" and p.get("direct"):
        blocks = "several column blocks" if p["ow"] > p["vecs"] * p["lanes"] else "one column block"
        found.add(f"{call.template}: stride-2 rows split in registers, {blocks}")
    elif call.template in ("conv2d_depthwise", "conv2d_implicit"):  # (implicit: by bands)
        for ks, runs in _split_phases()(p, p["lanes"]):
            widest = max(width for _, _, width in runs)
            kind = "whole vectors" if widest == p["lanes"] else "half vectors only"
            found.add(f"{call.template}: stride-{p['sw']} shuffle fill, {kind}")
            r_lo, r_hi = p["fills"][ks[0]]["rows"]
            if p["sh"] != 2 and r_hi - r_lo > 1:
                found.add(f"{call.template}: stride-{p['sw']} shuffle fill of several rows, row stride {min(p['sh'], 3)}")
        if call.template == "conv2d_depthwise" and p.get("shift") and p["ow"] > p["lanes"]:
            found.add(f"{call.template}: shifted taps over rows of several vectors")
    if call.template in ("conv2d", "conv2d_1x1") and p.get("scale"):
        found.add(f"{call.template}: a fused input scale (passes/fuse_channel_scale.py)")
    if call.template == "conv2d_1x1":
        if not p["transposed"]:
            found.add("conv2d_1x1: pixel tiles")
        elif p["oh"] * p["ow"] > 1:
            found.add("conv2d_1x1: channel-vector tiles, transposed back in blocks")
            width, mg = p["vecs"] * p["lanes"], p["m"] // p["group"]
            if p["oh"] * p["ow"] // p["rows"] > 1 and (mg // width > 1 or mg % width):
                found.add("conv2d_1x1: channel-vector tiles prefetching the next panel")
            if p.get("kblock"):
                found.add("conv2d_1x1: channel-vector tiles summed in blocks of input channels")
        else:
            found.add("conv2d_1x1: channel-vector tiles of one pixel")
    if call.template == "conv2d_winograd":
        tiles = p["tiles_h"] * p["tiles_w"]
        if tiles > 1:
            found.add("winograd: several tiles")
        if tiles > p["cols"]:
            found.add("winograd: several chunks")
        if p["tiles_h"] > 1 and p["tiles_w"] % p["lanes"]:
            found.add("winograd: vectors of tiles across rows of tiles")
        if _split_phases()(dict(p, sh=p["tile"], sw=p["tile"]), p["lanes"]):
            found.add("winograd: patch planes split by shuffles")
        if p["oh"] % p["tile"] or p["ow"] % p["tile"]:
            found.add("winograd: cut tiles stored in loops")
    if call.template == "conv2d_implicit" and p.get("row_group", 1) > 1:
        found.add("conv2d_implicit: tiles over groups of rows")
    if call.template == "conv2d_implicit" and p["transposed"]:
        store = "transposed back in blocks" if p["panel_store"] else "stored float by float"
        found.add(f"conv2d_implicit: channel-vector tiles, {store}")
        long = max(p["rows"], p.get("row_group", 1) * p["ow"]) > MAX_ROWS
        if long and p["group"] > 1 and p["lanes"] >= 16 and p["vecs"] * p["lanes"] >= p["m"] // p["group"]:
            found.add("conv2d_implicit: long group tiles (conv._group_lanes)")
        if p["panel_store"] and p["store_rows"] < p["oh"]:
            found.add("conv2d_implicit: channel-vector tiles stored in bands of rows")
        if p.get("flat"):
            found.add("conv2d_implicit: flat group tiles across rows (conv._flat_tiles)")
    if call.template == "pool2d_vector":
        if p["vecs"] > 1:
            found.add("pool2d_vector: rows of several vectors")
        if p["w"] >= p["lanes"]:
            found.add("pool2d_vector: whole-vector row reduction")
        found.add(f"pool2d_vector: taps at stride {min(p['sw'], 3)}")
        if node.attrs.get("ceil_mode"):
            found.add("pool2d_vector: ceil_mode")
    if call.template == "qconv2d_q15":
        kind = "matrix rows" if p.get("matrix") else "1x1" if p["pointwise"] else "windows"
        found.add(f"qconv2d_q15: {kind}, " + ("weights in registers" if p["few"] else "four-pixel tiles"))
        pixels = p["oh"] * p["ow"]
        counts = [p["block"]] * (pixels >= p["block"]) + [pixels % p["block"]] * (pixels % p["block"] > 0)
        if any(count % (2 if p["few"] else 4) for count in counts):
            found.add("qconv2d_q15: " + ("an odd last pixel" if p["few"] else "last pixels, two channels at once"))
        if pixels > p["block"]:
            found.add("qconv2d_q15: several blocks")
    if call.template == "qconv2d_dw_q15":
        if p["dw"] == 1 and p["kw"] > 1:
            found.add(f"qconv2d_dw_q15: pairs of taps, stride {min(p['sw'], 3)}, {'odd' if p['kw'] % 2 else 'even'} rows")
        if p.get("fast") and p.get("fold") and p["mult"] is None and not p["wide"]:
            found.add("qconv2d_dw_q15: sums times 256")
    if call.template == "recurrent_blocked":
        if p["chunk"] < p["seq"]:
            found.add(f"{node.op} blocked: chunked projection")
        if p["padded"] > p["units"] * p["lanes"]:
            found.add(f"{node.op} blocked: several blocks of units")
        if node.inputs[4:5] and node.inputs[4]:
            found.add(f"{node.op} blocked: sequence lengths")
    return found


def graph_paths(spec, cpu, work):
    """Every path the graph of ``spec`` takes in the fast configurations."""
    path = os.path.join(work, "model.onnx")
    onnx.save(build_model(spec), path)
    forced = dict(spec.get("tactic", {}))
    found = set()
    for fuse, wanted in ((True, {}), (spec.get("fuse", True), forced)):
        graph = import_model(path)
        reductions = {n.name for n in graph.nodes if n.op == "ReduceMean"}
        graph = optimize(graph, path, fuse=fuse)
        wanted = dict(wanted)
        while True:  # a forced tactic no node can run is dropped, as the fuzzer does
            try:
                selection = tactics.select(graph, cpu, "speed", wanted)
                break
            except OnnxccError as e:
                op = next((k for k in wanted if f"tactic={k}:" in str(e)), None)
                if op is None:
                    raise
                del wanted[op]
        tactics.annotate(graph, tactics.Selection(cpu, {n["node"]: n["tactic"] for n in selection["nodes"]}))
        for node in graph.nodes:
            if node.op in ops.ALIASES or node.op == "Identity":
                continue
            call = ops.lower(node, graph)
            found |= paths(call, node)
            if node.op == "LayerNormalization" and node.name in reductions:  # (it keeps the mean's name)
                found.add(f"{call.template}: a fused LayerNorm chain (passes/fuse_layer_norm.py)")
    return found


def survey(target, graphs, seed, int8=False, images=False, batch=16):
    """(Counter of paths over graphs, graphs drawn, graphs the compiler refused): the graphs
    of a campaign of the same arguments (graphs.drawn)."""
    cpu = load_target(target).cpu
    counts, refused = collections.Counter(), 0
    specs = drawn(target, graphs, seed, batch, int8, images)
    for spec in specs:
        with tempfile.TemporaryDirectory() as work:
            try:
                counts.update(graph_paths(spec, cpu, work))
            except OnnxccError as e:
                refused += 1
                counts[f"refused: {str(e)[:100]}"] += 1
    return counts, len(specs), refused


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m fuzz.coverage", description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", default="x86_64")
    parser.add_argument("--graphs", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--int8", action="store_true")
    parser.add_argument("--images", action="store_true")
    parser.add_argument("--batch", type=int, default=16, help="as the campaign's (its graphs depend on it)")
    args = parser.parse_args(argv)
    counts, graphs, refused = survey(args.target, args.graphs, args.seed, args.int8, args.images, args.batch)
    print(f"{args.target}, seed {args.seed}: {graphs} graphs ({refused} the compiler refuses)")
    for fast in (True, False):  # the fast branches, then the kernels (op:template)
        print("graphs reaching each fast branch:" if fast else "graphs reaching each kernel:")
        for name, n in sorted(counts.items()):
            if (": " in name) == fast or name.startswith("refused"):
                print(f"  {n:5d}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
