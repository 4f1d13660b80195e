<%doc>
  y[M][N] = epilogue(alpha * sum_p a[i][p] * b[p][j] + beta * c), batch by batch.
  A row-major B is walked row by row (contiguous, accumulating into y); a transposed B
  (weights stored [N][K]) as dot products.
</%doc>\
<%
    m, n, k = p['m'], p['n'], p['k']
    batches = p['batches']
    def aidx(i, q):
        return f"{i} * {p['a_rs']} + {q} * {p['a_cs']}" if p['a_cs'] != 1 else f"{i} * {p['a_rs']} + {q}"
    def bidx(q, j):
        return f"{q} * {p['b_rs']} + {j} * {p['b_cs']}" if p['b_cs'] != 1 else f"{q} * {p['b_rs']} + {j}"
    cexpr = {None: None, '1': 'c[0]', 'n': 'c[j]', 'm': 'c[i]', 'mn': f'c[i * {n} + j]'}[p['c']]
    finish = 'acc' if p['alpha'] == 1.0 else f"{c_float(p['alpha'])} * acc"
    if cexpr:
        finish += f" + {cexpr}" if p['beta'] == 1.0 else f" + {c_float(p['beta'])} * {cexpr}"
%>\
${signature}
{
% if len(batches) > 1:
    static const uint32_t a_offset[${len(batches)}] = {${', '.join(str(o[0]) for o in batches)}};
    static const uint32_t b_offset[${len(batches)}] = {${', '.join(str(o[1]) for o in batches)}};
    for (int t = 0; t < ${len(batches)}; ++t) {
        const float *ab = a + a_offset[t];
        const float *bb = b + b_offset[t];
        float *yb = y + (size_t)t * ${m * n}u;
% else:
    {
        const float *ab = a;
        const float *bb = b;
        float *yb = y;
% endif
        for (int i = 0; i < ${m}; ++i) {
            float *yr = yb + (size_t)i * ${n}u;
% if p['b_cs'] == 1:
            for (int j = 0; j < ${n}; ++j)
                yr[j] = 0.0f;
            for (int q = 0; q < ${k}; ++q) {
                const float aiq = ab[${aidx('i', 'q')}];
                const float *br = bb + (size_t)q * ${p['b_rs']}u;
                for (int j = 0; j < ${n}; ++j)
                    yr[j] += aiq * br[j];
            }
            for (int j = 0; j < ${n}; ++j) {
                float acc = yr[j];
% else:
            for (int j = 0; j < ${n}; ++j) {
                float acc = 0.0f;
                for (int q = 0; q < ${k}; ++q)
                    acc += ab[${aidx('i', 'q')}] * bb[${bidx('q', 'j')}];
% endif
                acc = ${finish};
% if p['epilogue']:
                ${epilogue('acc', p['epilogue'], (['t'] if len(batches) > 1 else []) + ['i', 'j'])}
% endif
                yr[j] = acc;
            }
        }
    }
}
