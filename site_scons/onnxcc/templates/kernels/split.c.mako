<%doc> Each of the outer rows of x is cut into the outputs' rows: [offset, size, output]. </%doc>\
${signature}
{
    for (size_t o = 0; o < ${p['outer']}u; ++o) {
% for offset, size, k in p['parts']:
        memcpy(y${k} + o * ${size}u, x + o * ${p['total']}u + ${offset}u, ${size}u * sizeof x[0]);
% endfor
    }
}
