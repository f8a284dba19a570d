/* SPDX-License-Identifier: BSD-2-Clause */
/** @file version.h  The embtables version; meson reads the numbers from here. */
#ifndef EMBTABLES_VERSION_H
#define EMBTABLES_VERSION_H

/** Major version: incompatible API changes. */
#define EMB_VERSION_MAJOR 0
/** Minor version: additions. */
#define EMB_VERSION_MINOR 2
/** Patch version: fixes. */
#define EMB_VERSION_PATCH 0
/** Shared-library ABI version (the soname is libembtables.so.EMB_VERSION_SO). */
#define EMB_VERSION_SO 0

/** The version as one number, MAJOR * 10000 + MINOR * 100 + PATCH (compile time; the
 *  library's own at run time: emb_version()). */
#define EMB_VERSION_NUMBER (EMB_VERSION_MAJOR * 10000 + EMB_VERSION_MINOR * 100 + EMB_VERSION_PATCH)

#endif
