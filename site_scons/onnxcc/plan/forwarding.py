"""Memory forwarding: which tensors share memory, and which nodes need no code for it.

Every tensor is placed in the memory of a *root* tensor at a byte offset. A root and the
tensors placed in it form one buffer of the arena, unless the root is *fixed*: a
constant (flash), or a graph input or output the caller owns (``io=caller``). Decided
in this order, each on what the previous ones left:

1. views: the reshape family and Identity re-view their input: the output is placed
   where the input is. A view the caller must receive in its own output buffer moves the
   input there instead (its producer writes straight into the caller's buffer), else it
   is a copy;
2. concat: when the inputs lie end to end in the output (all dimensions before the axis
   are 1), each input's memory is moved into its slice of the output: the producers
   write straight into it and the concat needs no code;
   then a Slice or Split whose outputs are contiguous runs of its input (a slice along a
   leading axis: a one-channel image's row band, a channel split of one image) places
   them inside the input (no code), unless the caller owns one or a concat took one
   (its producer then writes straight into the concat: a copy either way);
3. in place: a kernel that can write its output over an input (``ops.INPLACE``) does so
   when nothing in that input's buffer is read by a later step (nor must outlive the
   run), following the schedule; the output is placed where the input is.
"""

from dataclasses import dataclass, field

from onnxcc import ops
from onnxcc.core.ir import itemsize
from onnxcc.ops.layout import contiguous_parts

VIEW_OPS = ops.ALIASES | {"Identity"}


class Lowered:
    """The kernel calls of a graph's nodes, each lowered once: the planner tries several
    forwardings of one graph (which does not change meanwhile), and lowering a node
    costs a tile search or requantization tables."""

    def __init__(self, graph):
        self.graph, self._calls = graph, {}

    def call(self, k):
        """``ops.lower`` of node k."""
        if k not in self._calls:
            self._calls[k] = ops.lower(self.graph.nodes[k], self.graph)
        return self._calls[k]

    def overwriting(self, k, tensor):
        """``ops.can_overwrite`` of node k and its input ``tensor``."""
        if (k, tensor) not in self._calls:
            self._calls[k, tensor] = ops.can_overwrite(self.graph.nodes[k], self.graph, tensor)
        return self._calls[k, tensor]


@dataclass
class Forwarding:
    place: dict  # tensor -> (root tensor, byte offset in the root's memory)
    fixed: set  # roots that are not arena buffers
    sizes: dict  # tensor -> bytes
    persistent: set = field(default_factory=set)  # tensors that must outlive the run
    code: dict = field(default_factory=dict)  # node index -> "kernel", "none" or "copy"
    calls: dict = field(default_factory=dict)  # node index -> its KernelCall
    overwrites: dict = field(default_factory=dict)  # node index -> input written over
    lowered: Lowered = None  # the kernel calls it chose from

    def __post_init__(self):
        # root -> the tensors placed in its memory, and root -> its extent, kept with
        # ``place`` (which only ``move`` changes), so that asking is not a walk over every
        # tensor, nor over a root's members (a chain of in-place kernels puts a whole
        # residual stream in one root)
        self._members, self._extents = {}, {}
        for t, (r, offset) in self.place.items():
            self._members.setdefault(r, []).append(t)
            self._extents[r] = max(self._extents.get(r, 0), offset + self.sizes[t])

    def root(self, tensor):
        return self.place[tensor][0]

    def members(self, root):
        return list(self._members.get(root, ()))

    def extent(self, root):
        """Bytes from the root's start to the end of its last member."""
        return self._extents[root]

    def move(self, root, new_root, offset):
        """Place ``root`` and everything in it at ``offset`` in ``new_root``'s memory."""
        moved = self._members.pop(root, [])
        for t in moved:
            self.place[t] = (new_root, self.place[t][1] + offset)
        self._members.setdefault(new_root, []).extend(moved)
        if moved:
            end = self._extents.pop(root) + offset
            self._extents[new_root] = max(self._extents.get(new_root, end), end)

    def owns_memory(self, tensor):
        """The tensor is all of an arena buffer that may still move."""
        root, offset = self.place[tensor]
        return (root not in self.fixed and offset == 0
                and self.extent(root) == self.sizes[tensor])


