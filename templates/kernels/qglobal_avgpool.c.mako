<%doc>
  Quantized global average pool: the int32 sum of each channel, less size * x_zero_point,
  requantized by x_scale / (y_scale * size).
</%doc>\
<%namespace name="qh" file="/kernels/lib/qhelpers.mako"/>\
${qh.requantize(model)}
${signature}
{
    for (size_t o = 0; o < ${p['outer']}u; ++o) {
        int32_t acc = ${p['bias']};
        for (size_t i = 0; i < ${p['inner']}u; ++i)
            acc += x[o * ${p['inner']}u + i];
        y[o] = ${model}_requantize(acc, ${p['mult']}u, ${p['shift']}, ${p['y_zp']}, ${p['lo']}, ${p['hi']});
    }
}
