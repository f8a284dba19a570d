/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * optimizer.c — EmbOptimizer: hyper-parameters, per-table state in shadow tables, and the
 * per-step parameters (Adam's bias correction) handed to the row kernels.
 */
#include <math.h>
#include <stdlib.h>

#include "dtype.h"
#include "platform.h"
#include "tables/table_impl.h"
#include "update/update_impl.h"

EmbOptimizerConfig emb_optimizer_defaults(EmbOptimizerKind kind, float lr)
{
    EmbOptimizerConfig c = {.kind = kind, .lr = lr, .eps = 1e-10f, .lr_power = -0.5f,
                            .beta1 = 0.9f, .beta2 = 0.999f, .bias_correction = 1,
                            .counter_halflife = -1, .adjustment_iter = -1,
                            .adjustment_ub = 1.0f, .learning_rate_mode = -1};
    if (kind == EMB_OPT_FTRL)
        c.initial_accumulator = 0.1f;
    if (kind == EMB_OPT_ADAM)
        c.eps = 1e-8f;
    return c;
}

/* The first hyper-parameter of @p c outside its domain (NaN and infinities are outside
   every domain, whatever the kind): its index in *bad, or -1. */
typedef struct HyperParam {
    const char *name, *domain;
    float v;
    bool ok;
} HyperParam;

static int bad_hyperparam(const EmbOptimizerConfig *c, HyperParam *bad)
{
    const bool ftrl = c->kind == EMB_OPT_FTRL, adam = c->kind == EMB_OPT_ADAM;
    const HyperParam f[] = {
        {"lr", "> 0", c->lr, c->lr > 0.0f},
        {"eps", ">= 0", c->eps, c->eps >= 0.0f},
        {"initial_accumulator", ftrl ? "> 0 (FTRL)" : ">= 0", c->initial_accumulator,
         ftrl ? c->initial_accumulator > 0.0f : c->initial_accumulator >= 0.0f},
        {"lr_power", "<= 0 (FTRL)", c->lr_power, !ftrl || c->lr_power <= 0.0f},
        {"l1", ">= 0 (FTRL)", c->l1, !ftrl || c->l1 >= 0.0f},
        {"l2", ">= 0 (FTRL)", c->l2, !ftrl || c->l2 >= 0.0f},
        {"beta1", "in [0, 1) (Adam)", c->beta1, !adam || (c->beta1 >= 0.0f && c->beta1 < 1.0f)},
        {"beta2", "in [0, 1) (Adam)", c->beta2, !adam || (c->beta2 >= 0.0f && c->beta2 < 1.0f)},
        {"weight_decay", ">= 0", c->weight_decay, c->weight_decay >= 0.0f},
        {"max_gradient", ">= 0", c->max_gradient, c->max_gradient >= 0.0f},
        {"max_row_norm", ">= 0", c->max_row_norm, c->max_row_norm >= 0.0f},
        {"max_global_norm", ">= 0", c->max_global_norm, c->max_global_norm >= 0.0f},
    };
    for (size_t i = 0; i < sizeof f / sizeof *f; i++)
        if (!f[i].ok || !isfinite(f[i].v)) {
            *bad = f[i];
            return 0;
        }
    return -1;
}

int emb_optimizer_config_check(const EmbOptimizerConfig *cfg)
{
    EMB_CHECK_NULL(cfg);
    const EmbOptimizerConfig *c = cfg;
    if ((unsigned)c->kind > EMB_OPT_ROWWISE_ADAGRAD_COUNTER)
        return emb__fail(EMB_EINVAL, "optimizer kind %d is unknown", (int)c->kind);
    HyperParam bad;
    int r;
    if (bad_hyperparam(c, &bad) == 0)
        return emb__fail(EMB_EINVAL, "optimizer %s %g is not a finite number %s", bad.name,
                         (double)bad.v, bad.domain);
    if (c->bias_correction != 0 && c->bias_correction != 1)
        return emb__fail(EMB_EINVAL, "optimizer bias_correction %d is not 0 or 1",
                         c->bias_correction);
    if ((unsigned)c->weight_decay_mode > EMB_DECAY_DECOUPLED)
        return emb__fail(EMB_EINVAL, "optimizer weight_decay_mode %d is not L2 or DECOUPLED",
                         (int)c->weight_decay_mode);
    if (c->state_dtype != EMB_F32 && c->state_dtype != EMB_F16 && c->state_dtype != EMB_BF16)
        return emb__fail(EMB_EINVAL, "optimizer state_dtype %d is not f32, f16 or bf16",
                         (int)c->state_dtype);
    if (c->stochastic_rounding != 0 && c->stochastic_rounding != 1)
        return emb__fail(EMB_EINVAL, "optimizer stochastic_rounding %d is not 0 or 1",
                         c->stochastic_rounding);
    if (c->kind == EMB_OPT_ROWWISE_ADAGRAD_COUNTER && (r = emb__counter_check(c)))
        return r;
    if (c->kind == EMB_OPT_ROWWISE_ADAGRAD_COUNTER && c->state_dtype != EMB_F32)
        return emb__fail(EMB_ENOTSUP, "optimizer rowwise_adagrad_counter keeps its rows' last "
                         "step and counter in f32: state_dtype %s is not supported for it",
                         emb_dtype_name(c->state_dtype));
    return emb__placement_check(c->placement, c->numa_node, "optimizer state");
}

int emb_optimizer_create(EmbOptimizer **out, const EmbOptimizerConfig *cfg)
{
    EMB_CHECK_NULL(out);
    int r = emb_optimizer_config_check(cfg);
    if (r)
        return r;
    EmbOptimizer *o = calloc(1, sizeof *o);
    if (!o)
        return emb__fail(EMB_ENOMEM, "out of memory for an optimizer");
    o->cfg = *cfg;
    *out = o;
    return 0;
}

int emb_optimizer_get_config(const EmbOptimizer *opt, EmbOptimizerConfig *out)
{
    EMB_CHECK_NULL(opt);
    EMB_CHECK_NULL(out);
    *out = opt->cfg;
    return 0;
}

int emb_optimizer_set_config(EmbOptimizer *opt, const EmbOptimizerConfig *cfg)
{
    EMB_CHECK_NULL(opt);
    EMB_CHECK_NULL(cfg);
    if (cfg->kind != opt->cfg.kind)
        return emb__fail(EMB_EINVAL, "optimizer kind %d cannot change to %d on a live "
                         "optimizer (its state is kind-specific)", (int)opt->cfg.kind,
                         (int)cfg->kind);
    if (cfg->state_dtype != opt->cfg.state_dtype)
        return emb__fail(EMB_EINVAL, "optimizer state_dtype cannot change from %s to %s on a "
                         "live optimizer (its state is kept in it)",
                         emb_dtype_name(opt->cfg.state_dtype), emb_dtype_name(cfg->state_dtype));
    const int r = emb_optimizer_config_check(cfg);
    if (!r)
        opt->cfg = *cfg;
    return r;
}

int emb_optimizer_set_lr(EmbOptimizer *opt, float lr)
{
    EMB_CHECK_NULL(opt);
    EmbOptimizerConfig c = opt->cfg;
    c.lr = lr;
    return emb_optimizer_set_config(opt, &c);
}

void emb_optimizer_destroy(EmbOptimizer **popt)
{
    if (!popt || !*popt)
        return;
    EmbOptimizer *o = *popt;
    for (int64_t i = 0; i < o->nstates; i++)
        emb_table_destroy(&o->states[i].slot);
    free(o->states);
    free(o);
    *popt = NULL;
}

/* f32 state elements per column of a table of featuresize D. */
static int32_t state_width(EmbOptimizerKind kind, int32_t D)
{
    switch (kind) {
    case EMB_OPT_ADAGRAD: return D;
    case EMB_OPT_ROWWISE_ADAGRAD: return 1;
    case EMB_OPT_ROWWISE_ADAGRAD_COUNTER: return 3; /* h, last step, counter */
    case EMB_OPT_FTRL:
    case EMB_OPT_ADAM: return 2 * D;
    default: return 0;
    }
}

int32_t emb_optimizer_state_width(EmbOptimizerKind kind, int32_t featuresize)
{
    if (kind < EMB_OPT_SGD || kind > EMB_OPT_ROWWISE_ADAGRAD_COUNTER || featuresize < 1)
        return emb__fail(EMB_EINVAL, "emb_optimizer_state_width: optimizer kind %d, "
                         "featuresize %d", (int)kind, (int)featuresize);
    return state_width(kind, featuresize);
}

/* Creates the shadow table of @t and writes the initial state. */
static int make_slot(const EmbOptimizer *o, const EmbTable *t, int32_t width, EmbTable **out)
{
    const EmbTableOptions topts = {.placement = o->cfg.placement, .numa_node = o->cfg.numa_node};
    if (width > INT32_MAX / 2)
        return emb__fail(EMB_EOVERFLOW, "optimizer state of %s is too wide", emb__table_label(t));
    const float h0 = o->cfg.initial_accumulator;
    const int32_t nfill = o->cfg.kind == EMB_OPT_FTRL ? width / 2
                          : o->cfg.kind == EMB_OPT_ROWWISE_ADAGRAD_COUNTER ? 1 : width;
    const EmbDtype sdt = o->cfg.state_dtype;
    const bool keyed = emb__table_keyed(t) != NULL;
    if (keyed && sdt != EMB_F32)
        return emb__fail(EMB_ENOTSUP, "%s keeps its optimizer state with its rows, in f32: "
                         "state_dtype %s is not supported for it", emb__table_label(t),
                         emb_dtype_name(sdt));
    if (keyed) { /* kept with its rows, created and evicted with them */
        float *init = calloc((size_t)width, sizeof *init);
        if (!init)
            return emb__fail(EMB_ENOMEM, "out of memory for optimizer state");
        for (int32_t i = 0; i < nfill && o->cfg.kind != EMB_OPT_ADAM; i++)
            init[i] = h0;
        const int r = emb__table_state_attach((EmbTable *)t, width, init, out);
        free(init);
        return r;
    }
    EmbTable *s = NULL;
    int r = emb_table_create(&s, t->ncolumns, width, sdt, &topts);
    if (r)
        return r;
    if (h0 != 0.0f && o->cfg.kind != EMB_OPT_ADAM)
        for (int64_t c = 0; c < s->ncolumns; c++) {
            void *col = emb__column(s, c, EMB_CTX_NONE);
            for (int32_t i = 0; i < nfill; i++)
                emb__store(sdt, col, i, h0); /* nearest even */
        }
    *out = s;
    return 0;
}

int emb__optimizer_slots(EmbOptimizerKind kind, int32_t D, EmbOptSlot slots[2])
{
    switch (kind) {
    case EMB_OPT_ADAGRAD: slots[0] = (EmbOptSlot){"h", 0, D}; return 1;
    case EMB_OPT_ROWWISE_ADAGRAD: slots[0] = (EmbOptSlot){"h", 0, 1}; return 1;
    case EMB_OPT_ROWWISE_ADAGRAD_COUNTER: /* FBGEMM's momentum1, then prev_iter, row_counter */
        slots[0] = (EmbOptSlot){"h", 0, 1};
        slots[1] = (EmbOptSlot){"counter", 1, 2};
        return 2;
    case EMB_OPT_FTRL:
        slots[0] = (EmbOptSlot){"accum", 0, D};
        slots[1] = (EmbOptSlot){"linear", D, D};
        return 2;
    case EMB_OPT_ADAM:
        slots[0] = (EmbOptSlot){"m", 0, D};
        slots[1] = (EmbOptSlot){"v", D, D};
        return 2;
    default: return 0;
    }
}

const char *emb__optimizer_kind_name(EmbOptimizerKind kind)
{
    static const char *const names[] = {"sgd", "adagrad", "rowwise_adagrad", "ftrl", "adam",
                                        "rowwise_adagrad_counter"};
    return (unsigned)kind <= EMB_OPT_ROWWISE_ADAGRAD_COUNTER ? names[kind] : NULL;
}

EmbOptState *emb__optimizer_find(const EmbOptimizer *o, const EmbTable *t)
{
    for (int64_t i = 0; i < o->nstates; i++)
        if (o->states[i].table == t)
            return &o->states[i];
    return NULL;
}

int emb__optimizer_state(EmbOptimizer *o, const EmbTable *t, EmbOptState **out)
{
    EmbOptState *st = emb__optimizer_find(o, t);
    if (st) {
        if (st->width != state_width(o->cfg.kind, t->featuresize) ||
            (st->slot && st->slot->ncolumns != t->ncolumns) ||
            (emb__table_keyed(t) && !emb__table_state_is(t, st->slot)))
            return emb__fail(EMB_ESHAPE, "the optimizer's state for %s has another shape (a "
                             "destroyed table's? call emb_optimizer_detach)",
                             emb__table_label(t));
        *out = st;
        return 0;
    }
    int r = emb__grow(&o->states, o->nstates, &o->cap, sizeof *o->states, "optimizer state");
    if (r)
        return r;
    const int32_t width = state_width(o->cfg.kind, t->featuresize);
    EmbTable *slot = NULL;
    if (width > 0) {
        r = make_slot(o, t, width, &slot);
        if (r)
            return r;
    }
    st = &o->states[o->nstates++];
    *st = (EmbOptState){.table = t, .slot = slot, .width = width, .step = 0};
    *out = st;
    return 0;
}

int emb_optimizer_attach(EmbOptimizer *opt, const EmbTable *table)
{
    EMB_CHECK_NULL(opt);
    EMB_CHECK_NULL(table);
    EmbOptState *st;
    return emb__optimizer_state(opt, table, &st);
}

void emb_optimizer_detach(EmbOptimizer *opt, const EmbTable *table)
{
    EmbOptState *st = opt ? emb__optimizer_find(opt, table) : NULL;
    if (!st)
        return;
    emb_table_destroy(&st->slot);
    *st = opt->states[--opt->nstates];
}

int emb_optimizer_state(const EmbOptimizer *opt, const EmbTable *table, int slot,
                        EmbTable **out, int64_t *step)
{
    EMB_CHECK_NULL(opt);
    EMB_CHECK_NULL(table);
    EMB_CHECK_NULL(out);
    if (slot < 0)
        return emb__fail(EMB_EINVAL, "optimizer state slot %d is negative", slot);
    const EmbOptState *st = emb__optimizer_find(opt, table);
    if (!st)
        return emb__fail(EMB_ENOTFOUND, "the optimizer has no state for %s",
                         emb__table_label(table));
    *out = slot == 0 ? st->slot : NULL;
    if (step)
        *step = st->step;
    return 0;
}

int emb_optimizer_set_step(EmbOptimizer *opt, const EmbTable *table, int64_t step)
{
    EMB_CHECK_NULL(opt);
    EMB_CHECK_NULL(table);
    if (step < 0)
        return emb__fail(EMB_EINVAL, "optimizer step %lld of %s is negative", (long long)step,
                         emb__table_label(table));
    EmbOptState *st = emb__optimizer_find(opt, table);
    if (!st)
        return emb__fail(EMB_ENOTFOUND, "the optimizer has no state for %s",
                         emb__table_label(table));
    st->step = step;
    return 0;
}

/* A table's seed for the stochastic rounding of its quantized rows: FNV-1a of its name. */
static uint64_t table_seed(const EmbTable *t)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char *p = t->name; *p; p++)
        h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
    return h;
}

