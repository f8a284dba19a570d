/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * args.c — the command line of dlrm_train (dlrm.h: Args): its usage text, its parsers.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* clock_gettime, under -std=c11 */
#endif
#include <errno.h>
#include <getopt.h>
#include <string.h>
#include <sys/stat.h>

#include "dlrm.h"

static const char usage[] =
    "usage: dlrm_train --train FILE --test FILE [--epochs N (1)] [--batch B (128)]\n"
    "         [--dim D (16)] [--max-ind-range N (100000)] [--table-sizes N,N,..(26)]\n"
    "         [--hash] [--optimizer sgd|adagrad|adam (adagrad)] [--lr X (0.2)] [--threads T (0: "
    "cores)]\n"
    "         [--state-dtype f32|f16|bf16 (f32)] [--stochastic-rounding]\n"
    "         [--reader-threads T (2)] [--bot 512-256-64] [--top 512-256] [--seed S (1)]\n"
    "         [--emb-dtype f32|f16|bf16|int8|int4 (f32)] [--checkpoint-dir DIR] [--resume]\n"
    "         [--tier-dir DIR [--tier-cache F (0.1)] [--tier-min ROWS (10000)] [--no-prefetch]]\n"
    "         [--checkpoint-every STEPS | MINUTESm] [--eval-every STEPS [--eval-samples N]\n"
    "         [--early-stop]] [--progress-every SECONDS (0.5 on a terminal, else 30)]\n"
    "         [--export FILE [--export-dtype int8|int4|f32 (int8)]] [--bf16-exchange]\n"
    "The defaults train a real model in one pass: Adagrad on the tables (SGD on the\n"
    "MLPs), lr 0.2. On scripts/criteo_gen.py's 200k / 40k rows they beat a hashed\n"
    "logistic regression (scripts/criteo_linear.py); SGD at DLRM's lr 0.1 needs 2 epochs\n"
    "or more for that. Criteo Kaggle: --train on train.txt's first 6/7 of lines, --test on\n"
    "the rest (test.txt has no labels); Terabyte: day_0 .. day_22 (concatenated) as --train,\n"
    "day_23 as --test, --max-ind-range 10000000 (DLRM's); the README has the details.\n"
    "--emb-dtype int8 / int4: row-wise quantized tables (the initial rows quantized to\n"
    "nearest; each update in f32, stored again with stochastic rounding).\n"
    "--state-dtype: the tables' optimizer state in 16 bits (half its bytes);\n"
    "--stochastic-rounding: f16 / bf16 rows and state rounded stochastically.\n"
    "--tier-dir: the tables of more than --tier-min rows are tiered tables (tiered.h) in\n"
    "DIR, with a DRAM cache of --tier-cache of their rows: the model trains to the bits\n"
    "of the in-memory run; each step prefetches the next batch's rows (--no-prefetch: not).\n"
    "FILEs are plain or gzip-compressed (.gz, where built with zlib). --checkpoint-dir\n"
    "keeps the latest checkpoints (each epoch's end, and every --checkpoint-every steps or\n"
    "minutes); --resume continues from the latest, bit for bit. --eval-every: the test AUC\n"
    "and log loss every STEPS steps (on its first --eval-samples samples, default all),\n"
    "the best model kept in DIR/best; a warning when the AUC falls (CTR models overfit\n"
    "after their first epoch), and with --early-stop the training stops there.\n"
    "--export: at the end the 26 tables are written to FILE for serving (no optimizer\n"
    "state, rows quantized to --export-dtype), mapped back and the test set scored\n"
    "through them too (the `export:` line, before the last one).\n";

static EmbDtype parse_dtype(const char *s)
{
    static const EmbDtype all[] = {EMB_F32, EMB_F16, EMB_BF16, EMB_INT8, EMB_INT4};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (!strcmp(s, emb_dtype_name(all[i])))
            return all[i];
    die("--emb-dtype is f32, f16, bf16, int8 or int4, not ", s);
    return EMB_F32;
}

static int parse_list(const char *s, int *out, int cap)
{
    int n = 0;
    while (*s) {
        char *end;
        const long v = strtol(s, &end, 10);
        if (end == s || v <= 0 || v > 65536 || n == cap)
            die("bad layer list: ", s);
        out[n++] = (int)v;
        s = *end ? end + 1 : end;
    }
    return n;
}

static int64_t parse_i64(const char *s, int64_t lo, int64_t hi, const char *what)
{
    char *end;
    errno = 0;
    const long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        die(what, s);
    return v;
}

