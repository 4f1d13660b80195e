<%namespace name="tl" file="/kernels/lib/tile.mako"/>\
<%doc>
  ${p['cell']} over ${p['seq']} time steps, ${p['directions']} direction(s), batch ${p['batch']}, hidden ${p['hidden']}
  (${'[batch][seq]' if p['layout'] else '[seq][batch]'} layout), the blocked tactic (ops/recurrent.py). Per direction
  and batch entry: the input projection X W^T + Wb + Rb of `chunk` steps at a time as one
  register-tiled GEMM into scratch, then per step h R^T as a one-row tile per block of
  `units` vectors of hidden units -- the block's rows of every gate of a group side by side
  in one packed panel -- and that block's gates combined right after its tile. Hidden
  units are padded to whole blocks (zero weights); only the real ones are stored.
  Gate order (ONNX): ${ {'RNN': 'i', 'GRU': 'z r h', 'LSTM': 'i o f c'}[p['cell']] }.
</%doc>\
<%
    cell, G, H, I = p['cell'], p['gates'], p['hidden'], p['input']
    S, B, D, layout = p['seq'], p['batch'], p['directions'], p['layout']
    has = set(p['has'])
    lstm = cell == 'LSTM'
    lanes, U = p['lanes'], p['units']
    blk = U * lanes
    Hp = p['padded']
    blocks = Hp // blk
    GHp = G * Hp
    groups = p['groups']
    rows, vecs, chunk = p['rows'], p['vecs'], p['chunk']
    width = vecs * lanes
    full_panels, rest = divmod(GHp, width)
    apart = cell == 'GRU' and p['linear_before_reset']
    per_direction = p['direction_floats']  # of each packed input (packing.packed_size)
    clip = p['clip']
    # scratch, in floats
    o_pre = chunk * GHp
    o_h = o_pre + G * blk
    o_extra = o_h + 2 * Hp
    vt = 'vf' if lanes > 1 else 'float'
    def ld(ptr):
        return f'*(const vfu *)({ptr})' if lanes > 1 else f'*({ptr})'
    def st(ptr, value):
        return f'*(vfu *)({ptr}) = {value};' if lanes > 1 else f'*({ptr}) = {value};'
    clip_step = None if clip is None else {
        'op': ['Clip', {'min': -clip, 'max': clip}],
        'scalar': expression('v', ['Clip', {'min': -clip, 'max': clip}])}
    def in_vectors(step):
        return lanes > 1 and step['op'] is not None and vectorizable([step['op']], 0)
    vector_ops = [s['op'] for s in [a for per in p['activations'] for a in per] + [clip_step]
                  if s is not None and in_vectors(s)]
    def apply(var, step):
        """C statements applying one activation (or the clip) to `var` in place: on the
        vector when the op has vector code (epilogue.py), else lane by lane (Affine and
        ScaledTanh, which are no ONNX ops, spelled here)."""
        if step is None:
            return ''
        if in_vectors(step):
            code = vector_epilogue(var, [step['op']], (), 0, lanes, lanes)
        else:
            scalar = f"v = {step['scalar']};" if step['op'] is None else epilogue('v', [step['op']], ())
            code = (f"{{ float v = {var}; {scalar} {var} = v; }}" if lanes == 1 else
                    f"for (int l = 0; l < {lanes}; ++l) {{ float v = {var}[l]; {scalar} {var}[l] = v; }}")
        return code + (' ' if step is clip_step else '')
    def activated(var, act):
        """The clip (when there is one), then the activation: what every gate gets."""
        return apply(var, clip_step) + apply(var, act)
    def x_at(s, d):
        t = f"(len - 1u - ({s}))" if p['reverse'][d] else f"({s})"
        return f"x + (e * {S}u + {t}) * {I}u" if layout else f"x + ({t} * {B}u + e) * {I}u"
    def y_at(t, d):
        return (f"y + ((e * {S}u + {t}) * {D}u + {d}u) * {H}u" if layout
                else f"y + (({t} * {D}u + {d}u) * {B}u + e) * {H}u")
    def state_at(name, d):
        return (f"{name} + (e * {D}u + {d}u) * {H}u" if layout
                else f"{name} + ({d}u * {B}u + e) * {H}u")
