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

/*
 * When OpenBLAS chose kernels for an older x86 CPU than this one (OpenBLAS 0.3.21 takes
 * its Prescott kernels on CPUs newer than it knows: MLPs 3-4x slower), writes a warning
 * naming OPENBLAS_CORETYPE and the value to set to @out and returns 1; else 0 (also when
 * OPENBLAS_CORETYPE is set: the user chose).
 */
int dlrm_blas_warning(char *out, size_t size);

#endif
