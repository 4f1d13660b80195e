"""Winograd F(m x m, 3 x 3) convolution (Lavin & Gray, 2016): the Conv tactic ``winograd``.

A 3x3, stride 1, undilated, ungrouped convolution computes each m x m block of output
(a tile) from the (m+2) x (m+2) input patch around it with (m+2)^2 multiplies per input
and output channel instead of 9 m^2: the patch is transformed (B^T d B), multiplied
element by element with the transformed weights (G g G^T, packed at build time) summed
over the input channels -- (m+2)^2 GEMMs of [out channels x in channels] times
[in channels x tiles], the register tiles of tiling.py -- and transformed back (A^T M A).
F(4x4, 3x3) cuts the multiplies 4x; its transforms round a little more than a direct
sum (a few float32 ulps times the coefficients' 10), well inside verify's bounds.

The tiles are processed in chunks whose transformed inputs and products fit the cache;
the kernel runs on SIMD CPUs only (on a scalar microcontroller the scratch of the
transformed tiles costs more RAM than the multiplies it saves are worth).
"""

import functools
from fractions import Fraction as Q

import numpy as np

from .conv_geometry import phase_span
from .epilogue import vectorizable

#: the output tile edges the cost model chooses from: F(4x4, 3x3) cuts the multiplies 4x
#: but makes the weights 4x larger; F(2x2, 3x3) 2.25x and 1.8x (for layers whose weights
#: outweigh their pixels)
SIZES = (4, 2)
M = 4


@functools.cache
def matrices(m=M):
    """(B^T, G, A^T) of F(m, 3) from the interpolation points 0, +-1, +-2, ... and infinity,
    as exact fractions (tuples: the same ones are handed to every caller)."""
    points = [Q(0)] + [s * Q(k) for k in range(1, m) for s in (1, -1)][:m]
    a = m + 2
    at = [[p ** i for p in points] + [Q(1 if i == m - 1 else 0)] for i in range(m)]
    g = []
    for p in points:
        d = Q(1)
        for q in points:
            if q != p:
                d *= p - q
        g.append([p ** j / d for j in range(3)])
    g.append([Q(0), Q(0), Q(1)])
    # B^T: rows are the coefficients of prod_{q != p} (x - q) (and of the full product for
    # infinity), each row of the polynomial's coefficients in increasing powers
    bt = []
    for p in points:
        coeffs = [Q(1)]
        for q in points:
            if q != p:
                coeffs = _times_linear(coeffs, -q)
        bt.append(coeffs + [Q(0)] * (a - len(coeffs)))
    full = [Q(1)]
    for q in points:
        full = _times_linear(full, -q)
    bt.append(full + [Q(0)] * (a - len(full)))
    return tuple(tuple(tuple(row) for row in mat) for mat in (bt, g, at))


def _times_linear(coeffs, c):
    """(sum coeffs[i] x^i) * (x + c)."""
    out = [Q(0)] * (len(coeffs) + 1)
    for i, v in enumerate(coeffs):
        out[i] += v * c
        out[i + 1] += v
    return out


def transform_weights(weights, m=M):
    """G g G^T of every [out][in] 3x3 kernel: float32 [(m+2)^2][out][in]. One matrix
    product (BLAS) of every kernel's 9 taps with the Kronecker product G (x) G, whose row
    (a, b) and column (x, y) is G[a][x] G[b][y]: 5 times faster than an einsum of the
    three factors on ResNet-18's 512x512 layers."""
    _, g, _ = matrices(m)
    gm = np.array([[float(v) for v in row] for row in g])
    w = np.asarray(weights, np.float64)
    u = np.kron(gm, gm) @ w.reshape(-1, 9).T
    return u.reshape((m + 2) ** 2, w.shape[0], w.shape[1]).astype(np.float32)


def applies(g, cpu):
    """A 2-D 3x3 convolution of stride 1, undilated, one group, on a SIMD CPU."""
    return (cpu.lanes() > 1 and g["group"] == 1
            and (g["kh"], g["kw"], g["sh"], g["sw"], g["dh"], g["dw"]) == (3, 3, 1, 1, 1, 1))


