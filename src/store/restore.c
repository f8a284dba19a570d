/*
 * restore.c — reading a checkpoint back (format in checkpoint.c). Three passes over the
 * file: the structure (every table record parsed, sizes summing to the file's size, every
 * table present in the store with the same shape and dtype), the checksum of the whole
 * file, and only then the data into the tables. A failed restore touches no table.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "store/store_impl.h"
#include "tables/table_impl.h"

#define MAGIC "EMBCKPT\1"
#define END_MAGIC "EMBEND\0\0"
#define HEADER_BYTES 24
#define TRAILER_BYTES 12

typedef struct Reader {
    FILE *f;
    const char *path;
    int64_t size; /* whole file */
} Reader;

static int corrupt(const Reader *r, const char *what)
{
    return emb__fail(EMB_ECORRUPT, "checkpoint %s is corrupt or truncated: %s", r->path, what);
}

static int get(Reader *r, void *p, size_t n)
{
    return fread(p, 1, n, r->f) == n ? 0 : corrupt(r, "unexpected end of file");
}

/* Reads one table record's header, finds its table; leaves the file at its data. */
static int table_header(Reader *r, EmbStore *s, EmbTable **out, int64_t *bytes)
{
    uint16_t len;
    char name[EMB_NAME_MAX + 1];
    uint8_t dt;
    int64_t ncol;
    int32_t fs;
    int e = get(r, &len, 2);
    if (!e && len > EMB_NAME_MAX)
        e = corrupt(r, "a table name is too long");
    if (!e)
        e = get(r, name, len);
    name[e ? 0 : len] = '\0';
    if (!e)
        e = get(r, &dt, 1);
    if (!e)
        e = get(r, &ncol, 8);
    if (!e)
        e = get(r, &fs, 4);
    if (e)
        return e;
    const EmbStoreEntry *en = emb__store_entry(s, name);
    if (!en)
        return emb__fail(EMB_ENOTFOUND, "checkpoint %s has table \"%s\", which the store lacks",
                         r->path, name);
    const EmbTable *t = en->table;
    if (t->ncolumns != ncol || t->featuresize != fs || (uint8_t)t->dtype != dt)
        return emb__fail(EMB_ESHAPE, "checkpoint %s has \"%s\" as %lld x %d %s; the store's is "
                         "%lld x %d %s", r->path, name, (long long)ncol, (int)fs,
                         emb_dtype_name((EmbDtype)dt), (long long)t->ncolumns,
                         (int)t->featuresize, emb_dtype_name(t->dtype));
    *out = en->table;
    *bytes = ncol * fs * (int64_t)t->elsize;
    return 0;
}

/* Pass 1: the structure. */
static int check_structure(Reader *r, EmbStore *s, uint32_t *ntables, int64_t *step)
{
    char magic[8];
    uint32_t version;
    int e = r->size < HEADER_BYTES + TRAILER_BYTES ? corrupt(r, "too short") : get(r, magic, 8);
    if (!e && memcmp(magic, MAGIC, 8) != 0)
        e = corrupt(r, "not an embtables checkpoint");
    if (!e)
        e = get(r, &version, 4);
    if (!e && version != 1)
        e = emb__fail(EMB_ECORRUPT, "checkpoint %s has version %u; this library reads 1",
                      r->path, version);
    if (!e)
        e = get(r, ntables, 4);
    if (!e)
        e = get(r, step, 8);
    for (uint32_t i = 0; i < *ntables && !e; i++) {
        EmbTable *t;
        int64_t bytes;
        e = table_header(r, s, &t, &bytes);
        if (!e && (bytes > r->size || fseeko(r->f, bytes, SEEK_CUR) != 0))
            e = corrupt(r, "a table's data runs past the end");
    }
    if (!e && ftello(r->f) != r->size - TRAILER_BYTES)
        e = corrupt(r, "the tables do not end where the trailer starts");
    return e;
}

/* Pass 2: the checksum of everything before the trailer, and the end magic. */
static int check_crc(Reader *r)
{
    unsigned char *buf = malloc(1u << 20);
    if (!buf)
        return emb__fail(EMB_ENOMEM, "out of memory for reading a checkpoint");
    rewind(r->f);
    uLong crc = crc32_z(0, NULL, 0);
    int64_t left = r->size - TRAILER_BYTES;
    int e = 0;
    while (left > 0 && !e) {
        const size_t n = (size_t)(left < (1 << 20) ? left : (1 << 20));
        e = get(r, buf, n);
        crc = crc32_z(crc, buf, n);
        left -= (int64_t)n;
    }
    free(buf);
    uint32_t want;
    char end[8];
    if (!e)
        e = get(r, &want, 4);
    if (!e)
        e = get(r, end, 8);
    if (!e && (memcmp(end, END_MAGIC, 8) != 0 || want != (uint32_t)crc))
        e = corrupt(r, "checksum mismatch");
    return e;
}

/* Pass 3: the data into the tables (structure and checksum known good). */
static int load(Reader *r, EmbStore *s, uint32_t ntables)
{
    if (fseeko(r->f, HEADER_BYTES, SEEK_SET) != 0)
        return emb__fail(EMB_EIO, "cannot seek in %s: %s", r->path, strerror(errno));
    for (uint32_t i = 0; i < ntables; i++) {
        EmbTable *t;
        int64_t bytes;
        int e = table_header(r, s, &t, &bytes);
        const size_t row = (size_t)t->featuresize * t->elsize;
        for (int64_t c = 0; !e && c < t->ncolumns; c++)
            e = get(r, emb__column(t, c, EMB_CTX_UPDATE), row);
        if (e)
            return emb__fail(EMB_EIO, "checkpoint %s changed while it was restored", r->path);
        EmbStoreEntry *en = emb__store_entry(s, t->name);
        en->initialized = true;
    }
    return 0;
}

int emb_checkpoint_restore(EmbStore *s, const char *path, int64_t *global_step)
{
    EMB_CHECK_NULL(s);
    EMB_CHECK_NULL(path);
    struct stat st;
    Reader r = {fopen(path, "rb"), path, 0};
    if (!r.f)
        return emb__fail(EMB_EIO, "cannot open checkpoint %s: %s", path, strerror(errno));
    setvbuf(r.f, NULL, _IOFBF, 1u << 20);
    r.size = fstat(fileno(r.f), &st) == 0 ? (int64_t)st.st_size : 0;
    uint32_t ntables = 0;
    int64_t step = 0;
    int e = check_structure(&r, s, &ntables, &step);
    if (!e)
        e = check_crc(&r);
    if (!e)
        e = load(&r, s, ntables);
    fclose(r.f);
    if (!e && global_step)
        *global_step = step;
    return e;
}
