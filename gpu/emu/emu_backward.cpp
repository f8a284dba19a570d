/* SPDX-License-Identifier: BSD-2-Clause */
/* Emulated build of gpu_backward.cu (see emu_device.h). */
#include "gpu_backward.cu"