def tile_grid(g, m):
    """(rows of tiles, tiles a row) of the output's m x m tiles."""
    return -(-g["oh"] // m), -(-g["ow"] // m)


def tile_count(g, m):
    th, tw = tile_grid(g, m)
    return th * tw


def plane_floats(g, m):
    """Floats of one channel's patch planes (patch_planes): m (m+2) planes of one row more
    than the tiles' rows, a tile a column."""
    th, tw = tile_grid(g, m)
    return m * (m + 2) * (th + 1) * tw


def plan(g, cpu, best_tile, chunk_budget, m=M):
    """(rows, vecs, tiles per chunk) of the kernel of m x m tiles: the GEMMs' register
    tile, and how many tiles are transformed at a time (a multiple of the tile's width)."""
    tiles = tile_count(g, m)
    (rows, vecs), _ = best_tile(g["m"], tiles, g["c"], cpu, overhang=True)
    width = vecs * cpu.lanes()
    per_tile = 4 * (m + 2) ** 2 * (g["c"] + g["m"])  # its transformed input and products
    cols = max(width, chunk_budget // per_tile // width * width)
    return rows, vecs, min(cols, -(-tiles // width) * width)


#: floats between one point's matrix of the transformed inputs (or products) and the
#: next beyond its rows: a cache line, so that a transform's (m+2)^2 stores (loads) of a
#: vector each, a point apart, fall in as many level-1 sets (a point's matrix is often a
#: multiple of 4 KiB: then all in one set, 36 lines where it has 8 to 12 ways)
POINT_SKEW = 16


def params(g, cpu, rows, vecs, cols, m=M):
    bt, _, at = matrices(m)
    th, tw = tile_grid(g, m)
    p = dict(g, rows=rows, vecs=vecs, lanes=cpu.lanes(), cols=cols, tile=m, tiles_h=th, tiles_w=tw,
             v_point=g["c"] * cols + POINT_SKEW, m_point=g["m"] * cols + POINT_SKEW,
             epilogue_on_vectors=epilogue_on_vectors(g["epilogue"]),
             bt=[[float(v) for v in r] for r in bt], at=[[float(v) for v in r] for r in at])
    p.update(patch_planes(p))
    return p


def epilogue_on_vectors(chain):
    """Whether the bias and ``chain`` run on the back-transform's vectors of tiles: none of
    its operands changes from pixel to pixel (the kernel's coordinate 2), so each is one
    value a vector; else they run float by float as the pixels are stored."""
    return vectorizable(chain, 2) and all(a["strides"][2] == 0 for _, a in chain if "strides" in a)


def patch_planes(p):
    """The padded input of one channel as planes from which a vector of consecutive tiles
    reads an element of their patches with one load: plane (pr, s), for each row phase pr
    < m and patch column s < m + 2, holds padded row m * ty + pr, column m * tx + s at
    [ty][tx] (rows 0..tiles_h, tiles_w columns), so element (r, s) of tile k = ty *
    tiles_w + tx is plane (r % m, s)'s element k + (r // m) * tiles_w, whatever row the
    tile is on. In phase_planes' terms (conv_planes.mako clears and fills them): planes of
    stride m whose ``fills`` have row phase ``py`` = pr and column phase ``px`` = s, each
    with the ``rows`` and ``cols`` its input covers (the rest is padding)."""
    m, th, tw = p["tile"], p["tiles_h"], p["tiles_w"]
    fills = [{"py": pr, "px": s, "rows": phase_span(th + 1, m, pr, p["pt"], p["h"]),
              "cols": phase_span(tw, m, s, p["pl"], p["w"])} for pr in range(m) for s in range(m + 2)]
    plane = (th + 1) * tw
    taps = [((r % m) * (m + 2) + s) * plane + (r // m) * tw for r in range(m + 2) for s in range(m + 2)]
    return {"fills": fills, "plane_rows": th + 1, "plane_cols": tw,
            "channel_floats": plane_floats(p, m), "tap_offsets": taps}


def scratch_floats(p):
    """The padded input's planes (and a vector of slack past them, which the last tiles'
    vector reads), and the transformed inputs and the products of one chunk of tiles."""
    return p["c"] * p["channel_floats"] + p["lanes"] + (p["tile"] + 2) ** 2 * (p["v_point"] + p["m_point"])
