<%namespace name="simd" file="/kernels/lib/simd.mako"/>
<%!
    # The next panel's prefetch, shared by the kernels whose tiles re-read a panel of
    # weights from the cache in several passes (conv2d_1x1's and conv2d_implicit's
    # channel-vector tiles, gemm_blocked's row blocks): pass q of `passes` asks for its
    # share of the next panel -- the steps' offsets scaled by 1/passes, from q/passes of the
    # last step's -- because one pass alone asked for it all at once, faster than memory
    # delivers it. The kernel declares `pq` in each pass (next_panel_pass) and gives the
    # tile next_panel_share as its `prefetch`, share_lines as its `prefetch_lines`.

    def next_panel_pass(q, last_step_bytes):
        """The declaration of pass ``q``'s byte offset into the next panel (``q``: a C
        expression; ``last_step_bytes``: the offset of a panel's last step)."""
        return f"const size_t pq = (size_t)({q}) * {last_step_bytes}u;"

    def next_panel_share(base, step, width, passes):
        """The C pointer step ``step`` (a C expression) of a pass prefetches: its share of
        the next panel at ``base``, of steps of ``width`` floats (with one pass, the step
        itself)."""
        if passes == 1:
            return f"{base} + (size_t){step} * {width}u"
        return f"(const float *)((const char *){base} + ((size_t){step} * {4 * width}u + pq) / {passes}u)"

    def share_lines(width, passes):
        """The cache lines of a step's share (its width over the passes)."""
        return -(-4 * width // (64 * max(passes, 1)))
%>\
<%doc>
  The register-blocked GEMM tile of the blocked kernels (conv2d_1x1, conv2d_im2col,
  conv2d_implicit, gemm_blocked): rows x vecs accumulators of `lanes` floats stay in
  registers while the sum runs; each step loads `vecs` vectors of B and broadcasts `rows`
  values of A. Then the fused epilogue runs on the registers and the tile is stored.
  lanes == 1 is the scalar fallback: plain floats, the same code otherwise. Vectors are
  GCC vector extensions (vf), so one template serves AVX2, NEON and scalar CPUs; the
  sizes come from ops/common/tiling.py.
</%doc>

## The definition line of a kernel whose multiply-adds may each round once: on CPUs with
## a fused multiply-add its tiles use it (-std=c99 leaves every other kernel uncontracted).
<%def name="contracted(signature)">\
__attribute__((optimize("fp-contract=fast")))
${signature}\
</%def>

## The vector types (once per kernel function that uses lanes > 1); vi (lane masks) only
## for an epilogue that runs on vectors and selects (a unary op).
<%def name="types(lanes, chain=(), lane_axis=0)">\
% if lanes > 1:
${simd.types(lanes)}\
% endif
</%def>

<%doc>
  The epilogue `chain` (ops/common/epilogue.py) of `var`, a vector whose lanes walk coordinate
  `lane_axis` (`valid` of them are results), or a float (lanes == 1); coords: the kernel
  coordinates of its (first) element.
</%doc>
<%def name="apply(var, lanes, chain, coords, lane_axis, valid, fast=True)" filter="trim">\
% if lanes == 1:
${epilogue(var, chain, coords, fast=fast)}
% else:
${vector_epilogue(var, chain, coords, lane_axis, lanes, valid)}
% endif
</%def>

<%doc>
  The one way every register-blocked kernel ends a row of a tile: the first `width` results
  in accumulators acc{i}_0, acc{i}_1, ... (vectors of `lanes` floats, or floats) get the
  epilogue `chain` and go to pointer out(i), contiguous or `stride` floats apart; coords(i,
  col) are the kernel coordinates of result col (lanes walk coordinate lane_axis). The
  chain always runs, on every result: on the registers when it can (lanes == 1, or every
  op has a vector form), else on each float on its way out. `spill`: a row shorter than
  its vectors is stored as whole vectors all the same, its last lanes landing on results
  the caller stores after (rows of a depthwise tile narrower than a vector). `fast`: floats
  call the vmath functions where they beat libm (epilogue_code's; False: a reference
  kernel, which opt=size keeps on libm).
</%doc>
<%def name="store(i, lanes, width, out, chain, coords, lane_axis, ind, stride=None, spill=False, fast=True)">\
<%
    count = -(-width // lanes)
    in_registers = lanes == 1 or vectorizable(chain, lane_axis)
    def at(j):
        return j if stride is None else f"{j} * {stride}"
%>\
% if chain and in_registers:
% for v in range(count):
${ind}${apply(f'acc{i}_{v}', lanes, chain, coords(i, v * lanes), lane_axis, min(lanes, width - v * lanes), fast)}
% endfor
% endif
% if lanes == 1:
${ind}{ float *o = ${out(i)}; ${' '.join(f'o[{at(v)}] = acc{i}_{v};' for v in range(count))} }
% elif in_registers and stride is None and (width == count * lanes or spill):
${ind}{ float *o = ${out(i)}; ${' '.join(f'*(vfu *)(o + {v * lanes}) = acc{i}_{v};' for v in range(count))} }${'  /* its last lanes land in the next rows */' if width < count * lanes else ''}
% elif in_registers and stride is None:
## (a row shorter than its vectors, e.g. an image row: its whole vectors, then the
## first floats of the last one, as one copy rather than float by float)
${ind}{ float *o = ${out(i)}; ${' '.join(f'*(vfu *)(o + {v * lanes}) = acc{i}_{v};' for v in range(count - 1))} memcpy(o + ${(count - 1) * lanes}, &acc${i}_${count - 1}, ${width - (count - 1) * lanes}u * sizeof(float)); }
% else:
${ind}{
${ind}    float part[${count * lanes}];
${ind}    ${' '.join(f'*(vfu *)(part + {v * lanes}) = acc{i}_{v};' for v in range(count))}
${ind}    for (int jj = 0; jj < ${width}; ++jj) {
${ind}        float v = part[jj];
% if chain and not in_registers:
${ind}        ${epilogue('v', chain, coords(i, 'jj'), fast=fast)}
% endif
${ind}        (${out(i)})[${at('jj')}] = v;
${ind}    }
${ind}}
% endif
</%def>

<%doc>
  One tile. The sum runs over kc = 0..count-1, each with `taps` unrolled steps t:
  a_at(i, t) is the C expression of A's value for row i, b_at(t) the C pointer to the
  step's first B value (both may use kc). The sums start at zero, or at the chain's
  leading bias (sums_start), or, with `accumulate`, resume from the partial sums already
  at out(i) (a sum cut in chunks; contiguous rows only). Row i's first `width` results go to pointer out(i), contiguous, or `stride`
  floats apart, through `store` with the epilogue `chain`; coords(i, col) are the kernel
  coordinates of its element col (lanes walk coordinate lane_axis). `fence`: the taps
  read overlapping A values (a convolution's neighbouring pixels, broadcast): an empty
  asm between taps keeps GCC from holding them in registers for the next taps, which
  on 16 registers spilled an accumulator into the sum's loop (a third of the speed).
  `opaque`: pointers (the epilogue's operands) the tile launders after its sum, so that
  GCC cannot hoist a row-invariant load (a bias vector) out of the row loop into a
  register the sum needs: on 16 registers a 6x16 tile spilled an accumulator (-12%).
  `prefetch(t)`: a C pointer whose cache lines each step asks for ahead of time (the
  next panel of weights while this one is re-read from the cache), `prefetch_lines` of
  them (default: the step's B vectors' lines; fewer where a step asks for a small share).
</%doc>
<%def name="tile(rows, vecs, lanes, count, taps, a_at, b_at, out, width, chain, coords, lane_axis, indent, stride=None, accumulate=False, fence=False, opaque=(), prefetch=None, prefetch_lines=None)">\
<%
    assert not (accumulate and stride), "partial sums are resumed from contiguous rows only"
    ind = ' ' * indent
    acc_type = 'vf' if lanes > 1 else 'float'
    # (the sums start at the chain's leading bias where they can, epilogue.sums_start;
    # resumed sums have theirs already)
    start, after = sums_start(chain, lane_axis, lanes, width >= vecs * lanes)
    if accumulate:
        after = chain
    def ld(ptr):
        return f'*(const vfu *)({ptr})' if lanes > 1 else f'*({ptr})'
%>\
${ind}{
% for i in range(rows):
% if not accumulate:
${ind}    ${acc_type} ${', '.join(f'acc{i}_{v} = {start(coords(i, v * lanes))}' for v in range(vecs))};
% else:
% for v in range(vecs):
% if lanes == 1:
${ind}    float acc${i}_${v} = (${out(i)})[${v}];
% else:
${ind}    vf acc${i}_${v} = (vf){0};
${ind}    memcpy(&acc${i}_${v}, ${out(i)} + ${v * lanes}, ${max(0, min(lanes, width - v * lanes))}u * sizeof(float));
% endif
% endfor
% endif
% endfor
${ind}    for (int kc = 0; kc < ${count}; ++kc) {
% for t in range(taps):
% if fence and t:
${ind}        __asm__("" ::: "memory");
% endif
${ind}        {
${ind}            const ${acc_type} ${', '.join(f'bv{v} = {ld(f"{b_at(t)} + {v * lanes}")}' for v in range(vecs))};
% if prefetch:
${ind}            ${' '.join(f'__builtin_prefetch({prefetch(t)} + {v * lanes}, 0, 2);' for v in range(0, vecs, max(1, 16 // lanes))[:prefetch_lines])}
% endif
% for i in range(rows):
${ind}            { const float av = ${a_at(i, t)}; ${' '.join(f'acc{i}_{v} += bv{v} * av;' for v in range(vecs))} }
% endfor
${ind}        }
% endfor
${ind}    }
% for name in opaque:
${ind}    __asm__ volatile("" : "+r"(${name}));
% endfor
% for i in range(rows):
${store(i, lanes, width, out, after, coords, lane_axis, ind + '    ', stride)}\
% endfor
${ind}}
</%def>

<%doc>
  All row blocks of one column tile: A is packed in panels of `rows` rows (`panel`
  floats each) starting at pointer `a_base`; block r0 is bound to `wp` (its panel) and
  `r0` (its first row) for the caller's a_at / out / coords. The last block may
  have fewer rows (its panel is zero-padded).
</%doc>
<%def name="row_blocks(m, rows, vecs, lanes, count, taps, a_base, panel, a_at, b_at, out, width, chain, coords, lane_axis, indent)">\
<%
    ind = ' ' * indent
    full, rest = divmod(m, rows)
%>\
% if full:
${ind}for (int mb = 0; mb < ${full}; ++mb) {
${ind}    const float *wp = ${a_base} + (size_t)mb * ${panel}u;
${ind}    const int r0 = mb * ${rows};
${tile(rows, vecs, lanes, count, taps, a_at, b_at, out, width, chain, coords, lane_axis, indent + 4)}\
${ind}}
% endif
% if rest:
${ind}{
${ind}    const float *wp = ${a_base} + ${full * panel}u;
${ind}    const int r0 = ${full * rows};
${tile(rest, vecs, lanes, count, taps, a_at, b_at, out, width, chain, coords, lane_axis, indent + 4)}\
${ind}}
% endif
</%def>
