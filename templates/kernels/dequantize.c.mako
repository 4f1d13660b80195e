<%doc> y = (x - zero_point) * scale, in float32. </%doc>\
${signature}
{
    for (size_t i = 0; i < ${p['n']}u; ++i)
        y[i] = (float)((int32_t)x[i] - ${p['zp']}) * ${c_float(p['scale'])};
}
