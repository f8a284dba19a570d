/* SPDX-License-Identifier: BSD-2-Clause */
/**
 * @file embtables.h
 * embtables — embedding tables for recommendation-model training (DLRM, DeepFM, Wide &
 * Deep). Include this one header for the CPU library. The header-only static tables are
 * in embtables/static.h and the CUDA back end in embtables/gpu.h.
 */
#ifndef EMBTABLES_H
#define EMBTABLES_H

#include "embtables/version.h"
#include "embtables/common.h"
#include "embtables/table.h"
#include "embtables/lookup.h"
#include "embtables/partition.h"
#include "embtables/strategy.h"
#include "embtables/update.h"
#include "embtables/store.h"
#include "embtables/dynamic.h"
#include "embtables/collection.h"
#include "embtables/tiered.h"

#endif
