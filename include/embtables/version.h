/** @file version.h  The embtables version; meson reads the numbers from here. */
#ifndef EMBTABLES_VERSION_H
#define EMBTABLES_VERSION_H

#define EMB_VERSION_MAJOR 0
#define EMB_VERSION_MINOR 1
#define EMB_VERSION_PATCH 0
/** Shared-library ABI version (the soname is libembtables.so.EMB_VERSION_SO). */
#define EMB_VERSION_SO 0

#define EMB_VERSION_NUMBER (EMB_VERSION_MAJOR * 10000 + EMB_VERSION_MINOR * 100 + EMB_VERSION_PATCH)

#endif
