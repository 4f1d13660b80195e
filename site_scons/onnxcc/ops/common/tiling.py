"""Tile shapes and cycle estimates for the register-blocked kernels (templates/kernels/lib/tile.mako).

A tile is ``rows x vecs`` accumulators of ``lanes`` floats: each step of the sum loads
``vecs`` vectors of B and ``rows`` values of A and does ``rows * vecs`` multiply-adds. The
estimates are rough on purpose -- they only have to rank a node's tactics and tile shapes.
On a SIMD CPU they count cycles of a core issuing two vector multiply-adds and two loads
per cycle; on a scalar one they count instructions (what bench reports there).
"""

import functools
import math

MAX_ROWS = 8
MAX_VECS = 8
#: the row limit of a `tall` tile (a GEMM kernel's, on a CPU of 512-bit vectors)
TALL_ROWS = 14
#: bytes between addresses that share a level-1 set (its size over its ways: 4 KiB on
#: Skylake-X's 32 KiB 8-way, Ice Lake's 48 KiB 12-way and Zen 4's 32 KiB 8-way L1)
L1_WAY_BYTES = 4096
#: the row limit of a tall tile whose A rows are a multiple of L1_WAY_BYTES apart: those
#: rows share one set of 8 ways (with the B panel's lines), so more of them evict each
#: other between the 16 steps that read each line (the numbers: docs/speed.md,
#: "On Zen 4: A's rows in one L1 set, and the next panel's prefetch")
ALIASED_ROWS = 8


def _simd(cpu):
    return cpu.lanes() > 1


def tall_tiles(cpu, tall=True):
    """Tall tiles are weighed for this kernel on this CPU: one that asks (a GEMM's), on
    512-bit vectors (measured there, docs/speed.md "Transformer MatMuls")."""
    return tall and _simd(cpu) and cpu.simd_bytes >= 64


def registers_needed(rows, vecs, operands=0):
    """Registers a tile of ``rows x vecs`` accumulators keeps live in its sum: those, its B
    vectors, the broadcast A value, and ``operands`` vectors per column vector of epilogue
    operands hoisted out of the sum. A one-row tile reads each B vector once, straight
    into its multiply-add: those need no register."""
    return rows * vecs + (vecs if rows > 1 else 0) + 1 + operands * vecs


def tile_fits(rows, vecs, cpu):
    """The tile fits the CPU's registers with a few spare for the compiler."""
    return registers_needed(rows, vecs) + (1 if _simd(cpu) else 4) <= cpu.registers


def aliased_rows(row_bytes):
    """A's rows, ``row_bytes`` apart, all fall in one level-1 set."""
    return bool(row_bytes) and row_bytes % L1_WAY_BYTES == 0


def tile_shapes(cpu, tall=False, aliased=False):
    """(rows, vecs) of the tiles that fit the registers (1 x 1 always: however few a core
    has, one accumulator it can keep). ``tall``: up to TALL_ROWS rows (ALIASED_ROWS where
    A's rows share a level-1 set, ``aliased``)."""
    max_rows = (ALIASED_ROWS if aliased else TALL_ROWS) if tall_tiles(cpu, tall) else MAX_ROWS
    return [(r, v) for r in range(1, max_rows + 1) for v in range(1, MAX_VECS + 1)
            if tile_fits(r, v, cpu) or (r, v) == (1, 1)]


def column_tails(rest, lanes):
    """The last ``rest`` columns of a matrix that must not be read past, as tiles of
    (first column, vecs, lanes): whole vectors, then one of half the lanes, of a quarter
    (down to 4 lanes), then single floats."""
    tails, start = [], 0
    halves = [lanes >> s for s in range(1, lanes.bit_length()) if lanes >> s >= 4]
    for width in [lanes] + halves + [1]:
        if rest - start >= width:
            count = (rest - start) // width
            tails.append((start, count, width))
            start += count * width
    return tails


def step_cost(rows, vecs, cpu, from_l2=False, tall=False):
    """Cycles (or instructions) of one step of the sum of one tile (of vectors or, as
    fast on a superscalar core, of floats). ``from_l2``: the B vectors stream from the
    level-2 cache (the panel a tile sums over outgrew the level-1): two cycles each.
    ``tall`` (a GEMM kernel on 512-bit vectors): each B vector of a step costs about 3/4
    of a cycle more than its multiply-adds, wherever its panel is (the numbers:
    docs/speed.md, "Transformer MatMuls")."""
    if tall_tiles(cpu, tall) and rows >= 4:  # (panels from the level 2 included)
        return max(rows * vecs, rows + vecs) / 2 + 0.75 * vecs + 0.5
    if _simd(cpu) and cpu.simd_bytes >= 64 and rows < 4:
        # GCC folds a B vector used 3 times or fewer into the multiply-adds' memory operands,
        # and folded 512-bit loads issue about one a cycle: every multiply-add and broadcast
        # is a load (the numbers: docs/speed.md, "RegNetX's group convolutions")
        return max(rows * vecs + rows, 4 * vecs if from_l2 else 0) + 0.5
    if _simd(cpu):
        return max(rows * vecs, rows + vecs, 4 * vecs if from_l2 else 0) / 2 + 0.5
    return rows * vecs + rows + vecs + 0.5


