/* SPDX-License-Identifier: BSD-2-Clause */
/* gpu_check.h — the CUDA-call check shared by the GPU test and the GPU bench (not the library,
 * which never exits: it returns EMB_EDEVICE). */
#ifndef EMB_GPU_CHECK_H
#define EMB_GPU_CHECK_H

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define CUDA(call)                                                                         \
    do {                                                                                   \
        cudaError_t e_ = (call);                                                           \
        if (e_ != cudaSuccess) {                                                           \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                  \
                    cudaGetErrorString(e_));                                               \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

#endif
