<%doc>
  y = (x - zero_point) * scale, in float32. From the last element to the first, so that
  the wider y may be written over x (see ops/qlinear/in_place.py).
</%doc>\
${signature}
{
    for (size_t i = ${p['n']}u; i-- > 0;)
        y[i] = (float)((int32_t)x[i] - ${p['zp']}) * ${c_float(p['scale'])};
}