/* --table-sizes: 26 positive numbers, comma-separated. */
static void parse_sizes(const char *arg, int64_t sizes[NT])
{
    const char *s = arg;
    for (int t = 0; t < NT; t++) {
        char *end;
        const long long v = strtoll(s, &end, 10);
        if (end == s || v <= 0 || (t < NT - 1 && *end != ','))
            die("--table-sizes wants 26 positive numbers, comma-separated: ", arg);
        sizes[t] = v;
        s = end + (t < NT - 1);
    }
}

/* A file that can be read again (not a pipe, FIFO or device); a missing one counts as
 * one (its open names it). */
static int regular_file(const char *path)
{
    struct stat st;
    return stat(path, &st) != 0 || S_ISREG(st.st_mode);
}

/* --checkpoint-every: N steps, or N minutes written Nm. */
static void parse_every(const char *arg, Args *a)
{
    char *end;
    const double v = strtod(arg, &end);
    if (end != arg && !strcmp(end, "m") && v > 0 && v < 1e6) {
        a->ckpt_every_s = 60 * v;
        return;
    }
    a->ckpt_every_steps =
        parse_i64(arg, 1, INT64_MAX, "--checkpoint-every is N (steps) or Nm (minutes), not ");
}

void parse_args(int argc, char **argv, Args *a)
{
    static const struct option opts[] = {
        {"train", 1, 0, 'a'},         {"test", 1, 0, 'b'},
        {"epochs", 1, 0, 'e'},        {"batch", 1, 0, 'B'},
        {"dim", 1, 0, 'd'},           {"max-ind-range", 1, 0, 'm'},
        {"table-sizes", 1, 0, 'S'},   {"hash", 0, 0, 'H'},
        {"optimizer", 1, 0, 'o'},     {"lr", 1, 0, 'l'},
        {"threads", 1, 0, 't'},       {"reader-threads", 1, 0, 'r'},
        {"bot", 1, 0, 'x'},           {"top", 1, 0, 'y'},
        {"seed", 1, 0, 's'},          {"checkpoint-dir", 1, 0, 'c'},
        {"resume", 0, 0, 'R'},        {"emb-dtype", 1, 0, 'T'},
        {"tier-dir", 1, 0, 'D'},      {"tier-cache", 1, 0, 'C'},
        {"tier-min", 1, 0, 'M'},      {"checkpoint-every", 1, 0, 'K'},
        {"eval-every", 1, 0, 'E'},    {"eval-samples", 1, 0, 'N'},
        {"early-stop", 0, 0, 'X'},    {"progress-every", 1, 0, 'P'},
        {"state-dtype", 1, 0, 'Z'},   {"stochastic-rounding", 0, 0, 'Y'},
        {"export", 1, 0, 'O'},        {"export-dtype", 1, 0, 'Q'},
        {"bf16-exchange", 0, 0, 'G'}, {"no-prefetch", 0, 0, 'F'},
        {"help", 0, 0, 'h'},          {0, 0, 0, 0}};
    *a = (Args){.epochs = 1,
                .dim = 16,
                .batch = 128,
                .max_ind_range = 100000,
                .lr = 0.2f,
                .opt = EMB_OPT_ADAGRAD,
                .reader_threads = 2,
                .seed = 1,
                .bot = {512, 256, 64},
                .nbot = 3,
                .top = {512, 256},
                .ntop = 2,
                .tier_cache = 0.1,
                .tier_min = 10000,
                .export_dtype = EMB_INT8};
    int64_t table_sizes[NT] = {0};
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'a':
            a->train = optarg;
            break;
        case 'O':
            a->export_path = optarg;
            break;
        case 'Q':
            a->export_dtype = parse_dtype(optarg);
            if (a->export_dtype != EMB_F32 && a->export_dtype != EMB_INT8 &&
                a->export_dtype != EMB_INT4)
                die("--export-dtype is int8, int4 or f32, not ", optarg);
            break;
        case 'b':
            a->test = optarg;
            break;
        case 'e':
            a->epochs = (int)parse_i64(optarg, 0, 1000000, "bad --epochs: ");
            break;
        case 'B':
            a->batch = parse_i64(optarg, 1, 1 << 20, "bad --batch: ");
            break;
        case 'd':
            a->dim = (int)parse_i64(optarg, 1, 4096, "bad --dim: ");
            break;
        case 'm':
            a->max_ind_range = parse_i64(optarg, 1, INT64_C(1) << 40, "bad --max-ind-range: ");
            a->max_ind_range_set = 1;
            break;
        case 'S':
            parse_sizes(optarg, table_sizes);
            break;
        case 'H':
            a->hash = 1;
            break;
        case 'o':
            if (strcmp(optarg, "sgd") && strcmp(optarg, "adagrad") && strcmp(optarg, "adam"))
                die("--optimizer is sgd, adagrad or adam, not ", optarg);
            a->opt = !strcmp(optarg, "sgd")    ? EMB_OPT_SGD
                     : !strcmp(optarg, "adam") ? EMB_OPT_ADAM
                                               : EMB_OPT_ADAGRAD;
            break;
        case 'Z':
            a->lowp.state_dtype = parse_dtype(optarg);
            if (a->lowp.state_dtype > EMB_BF16)
                die("--state-dtype is f32, f16 or bf16, not ", optarg);
            break;
        case 'Y':
            a->lowp.stochastic_rounding = 1;
            break;
        case 'G':
            a->bf16_exchange = 1;
            break;
        case 'l': {
            char *end;
            a->lr = strtof(optarg, &end);
            if (*end || !(a->lr > 0))
                die("bad --lr: ", optarg);
            break;
        }
        case 't':
            a->threads = (int)parse_i64(optarg, 0, 4096, "bad --threads: ");
            break;
        case 'r':
            a->reader_threads = (int)parse_i64(optarg, 1, 64, "bad --reader-threads: ");
            break;
        case 'x':
            a->nbot = parse_list(optarg, a->bot, MAXL - 2);
            break;
        case 'y':
            a->ntop = parse_list(optarg, a->top, MAXL - 2);
            break;
        case 's':
            a->seed = (uint64_t)parse_i64(optarg, 0, INT64_MAX, "bad --seed: ");
            break;
        case 'c':
            a->ckpt_dir = optarg;
            break;
        case 'R':
            a->resume = 1;
            break;
        case 'T':
            a->emb_dtype = parse_dtype(optarg);
            break;
        case 'D':
            a->tier_dir = optarg;
            break;
        case 'C': {
            char *end;
            a->tier_cache = strtod(optarg, &end);
            if (*end || !(a->tier_cache > 0 && a->tier_cache <= 1))
                die("--tier-cache is a fraction in (0, 1], not ", optarg);
            break;
        }
        case 'M':
            a->tier_min = parse_i64(optarg, 0, INT64_MAX, "bad --tier-min: ");
            break;
        case 'F':
            a->no_prefetch = 1;
            break;
        case 'K':
            parse_every(optarg, a);
            break;
        case 'E':
            a->eval_every = parse_i64(optarg, 1, INT64_MAX, "bad --eval-every: ");
            break;
        case 'N':
            a->eval_samples = parse_i64(optarg, 1, INT64_MAX, "bad --eval-samples: ");
            break;
        case 'X':
            a->early_stop = 1;
            break;
        case 'P': {
            char *end;
            a->progress_every = strtod(optarg, &end);
            if (*end || !(a->progress_every > 0 && a->progress_every < 1e6))
                die("--progress-every is a number of seconds > 0, not ", optarg);
            break;
        }
        case 'h':
            fputs(usage, stdout);
            exit(0);
        default:
            fputs(usage, stderr);
            exit(2);
        }
    }
    if (!a->train || !a->test || optind < argc) {
        fputs(usage, stderr);
        exit(2);
    }
    if (a->resume && !a->ckpt_dir)
        die("--resume needs --checkpoint-dir", NULL);
    if ((a->ckpt_every_steps || a->ckpt_every_s > 0) && !a->ckpt_dir)
        die("--checkpoint-every needs --checkpoint-dir", NULL);
    if ((a->early_stop || a->eval_samples) && !a->eval_every)
        die("--early-stop and --eval-samples need --eval-every", NULL);
    /* a pipe (or /dev/fd/N of a shell's <(zcat ..)) can be read once */
    if (a->epochs > 1 && !regular_file(a->train))
        die("--epochs > 1 reads --train again: it must be a file, not a pipe: ", a->train);
    if (a->eval_every && !regular_file(a->test))
        die("--eval-every reads --test again: it must be a file, not a pipe: ", a->test);
    /* DLRM: min(cardinality, max_ind_range); the default range only where --table-sizes
       gives none (so Kaggle's cardinalities are taken as they are) */
    for (int t = 0; t < NT; t++)
        a->sizes[t] = !table_sizes[t]                                             ? a->max_ind_range
                      : a->max_ind_range_set && a->max_ind_range < table_sizes[t] ? a->max_ind_range
                                                                                  : table_sizes[t];
    a->bot[a->nbot++] = a->dim;
    a->top[a->ntop++] = 1;
}
