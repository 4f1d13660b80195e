<%doc>
  The vector types of a kernel function that works on `lanes` floats at a time (GCC vector
  extensions, so one template serves AVX2, AVX-512, NEON and scalar CPUs): vf, a vector;
  vfu, the same with 4-byte alignment, to load and store at any float; vi, lane masks,
  only where the kernel selects lane by lane (`masks`).
</%doc>
<%def name="types(lanes, masks=False)">\
    typedef float vf __attribute__((vector_size(${4 * lanes})));
% if masks:
    typedef int32_t vi __attribute__((vector_size(${4 * lanes}), unused));  /* (a chain of vmath calls selects nothing) */
% endif
    typedef float vfu __attribute__((vector_size(${4 * lanes}), aligned(4), may_alias));
</%def>
