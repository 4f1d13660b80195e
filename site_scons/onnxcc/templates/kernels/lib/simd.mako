<%doc>
  The vector types of a kernel function that works on `lanes` floats at a time (GCC vector
  extensions, so one template serves AVX2, AVX-512, NEON and scalar CPUs): vf, a vector;
  vfu, the same with 4-byte alignment, to load and store at any float; vi, int32 lanes:
  the masks of a lane-by-lane select and the lane indices of a shuffle (the only integer
  vector of a float kernel). All `unused`: a kernel whose tensor is shorter than a vector
  declares them and runs no vector (`loop` below).
</%doc>
<%def name="types(lanes)">\
    typedef float vf __attribute__((vector_size(${4 * lanes}), unused));
    typedef int32_t vi __attribute__((vector_size(${4 * lanes}), unused));
    typedef float vfu __attribute__((vector_size(${4 * lanes}), aligned(4), may_alias, unused));
</%def>
<%doc>
  The types of vectors of `width` floats beside a kernel's own (conv_planes' splits of
  rows into column phases): vfu<width> and vi<width>, as vfu and vi above.
</%doc>
<%def name="sized_types(width, ind)">\
${ind}typedef float vfu${width} __attribute__((vector_size(${4 * width}), aligned(4), may_alias));
${ind}typedef int32_t vi${width} __attribute__((vector_size(${4 * width})));
</%def>
<%doc>
  `for (size_t i = start; i < stop; i += step) { body }` -- the whole vectors of a row
  (step: lanes) or the elements after them (step 1) -- or nothing where the loop has no
  iteration: a tensor, row or patch shorter than a vector has no vector loop (`i < 0u`
  warns under -Wtype-limits), a row of whole vectors no tail. Every vector kernel's
  loops, so that none needs its own guard. `indent`: the for line's.
</%doc>
<%def name="loop(i, start, stop, step, indent)">\
% if stop > start:
${indent}for (size_t ${i} = ${start}u; ${i} < ${stop}u; ${f'++{i}' if step == 1 else f'{i} += {step}'}) {
${caller.body()}\
${indent}}
% endif
</%def>
<%doc>
  Lane-wise max: simd_max_v<lanes>(acc, v) is `v > acc ? v : acc`, a macro a kernel
  defines with `max_op(lanes)` after `types(lanes)` (once a kernels file: the
  guard). One instruction where the CPU has one that agrees: x86 (v)maxps(v, acc) is that
  select exactly (a NaN in either gives acc); AArch64 fmaxnm agrees unless acc is NaN
  (then it gives v). Else a compare and a select: armv7 NEON's vmax gives NaN for a NaN in
  either. So a NaN in v never wins; a kernel whose result must not depend on NaN inputs
  (pooling, as the reference kernels and onnxruntime) starts acc at -inf, never NaN.
</%doc>
<%def name="max_op(lanes)">\
#ifndef simd_max_v${lanes}
% if lanes == 16:
#if defined(__AVX512F__)
#define simd_max_v16(acc, v) ((vf)__builtin_ia32_maxps512_mask((v), (acc), (v), (unsigned short)-1, 4))
% elif lanes == 8:
#if defined(__AVX__)
#define simd_max_v8(acc, v) ((vf)__builtin_ia32_maxps256((v), (acc)))
% elif lanes == 4:
#if defined(__aarch64__)
#define simd_max_v4(acc, v) ((vf)__builtin_aarch64_fmaxv4sf((acc), (v)))
#elif defined(__SSE__)
#define simd_max_v4(acc, v) ((vf)__builtin_ia32_maxps((v), (acc)))
% else:
#if 0
% endif
#else
#define simd_max_v${lanes}(acc, v) ((vf)(((vi)(v) & ((v) > (acc))) | ((vi)(acc) & ~((v) > (acc)))))
#endif
#endif
</%def>
