"""Select stage: which tactic (kernel implementation) each node runs -> ``tactics.json``.

An op may have several tactics (``ops/*``: ``TACTICS``): the reference kernel and faster
siblings that use SIMD, scratch memory or packed weights. The choice reads the graph's
structure, the target's CPU (the ``[cpu]`` table of its target file) and the options --
never weight values -- so a weights-only edit leaves ``tactics.json`` byte-identical and
does not re-plan memory or regenerate kernels; the weights are packed for the chosen
kernels when the weights file is generated.

  opt=speed    the applicable tactic with the fewest estimated cycles (each tactic's cost)
  opt=size     every op's reference tactic: the smallest code and no scratch memory
  tactic=...   forced choices, "Conv:im2col,fc1:reference" (op types or node names) or a
               JSON file {"Conv": "im2col", "fc1": "reference"}; a node's name beats its op
               type, and an op-type choice applies where it can (elsewhere: as above)
  tuned        the choices autotune measured (verbs/autotune.py), node name -> tactic: taken
               where they still apply, unless forced
"""

import json
from dataclasses import dataclass

from onnxcc import ops
from onnxcc.core.collector import paused
from onnxcc.core.errors import OnnxccError
from onnxcc.core.files import write_text
from onnxcc.core.onnx_io import load_graph
from onnxcc.target import Cpu

OPT_MODES = ("speed", "size")


@dataclass
class Selection:
    """What tactics.json says: the CPU the kernels are for and each node's tactic."""
    cpu: Cpu
    tactics: dict  # node name -> tactic name

    def tactic(self, node):
        """The node's tactic; its op's reference kernel when none was chosen."""
        return self.tactics.get(node.name) or ops.tactics_for(node)[0].name


#: the reference kernels, for a CPU without SIMD (what tools get without a tactics.json)
REFERENCE = Selection(Cpu(), {})


def parse_forced(text):
    """{op type or node name: tactic} from ``tactic=`` (a list or a JSON file)."""
    if not text:
        return {}
    if text.endswith(".json"):
        try:
            with open(text) as f:
                forced = json.load(f)
        except OSError as e:
            raise OnnxccError(f"cannot read the tactic file: {e.strerror}", where=text) from None
        except json.JSONDecodeError as e:
            raise OnnxccError(f"the tactic file is not JSON: {e}", where=text) from None
        if not isinstance(forced, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in forced.items()):
            raise OnnxccError("the tactic file must map op types or node names to tactic names",
                              where=text, hint='for example {"Conv": "im2col"}')
        return forced
    forced = {}
    for item in text.split(","):
        key, sep, tactic = item.strip().rpartition(":")
        if not sep or not key or not tactic:
            raise OnnxccError(f"tactic={text}: '{item}' is not OP:TACTIC or NODE:TACTIC",
                              hint="for example tactic=Conv:im2col,Gemm:reference")
        forced[key] = tactic
    return forced


def _fastest(candidates, estimates):
    """The candidate of fewest estimated cycles; the earlier one on a tie or no estimate."""
    best = candidates[0]
    for t in candidates[1:]:
        if t.name in estimates and (best.name not in estimates
                                    or estimates[t.name] < estimates[best.name]):
            best = t
    return best


def select(graph, cpu, opt="speed", forced=None, where="graph", tuned=None):
    """The JSON-able content of tactics.json for ``graph`` on ``cpu``."""
    tuned = tuned or {}
    if opt not in OPT_MODES:
        raise OnnxccError(f"opt={opt} is not one of {', '.join(OPT_MODES)}")
    forced = dict(forced or {})
    for key, want in forced.items():  # an op type's tactic is known even when no node has it
        known = [t.name for t in ops.TACTICS.get(key, [])] or (["reference"] if key in ops.LOWERINGS else None)
        if known is not None and want not in known:
            raise OnnxccError(f"tactic={key}:{want}: op {key} has no tactic '{want}'",
                              where=where, hint=f"its tactics: {', '.join(known)}")
    taken = set()
    nodes = []
    for node in graph.nodes:
        if node.op in ops.ALIASES or node.op == "Identity":
            continue  # no kernel: a view, or a copy into a graph output
        known = [t.name for t in ops.tactics_for(node)]
        candidates = ops.applicable(node, graph, cpu)
        estimates = {t.name: round(t.cost(node, graph, cpu)) for t in candidates if t.cost}
        key = node.name if node.name in forced else node.op if node.op in forced else None
        chosen, by = None, opt
        if key is not None:
            want = forced[key]
            if want not in known:
                raise OnnxccError(f"tactic={key}:{want}: op {node.op} has no tactic '{want}'",
                                  where=where, hint=f"its tactics: {', '.join(known)}")
            if want in [t.name for t in candidates]:
                chosen, by = want, "forced"
                taken.add(key)
            elif key == node.name:
                raise OnnxccError(f"tactic={key}:{want}: tactic '{want}' cannot run node "
                                  f"'{node.name}' (op {node.op})", where=where,
                                  hint=f"tactics that can: {', '.join(t.name for t in candidates)}")
        if chosen is None and tuned.get(node.name) in [t.name for t in candidates]:
            chosen, by = tuned[node.name], "tuned"
        if chosen is None:
            chosen = candidates[0].name if opt == "size" else _fastest(candidates, estimates).name
        nodes.append({"node": node.name, "op": node.op, "tactic": chosen, "by": by,
                      "estimated_cycles": estimates})
    unused = sorted(set(forced) - taken)
    if unused:
        key = unused[0]
        raise OnnxccError(f"tactic={key}:{forced[key]} chose nothing: no node of that name or "
                          "op type it can run", where=where,
                          hint="tactics.json of a build lists every node, op and tactic")
    return {"opt": opt, "cpu": cpu.as_dict(), "nodes": nodes}


@paused()
def run(graph_path, out_path, cpu, opt, forced_text, tuned_path=None):
    """The select stage; ``tuned_path``: a file of measured choices (verbs/autotune.py)."""
    graph = load_graph(graph_path, with_values=False)
    tuned = parse_forced(tuned_path) if tuned_path else None
    result = select(graph, cpu, opt, parse_forced(forced_text), graph_path, tuned)
    write_text(out_path, json.dumps(result, indent=1) + "\n")
    return result


def annotate(graph, selection):
    """Record on each node the tactic it runs and the CPU it runs on (``onnxcc_tactic``,
    read by ops.lower), for the stages that lower the graph; not saved."""
    cpu = selection.cpu.as_dict()
    for node in graph.nodes:
        if node.op not in ops.ALIASES and node.op != "Identity":
            node.attrs["onnxcc_tactic"] = [selection.tactic(node), cpu]
    return graph


def load_opt(path):
    """The ``opt`` a select stage chose for (speed or size)."""
    with open(path) as f:
        return json.load(f)["opt"]


def load(path):
    """The Selection a select stage wrote."""
    with open(path) as f:
        data = json.load(f)
    return Selection(Cpu.from_dict(data["cpu"]), {n["node"]: n["tactic"] for n in data["nodes"]})
