<%doc>
  The multiply-accumulate tiles of qconv2d_q15: the sums of packed int8 weight rows
  (ops/common/packing.py "pairs": per 4 taps one word of each row, k0 k2 k1 k3, widened by
  SXTB16 into (k0, k1) and (k2, k3); two rows interleaved by word) against int16 columns
  (4 taps per step, consecutive in a column). ``wp`` points at the first weight word,
  ``cp`` at the first column's taps; both advance past what the tile read; the sums are
  the kernel's locals. In inline assembly on Thumb-2 with the DSP extension, the loop
  too, two steps per round (gcc shuffles a tile's live registers when it schedules the
  intrinsics, or an asm step in a C loop); the same sums in C elsewhere.
</%doc>\
<%!
    def _asm(body, k4, outputs):
        """The asm statement of ``body`` (one step's instructions) over k4 / 4 steps."""
        code = (body if (k4 // 4) % 2 else []) + (['"1:\\n\\t"'] + body + body
                 + ['"subs %[steps], %[steps], #1\\n\\t"', '"bne 1b\\n\\t"'] if k4 // 8 else [])
        sep = "\n                            "
        return (f"__asm__({sep.join(code)}{sep}: {outputs}{sep}:{sep}: \"cc\", \"memory\");")
%>\
<%def name="row_sums(k4)">\
<%doc> One weight row (oc's: the next word 8 bytes on) against 4 columns side by side by 4
  taps (16 int16 per step, read straight through): sums a0 .. a3. Per step one weight
  word widened for the four columns, each column's two words by LDRD and two SMLADs: 16
  multiply-accumulates in 15 instructions. </%doc>\
#if defined(__ARM_FEATURE_DSP) && defined(__thumb2__)
                    {
                        uint32_t wv, u0, x0, x1, steps = ${k4 // 8}u;
<%
    body = ['"ldr %[wv], [%[wp]], #8\\n\\t"']
    for col in range(4):
        body += ['"ldrd %[x0], %[x1], [%[cp]], #8\\n\\t"']
        if col == 0:
            body += ['"sxtb16 %[u0], %[wv]\\n\\t"', '"sxtb16 %[wv], %[wv], ror #8\\n\\t"']
        body += [f'"smlad %[a{col}], %[u0], %[x0], %[a{col}]\\n\\t"',
                 f'"smlad %[a{col}], %[wv], %[x1], %[a{col}]\\n\\t"']
    outputs = ('[a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [wp] "+r"(wp), '
               '[cp] "+r"(cp), [steps] "+r"(steps), [wv] "=&r"(wv), [u0] "=&r"(u0), '
               '[x0] "=&r"(x0), [x1] "=&r"(x1)')
%>\
                        ${_asm(body, k4, outputs)}
                    }
#elif defined(__ARM_ARCH_6M__)
                    {   /* ARMv6-M: eight low registers (the weights, a column word, a
                         * product, the pointers), the sums in high ones; a weight word's
                         * bytes sign-extended by shifts, a column's int16 pairs by SXTH
                         * and ASRS, and MULS 32x32: 16 multiply-accumulates in 67 */
                        const int8_t *const wend = wp + ${k4 // 4 * 8}u;
                        int32_t u0, u1, u2, u3, xv, t;
                        __asm__(".syntax unified\n"  /* gcc hands Thumb-1 asm the divided syntax */
                            "1:\n\t"
                            "ldr %[u3], [%[wp]]\n\t"
                            "sxtb %[u0], %[u3]\n\t"
                            "lsls %[u1], %[u3], #8\n\t"
                            "asrs %[u1], %[u1], #24\n\t"
                            "lsls %[u2], %[u3], #16\n\t"
                            "asrs %[u2], %[u2], #24\n\t"
                            "asrs %[u3], %[u3], #24\n\t"
% for col in range(4):
% for half, (ua, ub) in enumerate((("u0", "u1"), ("u2", "u3"))):
                            "ldr %[xv], [%[cp], #${8 * col + 4 * half}]\n\t"
                            "sxth %[t], %[xv]\n\t"
                            "muls %[t], %[${ua}], %[t]\n\t"
                            "add %[a${col}], %[t]\n\t"
                            "asrs %[xv], %[xv], #16\n\t"
                            "muls %[xv], %[${ub}], %[xv]\n\t"
                            "add %[a${col}], %[xv]\n\t"
% endfor
% endfor
                            "adds %[wp], #8\n\t"
                            "adds %[cp], #32\n\t"
                            "cmp %[wp], %[wend]\n\t"
                            "bne 1b\n\t"
                            ".syntax divided\n\t"
                            : [a0] "+h"(a0), [a1] "+h"(a1), [a2] "+h"(a2), [a3] "+h"(a3), [wp] "+l"(wp),
                              [cp] "+l"(cp), [u0] "=&l"(u0), [u1] "=&l"(u1), [u2] "=&l"(u2),
                              [u3] "=&l"(u3), [xv] "=&l"(xv), [t] "=&l"(t)
                            : [wend] "h"(wend)
                            : "cc", "memory");
                    }
#else
                    for (int t = 0; t < ${k4 // 4}; ++t, wp += 8, cp += 16) {
                        /* the packed order: wp[1] is tap 2, wp[2] tap 1 */
                        const int32_t u0 = wp[0], u2 = wp[1], u1 = wp[2], u3 = wp[3];
% for col in range(4):
                        a${col} += cp[${4 * col}] * u0 + cp[${4 * col + 1}] * u1 + cp[${4 * col + 2}] * u2 + cp[${4 * col + 3}] * u3;
% endfor
                    }
#endif
</%def>\
<%def name="pair_sums(k4, stride)">\
<%doc> Two weight rows (oc and oc + 1: their words side by side) against one column whose
  steps are ``stride`` int16 apart: sums a00 (row oc) and a10. 8 multiply-accumulates in
  10 instructions per step. </%doc>\
#if defined(__ARM_FEATURE_DSP) && defined(__thumb2__)
                    {
                        uint32_t wa, wb, x0, x1, u0, u1, steps = ${k4 // 8}u;
<%
    body = ['"ldrd %[wa], %[wb], [%[wp]], #8\\n\\t"',
            f'"ldrd %[x0], %[x1], [%[cp]], #{2 * stride}\\n\\t"',
            '"sxtb16 %[u0], %[wa]\\n\\t"',
            '"sxtb16 %[wa], %[wa], ror #8\\n\\t"',
            '"sxtb16 %[u1], %[wb]\\n\\t"',
            '"sxtb16 %[wb], %[wb], ror #8\\n\\t"',
            '"smlad %[a00], %[u0], %[x0], %[a00]\\n\\t"',
            '"smlad %[a00], %[wa], %[x1], %[a00]\\n\\t"',
            '"smlad %[a10], %[u1], %[x0], %[a10]\\n\\t"',
            '"smlad %[a10], %[wb], %[x1], %[a10]\\n\\t"']
    outputs = ('[a00] "+r"(a00), [a10] "+r"(a10), [wp] "+r"(wp), [cp] "+r"(cp), '
               '[steps] "+r"(steps), [wa] "=&r"(wa), [wb] "=&r"(wb), [x0] "=&r"(x0), '
               '[x1] "=&r"(x1), [u0] "=&r"(u0), [u1] "=&r"(u1)')
%>\
                        ${_asm(body, k4, outputs)}
                    }
#else
                    for (int t = 0; t < ${k4 // 4}; ++t, wp += 8, cp += ${stride}) {
                        /* the packed order: wp[1] is tap 2, wp[2] tap 1 */
                        const int32_t x0 = cp[0], x1 = cp[1], x2 = cp[2], x3 = cp[3];
                        a00 += x0 * wp[0] + x1 * wp[2] + x2 * wp[1] + x3 * wp[3];
                        a10 += x0 * wp[4] + x1 * wp[6] + x2 * wp[5] + x3 * wp[7];
                    }
#endif
</%def>\
