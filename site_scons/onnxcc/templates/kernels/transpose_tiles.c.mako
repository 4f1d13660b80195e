<%namespace name="simd" file="/kernels/lib/simd.mako"/>\
<%namespace name="tr" file="/kernels/lib/transpose.mako"/>\
<%doc>
  A Transpose whose output rows read x down a column: per batch (the other dimensions,
  walked with x's and y's strides), y [rows][cols] = x [cols][rows] (y's rows `yr` floats
  apart, x's `xc`), moved a block of lanes x lanes at a time -- `lanes` vector loads along x's rows,
  the block transposed in registers (transpose.mako), `lanes` vector stores along y's --
  the rows and columns after the last whole block one float at a time. The reference
  strided walk reads one float per cache line for each it writes (a transformer's
  K^T: 8x the time of a copy).
</%doc>\
<%
    L, rows, cols, xc, yr = p['lanes'], p['rows'], p['cols'], p['xc'], p['yr']
    batch, bx, by = p['batch'], p['batch_x'], p['batch_y']
    rf, cf = rows // L * L, cols // L * L
    nb = len(batch)
    xoff = ' + '.join(f'b{d} * {bx[d]}' for d in range(nb) if bx[d]) or '0'
    yoff = ' + '.join(f'b{d} * {by[d]}' for d in range(nb) if by[d]) or '0'
    ind = '    ' * (nb + 1)
%>\
${signature}
{
${simd.types(L)}\
% for d in range(nb):
${'    ' * (d + 1)}for (ptrdiff_t b${d} = 0; b${d} < ${batch[d]}; ++b${d}) {
% endfor
${ind}const float *xb = x + ${xoff};
${ind}float *yb = y + ${yoff};
<%simd:loop i="r0" start="${0}" stop="${rf}" step="${L}" indent="${ind}">\
<%simd:loop i="c0" start="${0}" stop="${cf}" step="${L}" indent="${ind + '    '}">\
% for j in range(L):
${ind}        vf v${j} = *(const vfu *)(xb + (c0 + ${j}u) * ${xc}u + r0);
% endfor
${tr.transpose([f'v{j}' for j in range(L)], L, ind + '        ')}\
% for j in range(L):
${ind}        *(vfu *)(yb + (r0 + ${j}u) * ${yr}u + c0) = v${j};
% endfor
</%simd:loop>\
<%simd:loop i="ci" start="${cf}" stop="${cols}" step="${1}" indent="${ind + '    '}">\
${ind}        for (size_t j = 0; j < ${L}u; ++j)
${ind}            yb[(r0 + j) * ${yr}u + ci] = xb[ci * ${xc}u + r0 + j];
</%simd:loop>\
</%simd:loop>\
<%simd:loop i="ri" start="${rf}" stop="${rows}" step="${1}" indent="${ind}">\
${ind}    for (size_t ci = 0; ci < ${cols}u; ++ci)
${ind}        yb[ri * ${yr}u + ci] = xb[ci * ${xc}u + ri];
</%simd:loop>\
% for d in reversed(range(nb)):
${'    ' * (d + 1)}}
% endfor
}
