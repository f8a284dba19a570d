/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dlrm_blas.h — which CBLAS dlrm_train runs, found at run time (Debian's alternatives can
 * put OpenBLAS behind -lblas, so the link line does not say), and its threads.
 */
#ifndef DLRM_BLAS_H
#define DLRM_BLAS_H

#include <stddef.h>

/*
 * Makes every BLAS call single-threaded (the example splits its GEMMs over its own
 * threads) and writes the BLAS's vendor, version, kernel and threads per call to @out,
 * e.g. "OpenBLAS 0.3.21 Haswell (pthreads), 1 thread per call".
 */
void dlrm_blas_init(char *out, size_t size);

#endif
