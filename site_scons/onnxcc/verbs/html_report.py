"""report.html: one self-contained page about a build (inline SVG and CSS, no script).

It reads what the stages wrote -- plan.json (the memory plan), tactics.json, size.json,
profile.json when ``profile`` made one, validate.json when this build validated -- plus the symbol table of the footprint ELF
(the bytes of every kernel function and weight array) and the optimized graph's shapes
(MACs, and which kernel and weights each node uses). Sections: the memory plan as a
timeline per pool (a rectangle per buffer over the steps it is live, at its offsets; the
peak, the lower bound and the bytes live at each step), flash and RAM by category and by
node, the tactics, the profile and the validation.

Model text (graph, node and tensor names, the file name) reaches the page only through
html.escape: the template escapes every expression by default.
"""

import html
import json
import os

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile
from mako.lookup import TemplateLookup

from onnxcc.codegen.lowering import lower_graph, packed_key, weight_symbols
from onnxcc.codegen.stage import planned_graph
from onnxcc.core.errors import OnnxccError
from onnxcc.core.files import write_text
from onnxcc.core.macs import graph_macs
from onnxcc.core.paths import TEMPLATES_DIR
from onnxcc.core.report import human_bytes, pct
from onnxcc.plan import patches as patching
from onnxcc.plan.stage import live_at_steps

from .profile import digest

_lookup = TemplateLookup(directories=[TEMPLATES_DIR], strict_undefined=True,
                         input_encoding="utf-8", default_filters=["escape"],
                         imports=["from onnxcc.verbs.html_report import escape"])

#: the timeline's drawing area, in SVG units
WIDTH, HEIGHT = 760, 260


def escape(value):
    """Every ``${...}`` of the template: the text of ``value``, HTML-escaped (quotes too)."""
    return html.escape(str(value), quote=True)


def symbol_sizes(elf_path):
    """{symbol: bytes} of the defined functions and objects of an ELF (each name once)."""
    try:
        with open(elf_path, "rb") as f:
            elf = ELFFile(f)
            sizes = {}
            for table in elf.iter_sections():
                if table["sh_type"] != "SHT_SYMTAB":
                    continue
                for sym in table.iter_symbols():
                    if sym["st_info"]["type"] in ("STT_FUNC", "STT_OBJECT") \
                            and isinstance(sym["st_shndx"], int) and sym.name:
                        sizes[sym.name] = max(sizes.get(sym.name, 0), sym["st_size"])
            return sizes
    except (OSError, ELFError) as e:
        raise OnnxccError(f"cannot read the footprint ELF's symbols: {e}", where=elf_path) from None


def node_symbols(graph, plan, name):
    """{node name: (kernel function or None, [weight symbols it reads])}."""
    steps, _ = lower_graph(graph, name, name, plan)
    weights, packed = weight_symbols(graph, name)
    result = {}
    for step in steps:
        if step.kernel is None:
            result[step.node.name] = (None, [])
            continue
        used = []
        for role, t in step.call.inputs:
            if role in step.call.packed:
                used.append(packed[packed_key(t, step.call.packed[role])])
            else:
                where = plan["tensors"].get(t)
                root = t if where is None else where.get("constant")
                if root in weights:
                    used.append(weights[root])
        result[step.node.name] = (step.kernel.name, list(dict.fromkeys(used)))
    return result


