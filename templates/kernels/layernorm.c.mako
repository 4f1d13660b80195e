<%doc> y = (x - mean) / sqrt(var + epsilon) * scale + bias over the last n elements. </%doc>\
<% n = p['n'] %>\
${signature}
{
    for (size_t o = 0; o < ${p['outer']}u; ++o) {
        const float *xo = x + o * ${n}u;
        float *yo = y + o * ${n}u;
        float mean = 0.0f;
        for (size_t i = 0; i < ${n}u; ++i)
            mean += xo[i];
        mean /= ${c_float(n)};
        float var = 0.0f;
        for (size_t i = 0; i < ${n}u; ++i) {
            const float d = xo[i] - mean;
            var += d * d;
        }
        var /= ${c_float(n)};
        const float inv = 1.0f / sqrtf(var + ${c_float(p['epsilon'])});
        for (size_t i = 0; i < ${n}u; ++i)
            yo[i] = (xo[i] - mean) * inv * scale[i]${' + bias[i]' if p['bias'] else ''};
    }
}
