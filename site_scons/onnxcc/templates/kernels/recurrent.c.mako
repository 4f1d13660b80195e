<%doc>
  ${p['cell']} over ${p['seq']} time steps, ${p['directions']} direction(s), batch ${p['batch']}, hidden ${p['hidden']}
  (${'[batch][seq]' if p['layout'] else '[seq][batch]'} layout). Per direction and batch entry the state runs
  through the steps of that entry's sequence; gate pre-activations are W x_t + R h + Wb + Rb
  (+ an LSTM gate's peephole term, then clipped)
  (gate order ${ {'RNN': 'i', 'GRU': 'z r h', 'LSTM': 'i o f c'}[p['cell']] }; GRU's h gate adds its recurrent part after the reset).
</%doc>\
<%
    cell, G, H, I = p['cell'], p['gates'], p['hidden'], p['input']
    S, B, D, layout = p['seq'], p['batch'], p['directions'], p['layout']
    has = set(p['has'])
    lstm, gru = cell == 'LSTM', cell == 'GRU'
    clip = p['clip']
    def x_at(t, b):
        return (f"x + ((size_t){b} * {S}u + (size_t){t}) * {I}u" if layout
                else f"x + ((size_t){t} * {B}u + (size_t){b}) * {I}u")
    def y_at(t, d, b):
        return (f"y + (((size_t){b} * {S}u + (size_t){t}) * {D}u + {d}u) * {H}u" if layout
                else f"y + (((size_t){t} * {D}u + {d}u) * {B}u + (size_t){b}) * {H}u")
    def state_at(name, d, b):
        return (f"{name} + ((size_t){b} * {D}u + {d}u) * {H}u" if layout
                else f"{name} + ({d}u * {B}u + (size_t){b}) * {H}u")
    def clipped(v):
        return f"{v} = {v} < {c_float(-clip)} ? {c_float(-clip)} : ({v} > {c_float(clip)} ? {c_float(clip)} : {v});"
    def peephole(d, k):
        return f" + p[{(d * 3 + k) * H}u + j] * c[j]" if 'p' in has else ''
%>\
${signature}
{
% for d in range(D):
    /* direction ${d}: ${'reverse' if p['reverse'][d] else 'forward'} */
    for (size_t e = 0; e < ${B}u; ++e) { /* batch entry */
        const float *wd = w + ${d * G * H * I}u;
        const float *rd = r + ${d * G * H * H}u;
% if 'sequence_lens' in has:
        const int32_t given = sequence_lens[e];
        const size_t len = given < 0 ? 0u : (size_t)given > ${S}u ? ${S}u : (size_t)given;
% else:
        const size_t len = ${S}u;
% endif
        float h[${H}], gate[${G * H}];
% if lstm:
        float c[${H}];
% endif
        for (size_t j = 0; j < ${H}u; ++j) {
            h[j] = ${f'({state_at("initial_h", d, "e")})[j]' if 'initial_h' in has else '0.0f'};
% if lstm:
            c[j] = ${f'({state_at("initial_c", d, "e")})[j]' if 'initial_c' in has else '0.0f'};
% endif
        }
        for (size_t s = 0; s < len; ++s) {
            const size_t t = ${'len - 1u - s' if p['reverse'][d] else 's'};
            const float *xt = ${x_at('t', 'e')};
            for (size_t j = 0; j < ${(2 if gru else G) * H}u; ++j) {
                float acc = ${f'b[{d * 2 * G * H}u + j] + b[{(d * 2 + 1) * G * H}u + j]' if 'b' in has else '0.0f'};
                for (size_t k = 0; k < ${I}u; ++k)
                    acc += wd[j * ${I}u + k] * xt[k];
                for (size_t k = 0; k < ${H}u; ++k)
                    acc += rd[j * ${H}u + k] * h[k];
% if clip is not None and not lstm:
                ${clipped('acc')}
% endif
                gate[j] = acc;
            }
% if cell == 'RNN':
            for (size_t j = 0; j < ${H}u; ++j) {
                float v = gate[j];
                v = ${p['activations'][d][0]};
                h[j] = v;
            }
% elif gru:
            float reset[${H}], next[${H}];
            for (size_t j = 0; j < ${H}u; ++j) {
                float v = gate[${H}u + j];
                v = ${p['activations'][d][0]};
                reset[j] = v;
            }
            for (size_t j = 0; j < ${H}u; ++j) {
                float v = ${f'b[{d * 2 * G * H + 2 * H}u + j]' if 'b' in has else '0.0f'};
                for (size_t k = 0; k < ${I}u; ++k)
                    v += wd[(${2 * H}u + j) * ${I}u + k] * xt[k];
                float recurrent = ${f'b[{(d * 2 + 1) * G * H + 2 * H}u + j]' if 'b' in has else '0.0f'};
                for (size_t k = 0; k < ${H}u; ++k)
% if p['linear_before_reset']:
                    recurrent += rd[(${2 * H}u + j) * ${H}u + k] * h[k];
                v += reset[j] * recurrent;
% else:
                    recurrent += rd[(${2 * H}u + j) * ${H}u + k] * reset[k] * h[k];
                v += recurrent;
% endif
% if clip is not None:
                ${clipped('v')}
% endif
                v = ${p['activations'][d][1]};
                const float candidate = v;
                v = gate[j];
                v = ${p['activations'][d][0]};
                next[j] = (1.0f - v) * candidate + v * h[j];
            }
            memcpy(h, next, sizeof h);
% else:
            for (size_t j = 0; j < ${H}u; ++j) {
                float v = gate[j]${peephole(d, 0)};
% if clip is not None:
                ${clipped('v')}
% endif
                v = ${p['activations'][d][0]};
                const float input_gate = v;
% if p['input_forget']:
                const float forget_gate = 1.0f - input_gate;
% else:
                v = gate[${2 * H}u + j]${peephole(d, 2)};
% if clip is not None:
                ${clipped('v')}
% endif
                v = ${p['activations'][d][0]};
                const float forget_gate = v;
% endif
                v = gate[${3 * H}u + j];
% if clip is not None:
                ${clipped('v')}
% endif
                v = ${p['activations'][d][1]};
                c[j] = forget_gate * c[j] + input_gate * v;
                v = gate[${H}u + j]${peephole(d, 1)};
% if clip is not None:
                ${clipped('v')}
% endif
                v = ${p['activations'][d][0]};
                const float output_gate = v;
                v = c[j];
                v = ${p['activations'][d][2]};
                h[j] = output_gate * v;
            }
% endif
% if 'y' in has:
            memcpy(${y_at('t', d, 'e')}, h, sizeof h);
% endif
        }
% if 'y' in has:
        for (size_t t = len; t < ${S}u; ++t) /* past the sequence: zeros */
            memset(${y_at('t', d, 'e')}, 0, sizeof h);
% endif
% if 'sequence_lens' in has and ('y_h' in has or 'y_c' in has):
        if (len == 0u) { /* no step: zero states, as onnxruntime gives (not the initial ones) */
            memset(h, 0, sizeof h);
% if 'y_c' in has:
            memset(c, 0, sizeof c);
% endif
        }
% endif
% if 'y_h' in has:
        memcpy(${state_at('y_h', d, 'e')}, h, sizeof h);
% endif
% if 'y_c' in has:
        memcpy(${state_at('y_c', d, 'e')}, c, sizeof c);
% endif
    }
% endfor
}
