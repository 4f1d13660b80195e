<%doc>
  LRN across channels: y = x / (bias + alpha / size * sum of x^2 over the channels
  [c - ${p['before']}, c + ${p['after']}])^beta, for every spatial position of [N][C][inner].
</%doc>\
<% c, inner = p['c'], p['inner'] %>\
${signature}
{
    for (size_t b = 0; b < ${p['n']}u; ++b) {
        const float *xb = x + b * ${c * inner}u;
        float *yb = y + b * ${c * inner}u;
        for (int ch = 0; ch < ${c}; ++ch) {
            const int lo = ch - ${p['before']} < 0 ? 0 : ch - ${p['before']};
            const int hi = ch + ${p['after']} > ${c - 1} ? ${c - 1} : ch + ${p['after']};
            for (size_t i = 0; i < ${inner}u; ++i) {
                float sum = 0.0f;
                for (int k = lo; k <= hi; ++k)
                    sum += xb[(size_t)k * ${inner}u + i] * xb[(size_t)k * ${inner}u + i];
                const float v = xb[(size_t)ch * ${inner}u + i];
                yb[(size_t)ch * ${inner}u + i] =
                    v / powf(${c_float(p['bias'])} + ${c_float(p['alpha'] / p['size'])} * sum, ${c_float(p['beta'])});
            }
        }
    }
}
