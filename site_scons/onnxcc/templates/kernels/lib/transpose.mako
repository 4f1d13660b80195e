<%doc>
  Transpose a `lanes` x `lanes` block of floats held in the vectors names[0..lanes-1] (of
  type vf; and `vi`, int32 lanes of the same size (simd.types)): each stage swaps
  one bit of the row index with the same bit of the lane index, lanes * log2(lanes)
  two-vector shuffles in all (one instruction each on AVX2, AVX-512 and NEON).
</%doc>
<%def name="transpose(names, lanes, ind)">\
<%
    def masks(hh):
        lo = [j if not j & hh else lanes + j - hh for j in range(lanes)]
        hi = [j + hh if not j & hh else lanes + j for j in range(lanes)]
        return ', '.join(map(str, lo)), ', '.join(map(str, hi))
%>\
% for hh in [lanes >> k for k in range(1, int(lanes).bit_length()) if lanes >> k]:
<% lo, hi = masks(hh) %>\
% for i in [i for i in range(lanes) if not i & hh]:
${ind}{ const vf lhs = ${names[i]}, rhs = ${names[i + hh]}; ${names[i]} = __builtin_shuffle(lhs, rhs, (vi){${lo}}); ${names[i + hh]} = __builtin_shuffle(lhs, rhs, (vi){${hi}}); }
% endfor
% endfor
</%def>
