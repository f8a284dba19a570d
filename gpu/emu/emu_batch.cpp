/* SPDX-License-Identifier: BSD-2-Clause */
/* Emulated build of gpu_batch.cu (see emu_device.h). */
#include "gpu_batch.cu"