void emb__plan_optimizer(const EmbOptimizer *o, const EmbOptState *st, EmbPlan *plan,
                         unsigned flags)
{
    const EmbOptimizerConfig *c = &o->cfg;
    const EmbTable *t = plan->table;
    const int nt = (flags & EMB_UPDATE_NONTEMPORAL) != 0;
    plan->kind = c->kind;
    plan->state = st->slot;
    plan->params = (EmbOptimParams){.lr = c->lr, .eps = c->eps, .lr_power = c->lr_power,
                                    .l1 = c->l1, .l2 = c->l2, .beta1 = c->beta1,
                                    .beta2 = c->beta2, .step_size = c->lr};
    if (c->kind == EMB_OPT_ADAM && c->bias_correction) {
        const double t1 = (double)(st->step + 1);
        const double bc1 = 1.0 - pow(c->beta1, t1), bc2 = 1.0 - pow(c->beta2, t1);
        plan->params.step_size = (float)(c->lr * sqrt(bc2) / bc1);
    }
    plan->decay_l2 = 0.0f;
    plan->decay_scale = 1.0f;
    if (c->weight_decay > 0.0f && c->weight_decay_mode == EMB_DECAY_L2)
        plan->decay_l2 = c->weight_decay;
    else if (c->weight_decay > 0.0f)
        plan->decay_scale = 1.0f - c->lr * c->weight_decay;
    emb__plan_clip(c, plan);
    plan->sgd = NULL;
    plan->row = NULL;
    plan->pool = emb__kernel_pool(EMB_F32, t->featuresize, 0);
    EmbDtype cdt = emb__dtype_compute(t->dtype);
    plan->requant = cdt != t->dtype;
    plan->requant_row = plan->requant ? emb__kernels()->requant[t->dtype] : NULL;
    plan->qseed = table_seed(t);
    plan->step = st->step;
    emb__plan_lowp(c, plan, &cdt);
    plan->counter = NULL;
    if (c->kind == EMB_OPT_SGD)
        plan->sgd = emb__kernel_sgd_row(cdt, t->featuresize, nt && !plan->requant);
    else if (c->kind == EMB_OPT_ROWWISE_ADAGRAD_COUNTER)
        emb__plan_counter(c, plan, cdt); /* its own weight decay; no kernel table */
    else
        plan->row = emb__kernel_opt_row(c->kind, cdt, t->featuresize, nt && !plan->requant);
    /* FTRL's range copies take the square root of lr_power = -0.5 (TF's special case) */
    /* the counter without weight decay: row-wise Adagrad's range with its rate (counter.c) */
    const bool ranged = !nt && !plan->requant && !plan->state_lowp &&
                        (!plan->counter || !(c->weight_decay > 0.0f)) &&
                        (c->kind != EMB_OPT_FTRL || c->lr_power == -0.5f);
    const EmbOptimizerKind rk = plan->counter ? EMB_OPT_ROWWISE_ADAGRAD : c->kind;
    plan->range = ranged ? emb__kernel_rows(rk, t->dtype, t->featuresize) : NULL;
}
