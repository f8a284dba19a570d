/* SPDX-License-Identifier: BSD-2-Clause */
/* Emulated build of gpu_lookup.cu (see emu_device.h). */
#include "gpu_lookup.cu"
