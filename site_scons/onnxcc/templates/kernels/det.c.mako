<%doc>
  Det of ${p['count']} matrices of ${p['n']}x${p['n']}: Gaussian elimination with partial pivoting on a
  copy; the determinant is the product of the pivots, negated for every row swap.
</%doc>\
<% n = p['n'] %>\
${signature}
{
    for (size_t m = 0; m < ${p['count']}u; ++m) {
        float a[${n}][${n}];
        memcpy(a, x + m * ${n * n}u, sizeof a);
        float det = 1.0f;
        for (int col = 0; col < ${n}; ++col) {
            int pivot = col;
            for (int row = col + 1; row < ${n}; ++row)
                if (fabsf(a[row][col]) > fabsf(a[pivot][col]))
                    pivot = row;
            if (a[pivot][col] == 0.0f) {
                det = 0.0f;
                break;
            }
            if (pivot != col) {
                for (int k = 0; k < ${n}; ++k) {
                    const float t = a[col][k];
                    a[col][k] = a[pivot][k];
                    a[pivot][k] = t;
                }
                det = -det;
            }
            det *= a[col][col];
            for (int row = col + 1; row < ${n}; ++row) {
                const float f = a[row][col] / a[col][col];
                for (int k = col; k < ${n}; ++k)
                    a[row][k] -= f * a[col][k];
            }
        }
        y[m] = det;
    }
}
