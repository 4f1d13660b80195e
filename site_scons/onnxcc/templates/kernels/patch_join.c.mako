<%doc> y = full with the patch x (${p['c']} x ${p['ph']} x ${p['pw']}) written at row
  ${p['r0']}, column ${p['c0']} (plan/patches.py: patch-based execution). </%doc>\
${signature}
{
% if p['copy_full']:
    memcpy(y, full, ${p['c'] * p['h'] * p['w']}u * sizeof *y);
% elif p['full']:
    (void)full; /* y is full: the patch is written in place */
% endif
    for (size_t ch = 0; ch < ${p['c']}u; ++ch)
        for (size_t r = 0; r < ${p['ph']}u; ++r)
            memcpy(y + (ch * ${p['h']}u + ${p['r0']}u + r) * ${p['w']}u + ${p['c0']}u,
                   x + (ch * ${p['ph']}u + r) * ${p['pw']}u, ${p['pw']}u * sizeof *y);
}
