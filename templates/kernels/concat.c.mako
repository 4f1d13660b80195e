<%doc> Each of the outer rows of y is the inputs' rows laid side by side. </%doc>\
<% total = sum(p['parts']) %>\
${signature}
{
    for (size_t o = 0; o < ${p['outer']}u; ++o) {
        float *yo = y + o * ${total}u;
% for i, part in enumerate(p['parts']):
        memcpy(yo + ${sum(p['parts'][:i])}u, x${i} + o * ${part}u, ${part}u * sizeof(float));
% endfor
    }
}
