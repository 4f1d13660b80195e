<%doc>
  BatchNormalization with statistics computed at run time (constant ones fold into the
  layer before, or into a Mul and an Add): per channel c of [N][C][inner],
  y = (x - mean[c]) / sqrt(var[c] + epsilon) * scale[c] + bias[c].
</%doc>\
<% c, inner = p['c'], p['inner'] %>\
${signature}
{
    for (size_t ch = 0; ch < ${c}u; ++ch) {
        const float s = scale[ch] / sqrtf(var[ch] + ${c_float(p['epsilon'])});
        const float t = bias[ch] - mean[ch] * s;
        for (size_t b = 0; b < ${p['n']}u; ++b) {
            const float *xc = x + (b * ${c}u + ch) * ${inner}u;
            float *yc = y + (b * ${c}u + ch) * ${inner}u;
            for (size_t i = 0; i < ${inner}u; ++i)
                yc[i] = xc[i] * s + t;
        }
    }
}
