/* The C side of daphnec's kernel extensions (see README.md): a dense matrix as daphnec hands it to a kernel. */
#ifndef DAPHNEC_KERNELS_H
#define DAPHNEC_KERNELS_H

#include <stdint.h>

/* Row-major values; row r starts at values + r * rowSkip. An argument points into daphnec's buffer (read-only);
 * a result is filled by the kernel: its shape, rowSkip and a buffer from malloc(), which daphnec copies and frees. */
typedef struct {
    int64_t numRows;
    int64_t numCols;
    int64_t rowSkip;
    void *values;
} DenseMatrix;

/* DAPHNE passes its context as the last argument of every kernel; daphnec passes NULL. */
typedef struct DaphneContext DaphneContext;

#endif
