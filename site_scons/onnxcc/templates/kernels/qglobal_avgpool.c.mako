<%doc>
  Quantized global average pool: the int32 sum of each channel, less size * x_zero_point,
  requantized by x_scale / (y_scale * size).
  float_mean (a ReduceMean over H x W between DQ and Q, which onnxruntime runs in float):
  its float32 steps instead, exactly. Each row dequantized, summed as Eigen sums it (rows
  of onnxruntime's 64-byte aligned tensor: the elements before the first 16-byte aligned
  one and after the last whole vector one by one, the vectors in 4 lanes, two vector
  accumulators, the lanes added (0 + 2) + (1 + 3)), divided by the count, quantized.
  order=mlas (a GlobalAveragePool group onnxruntime does not fuse): its float
  GlobalAveragePool's sum instead (MlasPoolGlobalKernel: 4 lanes over the whole vectors
  from the first element, the lanes added (0 + 2) + (1 + 3), the rest one by one).
</%doc>\
<%namespace name="qh" file="/kernels/lib/qhelpers.mako"/>\
% if p.get('float_mean'):
<%
    n = p['inner']
    def v(i):
        return f"((float)((int32_t)xo[{i}] - {p['x_zp']}) * {c_float(p['x_scale'])})"
%>\
${qh.round_even(model)}
${signature}
{
    for (size_t o = 0; o < ${p['outer']}u; ++o) {
        const ${p['x_type']} *xo = x + o * ${n}u;
        float res, q;
% if p.get('order') == 'mlas':
        float lane[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        size_t i = 0;
        for (; i + 4u <= ${n}u; i += 4u)
            for (size_t k = 0; k < 4u; ++k)
                lane[k] += ${v("i + k")};
        res = (lane[0] + lane[2]) + (lane[1] + lane[3]);
        for (; i < ${n}u; ++i)
            res += ${v("i")};
% else:
% if n % 4 == 0:
        const size_t s = 0;
% else:
        size_t s = (4u - o * ${n % 4}u % 4u) % 4u; /* the first aligned element */
        s = s < ${n}u ? s : ${n}u;
% endif
        const size_t n4 = (${n}u - s) / 4u * 4u, n8 = (${n}u - s) / 8u * 8u;
        if (n4) {
            float p0[4], p1[4];
            for (size_t k = 0; k < 4u; ++k)
                p0[k] = ${v("s + k")};
            if (n4 > 4u) {
                for (size_t k = 0; k < 4u; ++k)
                    p1[k] = ${v("s + 4u + k")};
                for (size_t i = s + 8u; i < s + n8; i += 8u)
                    for (size_t k = 0; k < 4u; ++k) {
                        p0[k] += ${v("i + k")};
                        p1[k] += ${v("i + 4u + k")};
                    }
                for (size_t k = 0; k < 4u; ++k)
                    p0[k] += p1[k];
                if (n4 > n8)
                    for (size_t k = 0; k < 4u; ++k)
                        p0[k] += ${v("s + n8 + k")};
            }
            res = (p0[0] + p0[2]) + (p0[1] + p0[3]);
            for (size_t i = 0; i < s; ++i)
                res += ${v("i")};
            for (size_t i = s + n4; i < ${n}u; ++i)
                res += ${v("i")};
        } else {
            res = ${v(0)};
            for (size_t i = 1; i < ${n}u; ++i)
                res += ${v("i")};
        }
% endif
        q = res / ${c_float(n)} / ${c_float(p['y_scale'])};
        q = q < ${c_float(p['lo'] - p['y_zp'])} ? ${c_float(p['lo'] - p['y_zp'])} : q;
        q = q > ${c_float(p['hi'] - p['y_zp'])} ? ${c_float(p['hi'] - p['y_zp'])} : q;
        y[o] = ${model}_round_even(q) + ${p['y_zp']};
    }
}
% else:
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
% endif
