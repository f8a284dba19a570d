/*
 * optimizer.c — EmbOptimizer: hyper-parameters, per-table state in shadow tables, and the
 * per-step parameters (Adam's bias correction) handed to the row kernels.
 */
#include <math.h>
#include <stdlib.h>

#include "tables/table_impl.h"
#include "update/update_impl.h"

EmbOptimizerConfig emb_optimizer_defaults(EmbOptimizerKind kind, float lr)
{
    EmbOptimizerConfig c = {.kind = kind, .lr = lr, .eps = 1e-10f, .lr_power = -0.5f,
                            .beta1 = 0.9f, .beta2 = 0.999f, .bias_correction = 1};
    if (kind == EMB_OPT_FTRL)
        c.initial_accumulator = 0.1f;
    if (kind == EMB_OPT_ADAM)
        c.eps = 1e-8f;
    return c;
}

static int config_check(const EmbOptimizerConfig *c)
{
    if ((unsigned)c->kind > EMB_OPT_ADAM)
        return emb__fail(EMB_EINVAL, "optimizer kind %d is unknown", (int)c->kind);
    if (!(c->lr > 0.0f) || !isfinite(c->lr))
        return emb__fail(EMB_EINVAL, "optimizer lr %g is not a positive number", (double)c->lr);
    if (!(c->eps >= 0.0f) || !(c->initial_accumulator >= 0.0f))
        return emb__fail(EMB_EINVAL, "optimizer eps %g / initial_accumulator %g is negative",
                         (double)c->eps, (double)c->initial_accumulator);
    if (c->kind == EMB_OPT_FTRL && (!(c->lr_power <= 0.0f) || !(c->l1 >= 0.0f) ||
                                    !(c->l2 >= 0.0f) || !(c->initial_accumulator > 0.0f)))
        return emb__fail(EMB_EINVAL, "FTRL needs lr_power <= 0, l1, l2 >= 0 and "
                         "initial_accumulator > 0");
    if (c->kind == EMB_OPT_ADAM && (!(c->beta1 >= 0.0f && c->beta1 < 1.0f) ||
                                    !(c->beta2 >= 0.0f && c->beta2 < 1.0f)))
        return emb__fail(EMB_EINVAL, "Adam betas %g, %g are not in [0, 1)", (double)c->beta1,
                         (double)c->beta2);
    return 0;
}

int emb_optimizer_create(EmbOptimizer **out, const EmbOptimizerConfig *cfg)
{
    EMB_CHECK_NULL(out);
    EMB_CHECK_NULL(cfg);
    int r = config_check(cfg);
    if (r)
        return r;
    EmbOptimizer *o = calloc(1, sizeof *o);
    if (!o)
        return emb__fail(EMB_ENOMEM, "out of memory for an optimizer");
    o->cfg = *cfg;
    *out = o;
    return 0;
}

void emb_optimizer_destroy(EmbOptimizer **popt)
{
    if (!popt || !*popt)
        return;
    EmbOptimizer *o = *popt;
    for (int64_t i = 0; i < o->nstates; i++)
        emb_table_destroy(&o->states[i].slot);
    free(o->states);
    free(o->plans);
    free(o);
    *popt = NULL;
}

/* f32 state elements per column of a table of featuresize D. */
static int32_t state_width(EmbOptimizerKind kind, int32_t D)
{
    switch (kind) {
    case EMB_OPT_ADAGRAD: return D;
    case EMB_OPT_ROWWISE_ADAGRAD: return 1;
    case EMB_OPT_FTRL:
    case EMB_OPT_ADAM: return 2 * D;
    default: return 0;
    }
}

/* Creates the shadow table of @t and writes the initial state. */
static int make_slot(const EmbOptimizer *o, const EmbTable *t, int32_t width, EmbTable **out)
{
    const EmbTableOptions topts = {.placement = o->cfg.placement, .numa_node = o->cfg.numa_node};
    if (width > INT32_MAX / 2)
        return emb__fail(EMB_EOVERFLOW, "optimizer state of %s is too wide", emb__table_label(t));
    EmbTable *s = NULL;
    int r = emb_table_create(&s, t->ncolumns, width, EMB_F32, &topts);
    if (r)
        return r;
    const float h0 = o->cfg.initial_accumulator;
    const int32_t nfill = o->cfg.kind == EMB_OPT_FTRL ? width / 2 : width;
    if (h0 != 0.0f && o->cfg.kind != EMB_OPT_ADAM)
        for (int64_t c = 0; c < s->ncolumns; c++) {
            float *col = (float *)emb__column(s, c, EMB_CTX_NONE);
            for (int32_t i = 0; i < nfill; i++)
                col[i] = h0;
        }
    *out = s;
    return 0;
}

static EmbOptState *find(const EmbOptimizer *o, const EmbTable *t)
{
    for (int64_t i = 0; i < o->nstates; i++)
        if (o->states[i].table == t)
            return &o->states[i];
    return NULL;
}

int emb__optimizer_state(EmbOptimizer *o, const EmbTable *t, EmbOptState **out)
{
    EmbOptState *st = find(o, t);
    if (st) {
        if (st->width != state_width(o->cfg.kind, t->featuresize) ||
            (st->slot && st->slot->ncolumns != t->ncolumns))
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
    EmbOptState *st = opt ? find(opt, table) : NULL;
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
    const EmbOptState *st = find(opt, table);
    if (!st)
        return emb__fail(EMB_ENOTFOUND, "the optimizer has no state for %s",
                         emb__table_label(table));
    *out = slot == 0 ? st->slot : NULL;
    if (step)
        *step = st->step;
    return 0;
}

static int optim_index(EmbOptimizerKind kind)
{
    switch (kind) {
    case EMB_OPT_ADAGRAD: return EMB_OPTIM_ADAGRAD;
    case EMB_OPT_ROWWISE_ADAGRAD: return EMB_OPTIM_ROWWISE;
    case EMB_OPT_FTRL: return EMB_OPTIM_FTRL;
    default: return EMB_OPTIM_ADAM;
    }
}

void emb__plan_optimizer(const EmbOptimizer *o, const EmbOptState *st, EmbPlan *plan,
                         const EmbOptimKernels *k, unsigned flags)
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
    plan->sgd = NULL;
    plan->row = NULL;
    plan->pool = emb__kernel_pool(EMB_F32, t->featuresize, 0);
    if (c->kind == EMB_OPT_SGD)
        plan->sgd = emb__kernel_sgd_row(t->dtype, t->featuresize, nt);
    else
        plan->row = (nt ? k->row_nt : k->row)[optim_index(c->kind)][t->dtype];
}