def forward(graph, order, io_in_arena, in_place=True, concat=True, lowered=None):
    """The ``Forwarding`` of ``graph`` run in ``order`` (node indices). ``in_place``: True
    (wherever a kernel can), False, or the node indices where it may; ``in_place`` and
    ``concat`` False leave only views (what a plain liveness planner does). ``lowered``:
    the graph's ``Lowered``, to share between forwardings."""
    fixed = set(graph.constants)
    if not io_in_arena:
        fixed |= set(graph.inputs) | set(graph.outputs)
    used = dict.fromkeys(graph.inputs + graph.outputs
                         + [t for node in graph.nodes for t in node.inputs + node.outputs if t])
    f = Forwarding({t: (t, 0) for t in used}, fixed, {t: graph.info(t).nbytes for t in used},
                   persistent=set(graph.outputs), lowered=lowered or Lowered(graph))
    nodes = [graph.nodes[k] for k in order]
    _views(graph, order, nodes, f)
    if concat:
        _concats(graph, order, nodes, f)
    _slices(graph, order, nodes, f)
    _kernels(graph, order, nodes, f, in_place)
    return f


def _movable(f, graph, tensor):
    """The tensor's memory may be moved into another buffer (or the caller's)."""
    return f.owns_memory(tensor) and not set(f.members(f.root(tensor))) & set(graph.inputs)


def _views(graph, order, nodes, f):
    for k, node in zip(order, nodes):
        if node.op not in VIEW_OPS:
            continue
        x, y = node.inputs[0], node.outputs[0]
        caller_output = y in f.fixed
        if not caller_output and not (y in graph.outputs and f.root(x) in graph.constants):
            f.move(y, *f.place[x])
            f.code[k] = "none"
        elif caller_output and _movable(f, graph, x):
            f.move(f.root(x), y, 0)
            f.code[k] = "none"
        else:
            f.code[k] = "copy"


def _slices(graph, order, nodes, f):
    for k, node in zip(order, nodes):
        parts = contiguous_parts(node, graph) if node.op in ("Slice", "Split") else None
        if not parts:
            continue
        x = node.inputs[0]
        root, offset = f.place[x]
        # each output still its own memory (not moved into a caller's output by a view),
        # none the caller's, none a graph output left in a constant
        if len(parts) != len(node.outputs) or any(
                y in f.fixed or f.root(y) != y or (y in graph.outputs and root in graph.constants)
                for y in parts):
            continue
        width = itemsize(graph.info(x).dtype)
        for y, start in parts.items():
            f.move(y, root, offset + start * width)
        f.code[k] = "none"


def _contiguous_slices(graph, node):
    shape = graph.info(node.outputs[0]).shape
    axis = node.attrs["axis"] % len(shape)
    return all(d == 1 for d in shape[:axis])


def _concats(graph, order, nodes, f):
    for k, node in zip(order, nodes):
        if node.op != "Concat" or not _contiguous_slices(graph, node):
            continue
        xs, y = node.inputs, node.outputs[0]
        roots = [f.root(x) for x in xs]
        if (len(set(xs)) != len(xs) or len(set(roots)) != len(roots) or f.root(y) in roots
                or not all(_movable(f, graph, x) for x in xs)):
            continue
        root, offset = f.place[y]
        for x in xs:
            f.move(f.root(x), root, offset)
            offset += f.sizes[x]
        f.code[k] = "none"


def _kernels(graph, order, nodes, f, in_place):
    last_read = {}
    for step, node in enumerate(nodes):
        for t in node.inputs:
            if t:
                last_read[t] = step
    # root -> the last step that reads a tensor in its memory (past the last step when
    # one must outlive the run), kept up to date as outputs move over inputs
    busy = {}
    for t, (root, _) in f.place.items():
        until = len(nodes) if t in f.persistent else last_read.get(t, -1)
        busy[root] = max(busy.get(root, -1), until)
    for step, (k, node) in enumerate(zip(order, nodes)):
        if k in f.code:
            continue
        if all(f.sizes[t] == 0 for t in node.outputs if t):  # empty outputs: nothing to compute
            f.code[k] = "none"
            continue
        f.code[k] = "kernel"
        f.calls[k] = f.lowered.call(k)
        allowed = in_place is True or (in_place and k in in_place)
        if not allowed or len(node.outputs) != 1 or not f.owns_memory(node.outputs[0]):
            continue
        y = node.outputs[0]
        y_width = itemsize(graph.info(y).dtype)
        inputs = [t for t in dict.fromkeys(node.inputs) if t]
        for x in inputs:
            root, offset = f.place[x]
            if (root in f.fixed or busy[root] > step
                    or any(f.root(t) == root for t in inputs if t != x)
                    or offset % y_width):  # y's elements unaligned (over an int8 concat slice)
                continue
            call = f.lowered.overwriting(k, x)
            if call is not None:
                f.move(y, root, offset)
                busy[root] = max(busy[root], busy.pop(y, -1))
                f.overwrites[k] = x
                f.calls[k] = call
                break
