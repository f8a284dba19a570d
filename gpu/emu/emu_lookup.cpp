/* Emulated build of gpu_lookup.cu (see emu_device.h). */
#include "gpu_lookup.cu"