%>\
<%def name="project(nrows, d)">\
<%
    bias_chain = [['Add', {'operand': 'bias', 'value_first': True, 'strides': [0, 1]}]] if 'b' in has else []
    a_at = lambda i, t: f"xr{i}[kc]"
    b_at = lambda t: f"wpanel + (size_t)kc * {width}u"
    out = lambda i: f"pr + {i * GHp}u + j0"
    coords = lambda i, col: [f"i0 + {i}", f"j0 + {col}"]
%>\
                {
% for i in range(nrows):
                    const float *xr${i} = ${x_at(f's0 + i0 + {i}u', d)};
% endfor
                    float *pr = proj + i0 * ${GHp}u;
% if full_panels:
                    for (int j0 = 0; j0 < ${full_panels * width}; j0 += ${width}) {
                        const float *wpanel = wd + (size_t)j0 * ${I}u;
${tl.tile(nrows, vecs, lanes, I, 1, a_at, b_at, out, width, bias_chain, coords, 1, 24)}\
                    }
% endif
% if rest:
                    {
                        const int j0 = ${full_panels * width};
                        const float *wpanel = wd + (size_t)j0 * ${I}u;
${tl.tile(nrows, rest // lanes, lanes, I, 1, a_at, b_at, out, rest, bias_chain, coords, 1, 24)}\
                    }
% endif
                }
</%def>\
<%def name="gemv(group_index, operand)">\
<%
    group = groups[group_index]
    start = sum(len(g) for g in groups[:group_index]) * Hp
    gw = len(group) * blk
%>\
                        const float *rpanel = rd + (size_t)(${start}u + jb * ${gw}u) * ${H}u;
                        const float *pb = pt + ${start}u + jb * ${gw}u;
${tl.tile(1, len(group) * U, lanes, H, 1, lambda i, t: f"{operand}[kc]", lambda t: f"rpanel + (size_t)kc * {gw}u", lambda i: "pre", gw, [], lambda i, col: ["0", col], 0, 24)}\
</%def>\
<%def name="gate(var, q, u, act, extra='')">\
                            ${vt} ${var} = ${ld(f'pre + {q * blk + u * lanes}u')} + ${ld(f'pb + {q * blk + u * lanes}u')}${extra};
                            ${activated(var, act)}
</%def>\
${tl.contracted(signature)}
{
${tl.types(lanes)}\
    float *const proj = (float *)scratch;
    float *const pre = proj + ${o_pre}u;
% if lstm:
    float *const cs = proj + ${o_extra}u;
% if 'p' in has:
    float *const peep = cs + ${Hp}u;
% endif
% elif cell == 'GRU' and not apart:
    float *const zs = proj + ${o_extra}u;
    float *const rh = zs + ${Hp}u;
% endif
% for d in range(D):
<%
    acts = p['activations'][d]
    f_act = acts[0]
    g_act = acts[1] if len(acts) > 1 else None
    h_act = acts[2] if len(acts) > 2 else None
%>\
    { /* direction ${d}: ${'reverse' if p['reverse'][d] else 'forward'} */
        const float *wd = w + ${d * per_direction['w']}u;
        const float *rd = r + ${d * per_direction['r']}u;
% if 'b' in has:
        const float *bias = b + ${d * per_direction['b']}u;
% endif
% if lstm and 'p' in has:
        for (int k = 0; k < 3; ++k) {
            memcpy(peep + k * ${Hp}, p + ${d * 3 * H}u + (size_t)k * ${H}u, ${H}u * sizeof(float));
            memset(peep + k * ${Hp} + ${H}, 0, ${Hp - H}u * sizeof(float));
        }
% endif
        for (size_t e = 0; e < ${B}u; ++e) { /* batch entry */
            float *hc = proj + ${o_h}u, *hn = hc + ${Hp}u;
% if 'sequence_lens' in has:
            const int32_t given = sequence_lens[e];
            const size_t len = given < 0 ? 0u : (size_t)given > ${S}u ? ${S}u : (size_t)given;
% else:
            const size_t len = ${S}u;
% endif
            memset(hc, 0, ${2 * Hp}u * sizeof(float));
% if 'initial_h' in has:
            memcpy(hc, ${state_at('initial_h', d)}, ${H}u * sizeof(float));
% endif
% if lstm:
            memset(cs, 0, ${Hp}u * sizeof(float));
% if 'initial_c' in has:
            memcpy(cs, ${state_at('initial_c', d)}, ${H}u * sizeof(float));
% endif
% endif
            for (size_t s0 = 0; s0 < len; s0 += ${chunk}u) {
                const size_t n = len - s0 < ${chunk}u ? len - s0 : ${chunk}u;
                size_t i0 = 0;
                for (; i0 + ${rows}u <= n; i0 += ${rows}u)
${project(rows, d)}\
% if rows > 1 and ('sequence_lens' in has or S % rows or chunk % rows):
                for (; i0 < n; ++i0) /* (no such steps when every chunk is whole row tiles) */
${project(1, d)}\
% endif
                for (size_t i = 0; i < n; ++i) { /* one step: h R^T, block by block */
                    const float *pt = proj + i * ${GHp}u;
% for gi, group in enumerate(groups):
                    for (size_t jb = 0; jb < ${blocks}u; ++jb) {
                        const size_t j = jb * ${blk}u;
${gemv(gi, 'rh' if cell == 'GRU' and not apart and gi == 1 else 'hc')}\
% for u in range(U):
                        {
<% ju = f"j + {u * lanes}u" %>\
% if cell == 'RNN':
${gate('gv', 0, u, f_act)}\
                            ${st(f'hn + {ju}', 'gv')}
% elif lstm:
                            const ${vt} cp = ${ld(f'cs + {ju}')};
${gate('gi', 0, u, f_act, f" + {ld(f'peep + {ju}')} * cp" if 'p' in has else '')}\
% if p['input_forget']:
                            const ${vt} gf = 1.0f - gi;
% else:
${gate('gf', 2, u, f_act, f" + {ld(f'peep + {2 * Hp}u + {ju}')} * cp" if 'p' in has else '')}\
% endif
${gate('gc', 3, u, g_act)}\
                            const ${vt} cn = gf * cp + gi * gc;
                            ${st(f'cs + {ju}', 'cn')}
${gate('go', 1, u, f_act, f" + {ld(f'peep + {Hp}u + {ju}')} * cn" if 'p' in has else '')}\
                            ${vt} hv = cn;
                            ${apply('hv', h_act)}
                            ${st(f'hn + {ju}', 'go * hv')}
% elif apart:
${gate('z', 0, u, f_act)}\
${gate('rg', 1, u, f_act)}\
                            ${vt} hh = ${ld(f'pb + {2 * blk + u * lanes}u')} + rg * (${ld(f'pre + {2 * blk + u * lanes}u')}${f" + {ld(f'bias + {GHp}u + {ju}')}" if 'b' in has else ''});
                            ${activated('hh', g_act)}
                            ${st(f'hn + {ju}', f"(1.0f - z) * hh + z * {ld(f'hc + {ju}')}")}
% elif gi == 0:
${gate('z', 0, u, f_act)}\
                            ${st(f'zs + {ju}', 'z')}
${gate('rg', 1, u, f_act)}\
                            ${st(f'rh + {ju}', f"rg * {ld(f'hc + {ju}')}")}
% else:
${gate('hh', 0, u, g_act)}\
                            const ${vt} z = ${ld(f'zs + {ju}')};
                            ${st(f'hn + {ju}', f"(1.0f - z) * hh + z * {ld(f'hc + {ju}')}")}
% endif
                        }
% endfor
                    }
% endfor
% if 'y' in has:
                    memcpy(${y_at('(' + ('len - 1u - (s0 + i)' if p['reverse'][d] else 's0 + i') + ')', d)}, hn, ${H}u * sizeof(float));
% endif
                    { float *const last = hc; hc = hn; hn = last; }
                }
            }
% if 'y' in has:
            for (size_t t = len; t < ${S}u; ++t) /* past the sequence: zeros */
                memset(${y_at('t', d)}, 0, ${H}u * sizeof(float));
% endif
% if 'sequence_lens' in has and ('y_h' in has or 'y_c' in has):
            if (len == 0u) { /* no step: zero states, as onnxruntime gives (not the initial ones) */
                memset(hc, 0, ${H}u * sizeof(float));
% if 'y_c' in has:
                memset(cs, 0, ${H}u * sizeof(float));
% endif
            }
% endif
% if 'y_h' in has:
            memcpy(${state_at('y_h', d)}, hc, ${H}u * sizeof(float));
% endif
% if 'y_c' in has:
            memcpy(${state_at('y_c', d)}, cs, ${H}u * sizeof(float));
% endif
        }
    }
% endfor
}
