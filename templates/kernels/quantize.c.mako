<%doc> y = zero_point + round_half_even(clamp(x / scale)), in float32 as onnxruntime does. </%doc>\
<%namespace name="qh" file="/kernels/qhelpers.mako"/>\
${qh.round_even(model)}
${signature}
{
    for (size_t i = 0; i < ${p['n']}u; ++i) {
        float v = x[i] / ${c_float(p['scale'])};
        v = v < ${c_float(p['lo'] - p['zp'])} ? ${c_float(p['lo'] - p['zp'])} : v;
        v = v > ${c_float(p['hi'] - p['zp'])} ? ${c_float(p['hi'] - p['zp'])} : v;
        y[i] = ${model}_round_even(v) + ${p['zp']};
    }
}
