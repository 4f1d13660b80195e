<%doc> y = table[x]: an elementwise function of the 256 input codes, computed at compile time. </%doc>\
${signature}
{
    static const int16_t table[256] = {
% for i in range(0, 256, 16):
        ${', '.join(map(str, p['table'][i:i + 16]))},
% endfor
    };
    for (size_t i = 0; i < ${p['n']}u; ++i)
        y[i] = table[(uint8_t)x[i]];
}
