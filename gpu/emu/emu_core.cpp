/* SPDX-License-Identifier: BSD-2-Clause */
/* Emulated build of gpu_core.cu (see emu_device.h). */
#include "gpu_core.cu"
