<%doc>
  Quantized Concat: each of the outer rows of y is the inputs' rows side by side; an input
  quantized differently from y is requantized through a 256-entry table (built with
  onnxruntime's float32 dequantize / quantize).
</%doc>\
<% total = sum(part['size'] for part in p['parts']) %>\
${signature}
{
% for i, part in enumerate(p['parts']):
% if part['table']:
    static const ${'int16_t'} table${i}[256] = {${', '.join(map(str, part['table']))}};
% endif
% endfor
    for (size_t o = 0; o < ${p['outer']}u; ++o) {
% for i, part in enumerate(p['parts']):
<% offset = sum(q['size'] for q in p['parts'][:i]) %>\
% if part['table']:
        for (size_t i = 0; i < ${part['size']}u; ++i)
            y[o * ${total}u + ${offset}u + i] = table${i}[(uint8_t)x${i}[o * ${part['size']}u + i]];
% else:
        memcpy(y + o * ${total}u + ${offset}u, x${i} + o * ${part['size']}u, ${part['size']}u);
% endif
% endfor
    }
}
