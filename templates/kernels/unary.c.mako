${signature}
{
    for (size_t i = 0; i < ${p['n']}u; ++i) {
        float v = x[i];
        ${epilogue('v', p['chain'])}
        y[i] = v;
    }
}
