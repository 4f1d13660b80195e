<%doc> y = the bytes of x, read as y's element type (BitCast). </%doc>\
${signature}
{
    memcpy(y, x, ${p['bytes']}u);
}