def tile_cost(rows, vecs, steps, cpu, scatter=False, blocks=False, tall=False):
    """One tile: its sum, then storing it (``scatter``: float by float, strided; ``blocks``:
    whole vectors to a scratch transposed back ``lanes x lanes`` at a time, a load, a store
    and log2(lanes) shuffles a vector; ``tall``: step_cost's)."""
    store = rows * vecs * (cpu.lanes() + 1) if scatter else 2 * rows * vecs
    if blocks:
        store += rows * vecs * (2 + math.log2(cpu.lanes()))
    from_l2 = cpu.l1d_bytes and steps * vecs * cpu.lanes() * 4 > cpu.l1d_bytes // 2
    return steps * step_cost(rows, vecs, cpu, from_l2, tall) + store + 8


def gemm_cost(m, n, k, rows, vecs, cpu, overhang=True, scatter=False, blocks=False,
              tall=False):
    """C[m][n] = A[m][k] B[k][n] in tiles of ``rows x vecs`` vectors. ``overhang``: the last
    column tile may read past n (B is padded), else it is split into vectors and floats;
    ``scatter``, ``blocks``: C is stored transposed, float by float or in blocks (tile_cost);
    ``tall``: step_cost's."""
    lanes = cpu.lanes()
    width = vecs * lanes
    full_rows, rest_rows = divmod(m, rows)

    def column_tiles(r):
        """Cost of one row block of r rows over all columns."""
        if r == 0:
            return 0.0
        full, rest = divmod(n, width)
        cost = full * tile_cost(r, vecs, k, cpu, scatter, blocks, tall)
        if rest and overhang:
            cost += tile_cost(r, math.ceil(rest / lanes), k, cpu, scatter, blocks, tall)
        elif rest:
            cost += sum(tile_cost(r, v, k, cpu, scatter, blocks, tall)
                        for _, v, _ in column_tails(rest, lanes))
        return cost
    return full_rows * column_tiles(rows) + column_tiles(rest_rows)


@functools.cache
def best_tile(m, n, k, cpu, overhang=True, scatter=False, blocks=False, tall=False,
              aliased=False):
    """The (rows, vecs) of fewest estimated cycles for this GEMM, and that estimate.
    Remembered per shape: a plan lowers each node several times, and a transformer's
    layers repeat the same few shapes. ``tall``, ``aliased``: tile_shapes'."""
    best = None
    for rows, vecs in tile_shapes(cpu, tall, aliased):
        if rows > m:
            continue  # a row block taller than the matrix only wastes flash on padding
        cost = gemm_cost(m, n, k, rows, vecs, cpu, overhang, scatter, blocks, tall)
        if best is None or cost < best[2]:
            best = (rows, vecs, cost)
    return best[:2], best[2]


def copy_cost(elements, cpu, contiguous=True):
    """Cycles to copy (or zero) ``elements`` floats."""
    if contiguous and _simd(cpu):
        return elements / cpu.lanes() + 4
    return 2.0 * elements + 4


def l2_share(cpu):
    """The part of the level-2 cache (the target file's ``l2_bytes``) a kernel's operands
    may count on: half of it, the rest holding the layer's other tensors; 0 without one."""
    return cpu.l2_bytes // 2


def reread_cost(size, passes, cpu):
    """Cycles to read an operand of ``size`` bytes again ``passes`` times, beyond what the
    tiles count (they read from the level-1 or level-2 cache): a kernel whose loops
    re-read all its weights for every row of output stalls on the caches outside the
    core. The level 2 (its ``l2_share``) streams 32 bytes a cycle, what outgrows it 8."""
    if not cpu.l1d_bytes or size <= cpu.l1d_bytes // 2:
        return 0.0
    return passes * size / (32 if size <= l2_share(cpu) else 8)


#: cycles (or instructions) per float of the unary ops whose C calls libm, in the
#: reference kernels; 1 for any other op
LIBM_COST = {"Exp": 25, "Log": 25, "Erf": 30, "Sigmoid": 30, "Tanh": 40, "Swish": 32,
             "Gelu": 35, "Elu": 30, "Selu": 30, "Celu": 35, "Softplus": 70, "Mish": 100,
             "Softsign": 12}
#: cycles per vector (a float on a scalar CPU) of the same ops' libm-free functions
#: (templates/kernels/lib/vmath.mako), the other tactics' epilogues: selects, a polynomial,
#: a division; the counts of their operations on x86 (exp's reduction one fused
#: multiply-add, its scaling one vscalefps on AVX-512: benchmarks in docs/speed.md)
VMATH_COST = {"Exp": 13, "Log": 22, "Erf": 33, "Sigmoid": 16, "Tanh": 19, "Swish": 17,
              "Gelu": 34, "Elu": 20, "Selu": 21, "Celu": 21, "Softplus": 31, "Mish": 19,
              "Softsign": 4}


def epilogue_cost(elements, chain, lanes=None):
    """The pass over a kernel's results that applies its epilogue (nothing when empty).
    ``lanes``: it runs on vectors of that many floats with the libm-free functions (1:
    floats, with the cheaper of the two); None: float by float, with libm (a reference
    kernel)."""
    if not chain:
        return 0.0
    if lanes is None:
        per = sum(LIBM_COST.get(op, 1) for op, _ in chain)
    elif lanes == 1:
        per = sum(min(LIBM_COST.get(op, 1), VMATH_COST.get(op, 1)) for op, _ in chain)
    else:
        per = sum(VMATH_COST.get(op, 1) for op, _ in chain) / lanes
    return elements * (0.5 + per)


def scalar_mac_cost(cpu):
    """One multiply-add of a reference (naive, scalar) loop."""
    return 1.0 if _simd(cpu) else 4.0
