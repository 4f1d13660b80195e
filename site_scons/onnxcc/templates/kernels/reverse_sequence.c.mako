<%doc>
  ReverseSequence: for batch entry b, the first sequence_lens[b] steps along the time
  axis are reversed, the others copied (${'[time][batch]' if p['time_major'] else '[batch][time]'} layout, rows of inner elements).
</%doc>\
<%
    T, B, inner = p['steps'], p['batch'], p['inner']
    def row(t, b):
        return f"({t} * {B}u + {b}) * {inner}u" if p['time_major'] else f"({b} * {T}u + {t}) * {inner}u"
%>\
${signature}
{
    for (size_t b = 0; b < ${B}u; ++b) {
        const size_t len = (size_t)sequence_lens[b];
        for (size_t t = 0; t < ${T}u; ++t) {
            const size_t from = t < len ? len - 1u - t : t;
            memcpy(y + ${row('t', 'b')}, x + ${row('from', 'b')}, ${inner}u * sizeof y[0]);
        }
    }
}
