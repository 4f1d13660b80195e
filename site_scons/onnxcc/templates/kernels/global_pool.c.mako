${signature}
{
    for (size_t o = 0; o < ${p['outer']}u; ++o) {
        const ${p['ctype']} *xo = x + o * ${p['inner']}u;
% if p['kind'] == 'max':
        ${p['ctype']} acc = ${p['lowest']};  /* NaN inputs never win, as in pool2d */
        for (size_t i = 0; i < ${p['inner']}u; ++i)
            acc = xo[i] > acc ? xo[i] : acc;
        y[o] = acc;
% else:
        float acc = 0.0f;
        for (size_t i = 0; i < ${p['inner']}u; ++i)
            acc += xo[i];
        y[o] = acc / ${c_float(p['inner'])};
% endif
    }
}