def timeline(pool, steps, live):
    """The drawing of one pool: a rectangle per buffer (x: the steps it is live, y: its
    offsets, 0 at the bottom), the peak, the lower bound and the live bytes per step."""
    top = max(pool["bytes"], max(live, default=0), 1)
    sx = WIDTH / max(1, steps)

    def y(offset):
        return round(HEIGHT - HEIGHT * offset / top, 2)
    rects = []
    for k, b in enumerate(pool["buffers"]):
        rects.append({"x": round(b["first"] * sx, 2), "w": round((b["last"] - b["first"] + 1) * sx, 2),
                      "y": y(b["offset"] + b["bytes"]), "h": round(HEIGHT * b["bytes"] / top, 2),
                      "name": b["name"], "bytes": b["bytes"], "offset": b["offset"],
                      "first": b["first"], "last": b["last"], "scratch": not b["tensors"],
                      "hue": (k * 47) % 360})
    points = []
    for step, n in enumerate(live):
        points += [(round(step * sx, 2), y(n)), (round((step + 1) * sx, 2), y(n))]
    return {"pool": pool["name"], "bytes": pool["bytes"], "lower_bound": pool["lower_bound_bytes"],
            "algorithm": pool["algorithm"], "rects": rects, "peak_y": y(pool["bytes"]),
            "bound_y": y(pool["lower_bound_bytes"]),
            "live": " ".join(f"{a},{b}" for a, b in points),
            "ticks": [{"x": round((s + 0.5) * sx, 2), "step": s}
                      for s in range(0, steps, max(1, steps // 20))]}


def _load(path):
    with open(path) as f:
        return json.load(f)


def page(plan, chosen, sizes, symbols, graph, name, target, source, profile, profile_note,
         validation=None):
    """The values of the template."""
    live = live_at_steps(plan)
    macs = graph_macs(graph)
    by_node = node_symbols(graph, plan, name)
    kernel_users = {}
    for kernel, _ in by_node.values():
        if kernel:
            kernel_users[kernel] = kernel_users.get(kernel, 0) + 1
    tactic_of = {n["node"]: n for n in chosen["nodes"]}
    nodes = []
    for entry in plan["schedule"]:
        kernel, weights = by_node.get(entry["node"], (None, []))
        t = tactic_of.get(entry["node"]) or tactic_of.get(patching.origin(entry["node"]))
        nodes.append({
            "step": entry["step"], "node": entry["node"], "op": entry["op"],
            "tactic": t["tactic"] if t and entry["code"] == "kernel" else entry["code"],
            "macs": macs.get(entry["node"], 0), "kernel": kernel or "",
            "kernel_bytes": symbols.get(kernel, 0) if kernel else 0,
            "shared": kernel_users.get(kernel, 0) if kernel else 0,
            "weights_bytes": sum(symbols.get(w, 0) for w in weights), "weights": weights,
            "live_bytes": live[entry["step"]],
            "scratch_bytes": entry.get("scratch", {}).get("bytes", 0)})
    steps = len(plan["schedule"])
    flash_total = sizes["flash"]["total"]
    categories = [{"section": section, "key": k, "bytes": sizes[section][k],
                   "pct": pct(sizes[section][k], sizes[section]["total"])}
                  for section, keys in (("flash", ("kernels", "runtime", "model", "weights", "libc")),
                                        ("ram", ("arena", "io", "data", "bss", "stack")))
                  for k in keys if k in sizes[section]]
    candidates = sorted({c for n in chosen["nodes"] for c in n.get("estimated_cycles", {})})
    return dict(name=name, target=target, source=source, graph_name=plan.get("model", ""),
                plan=plan, steps=steps, nodes=nodes, sizes=sizes, categories=categories,
                flash_total=flash_total, tactics=chosen, candidates=candidates,
                timelines=[timeline(p, steps, _pool_live(p, steps)) for p in plan["pools"]],
                profile=profile, profile_note=profile_note, validation=validation,
                human_bytes=human_bytes,
                WIDTH=WIDTH, HEIGHT=HEIGHT)


def _pool_live(pool, steps):
    return live_at_steps({"schedule": [None] * steps, "pools": [pool]})


def _profile_for(path, plan_path, tactics_path):
    """(profile or None, a note when an earlier one is not shown)."""
    if not path or not os.path.isfile(path):
        return None, ""
    p = _load(path)
    if p.get("plan_sha256") != digest(plan_path) or p.get("tactics_sha256") != digest(tactics_path):
        return None, ("profile.json is of an earlier plan or choice of kernels: "
                      "run `profile` again to see this build's")
    return p, ""


def run(report_path, plan_path, tactics_path, size_path, elf_path, graph_path, profile_path,
        name, target, source, validate_path=""):
    """Write report.html."""
    plan, chosen, sizes = _load(plan_path), _load(tactics_path), _load(size_path)
    graph = planned_graph(graph_path, tactics_path, plan)
    profile, note = _profile_for(profile_path, plan_path, tactics_path)
    values = page(plan, chosen, sizes, symbol_sizes(elf_path), graph, name, target, source,
                  profile, note, _load(validate_path) if validate_path else None)
    write_text(report_path, _lookup.get_template("report.html.mako").render(**values))
