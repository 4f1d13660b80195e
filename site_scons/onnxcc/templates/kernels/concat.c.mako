<%doc> Each of the outer rows of y is the inputs' rows laid side by side. </%doc>\
<% total = sum(p['parts']) %>\
${signature}
{
    for (size_t o = 0; o < ${p['outer']}u; ++o) {
% for i, part in enumerate(p['parts']):
% if part:
        memcpy(y + o * ${total}u + ${sum(p['parts'][:i])}u, x${i} + o * ${part}u, ${part}u * sizeof y[0]);
% endif
% endfor
    }
}
