/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * criteo.h — a streaming reader of the Criteo click-log format (Kaggle Display
 * Advertising Challenge and Terabyte): one sample per line, 40 TAB-separated fields,
 *
 *     label \t I1 .. I13 \t C1 .. C26 \n
 *
 * label 0 or 1; I* decimal integers (may be negative); C* 32-bit hex strings; any feature
 * may be empty (missing). LF or CRLF line ends; the last line may lack one.
 *
 * Transforms are DLRM's (facebookresearch/dlrm, dlrm_data_pytorch.py): a dense value x
 * becomes log(1 + max(x, 0)) (missing: 0); a categorical value v (missing: 0) becomes the
 * index v mod size[t], or, with CRITEO_HASH, criteo_hash(v) mod size[t], in [0, size[t]).
 *
 * Batches are read and parsed ahead on worker threads while the caller trains on the
 * previous one (a ring of batch slots): criteo_next() returns batch k+1 as soon as it is
 * parsed, and the batch it returned before is recycled. Each batch holds up to
 * `batch` lines of the file, in file order; lines that do not parse are skipped, counted
 * and handed to the report callback (on the caller's thread, in file order) with their
 * 1-based line number and the reason. The input is untrusted: no line can crash the
 * reader, and a line longer than `max_line` bytes is a bad line, not a larger buffer.
 * A gzip-compressed file is read as its text where the reader is built with zlib
 * (CRITEO_HAVE_ZLIB), else refused by criteo_open() with a message saying so.
 */
#ifndef CRITEO_H
#define CRITEO_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { CRITEO_NDENSE = 13, CRITEO_NCAT = 26, CRITEO_NFIELDS = 1 + 13 + 26 };

/** Reader options flags. */
enum {
    CRITEO_HASH = 1 << 0, /**< index = criteo_hash(v) mod size instead of v mod size */
};

/** A called-back bad line: 1-based line number and what is wrong with it. */
typedef void (*criteo_report_fn)(void *user, int64_t line, const char *why);

/** Reader options; zero-initialise, then set batch and sizes. */
typedef struct CriteoOptions {
    int64_t batch;                  /**< lines per batch (> 0) */
    int64_t sizes[CRITEO_NCAT];     /**< rows of each table (> 0): indices are mod these */
    unsigned flags;                 /**< CRITEO_HASH */
    int nthreads;                   /**< parsing threads (0: 2) */
    int64_t max_line;               /**< longest accepted line in bytes (0: 65536) */
    criteo_report_fn report;        /**< bad lines (NULL: counted only) */
    void *report_user;
} CriteoOptions;

/** One parsed batch; every array belongs to the reader. */
typedef struct CriteoBatch {
    int64_t n;             /**< samples (good lines); 0 at the end of the file */
    int64_t first_line;    /**< 1-based file line of the batch's first line */
    const float *label;    /**< n labels, 0 or 1 */
    const float *dense;    /**< n x 13, row-major, already log(1 + max(x, 0)) */
    const int64_t *cat[CRITEO_NCAT]; /**< per table, n indices in [0, sizes[t]) */
} CriteoBatch;

typedef struct CriteoReader CriteoReader;

/**
 * Opens @p path and starts the parsing threads.
 * @return 0; -EINVAL (out, path or opts NULL, bad options: the message names them),
 *         -ENOMEM, or an errno of fopen / pthread_create.
 *         A message goes to @p err (may be NULL; cap bytes).
 */
int criteo_open(CriteoReader **out, const char *path, const CriteoOptions *opts, char *err,
                int cap);

/**
 * The next batch in file order into `*batch` (valid until the next call or close); a
 * batch with n == 0 means the end of the file (the reader's bad lines are then all
 * reported). A batch may have fewer than `batch` samples (bad lines, the last batch).
 * @return 0, or -EIO when the file could not be read (a message in criteo_error()).
 */
int criteo_next(CriteoReader *r, CriteoBatch *batch);

/** Lines read so far (good and bad) and bad lines among them. */
void criteo_counts(const CriteoReader *r, int64_t *lines, int64_t *bad);
/** How far the file is read: bytes read so far (of the compressed file for a gzip one;
 * the reader reads a few batches ahead) and the file's size (0 when it is not a regular
 * file, e.g. a pipe). */
void criteo_position(CriteoReader *r, int64_t *done, int64_t *total);
/** The last I/O error's message ("" when none). */
const char *criteo_error(const CriteoReader *r);
/** Stops the threads, closes the file, frees everything (NULL is fine); sets *r = NULL. */
void criteo_close(CriteoReader **r);

/**
 * Parses one line of @p len bytes (without its '\n'; a trailing '\r' is ignored): the
 * label to `*label`, the 13 transformed dense values to dense[0..12], table t's index to
 * `cat[t * cat_stride]`. Exposed for tests and for callers with their own I/O, so its
 * arguments are checked as criteo_open() checks its options: @p line may be NULL only when
 * @p len is 0; @p len >= 0; @p sizes holds 26 sizes, each > 0; @p label, @p dense and
 * @p cat non-NULL; @p cat_stride >= 1. @p why may be NULL (or @p cap <= 0): no message.
 * @return 0; -1 for a bad line; -EINVAL for a bad argument (nothing written); the reason
 *         in @p why (cap bytes) naming the argument or field. After a bad line the outputs
 *         may be partly written.
 */
int criteo_parse_line(const char *line, int64_t len, const int64_t *sizes, unsigned flags,
                      float *label, float *dense, int64_t *cat, int64_t cat_stride,
                      char *why, int cap);

/** The hash of CRITEO_HASH (a 32-bit value to 64 well-mixed bits; SplitMix64's finaliser). */
uint64_t criteo_hash(uint32_t v);

#ifdef __cplusplus
}
#endif
#endif
