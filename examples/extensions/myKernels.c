/* Two kernels for DAPHNE's running example of doc/Extensions.md (the sum of a matrix of f32 values) and one with a
 * matrix result, in plain C against daphnec_kernels.h. Build: make (gives libMyKernels.so). */
#include <stdio.h>
#include <stdlib.h>

#include "daphnec_kernels.h"

/* Sequential sum, row by row. */
void mySumSeq(float *res, const DenseMatrix *arg, DaphneContext *ctx) {
    (void)ctx;
    const float *values = (const float *)arg->values;
    float acc = 0;
    for (int64_t r = 0; r < arg->numRows; r++) {
        for (int64_t c = 0; c < arg->numCols; c++)
            acc += values[c];
        values += arg->rowSkip;
    }
    *res = acc;
    printf("hello from mySumSeq()\n");
    fflush(stdout);
}

/* The same sum with eight independent accumulators (which the C compiler may vectorise). */
void mySumUnrolled(float *res, const DenseMatrix *arg, DaphneContext *ctx) {
    (void)ctx;
    float acc[8] = {0};
    for (int64_t r = 0; r < arg->numRows; r++) {
        const float *row = (const float *)arg->values + r * arg->rowSkip;
        for (int64_t c = 0; c < arg->numCols; c++)
            acc[c % 8] += row[c];
    }
    *res = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    printf("hello from mySumUnrolled()\n");
    fflush(stdout);
}

/* X + scalar for a matrix of f64 values: a matrix result allocated with malloc. */
void myAddScalar(DenseMatrix *res, const DenseMatrix *lhs, double rhs, DaphneContext *ctx) {
    (void)ctx;
    double *out = malloc(sizeof(double) * (size_t)(lhs->numRows * lhs->numCols));
    for (int64_t r = 0; r < lhs->numRows; r++)
        for (int64_t c = 0; c < lhs->numCols; c++)
            out[r * lhs->numCols + c] = ((const double *)lhs->values)[r * lhs->rowSkip + c] + rhs;
    res->numRows = lhs->numRows;
    res->numCols = lhs->numCols;
    res->rowSkip = lhs->numCols;
    res->values = out;
}
