/* The rewrite passes in the order they run, which of them a spec selects
 * ("all", "none", "a,b", "-a,-b"), and the record of what fired. */
#include "rewrite.h"

#include <stdio.h>
#include <string.h>

#include "error.h"

static const cg_rewrite_pass *const passes[] = {&cg_rewrite_cse, &cg_rewrite_attention, &cg_rewrite_norm,
                                                &cg_rewrite_elementwise};
enum { N_PASSES = (int)(sizeof passes / sizeof passes[0]) };

_Static_assert(N_PASSES <= CG_MAX_REWRITES, "cg_model records at most CG_MAX_REWRITES passes");

int cg_rewrite_count(void) { return N_PASSES; }

const char *cg_rewrite_name(int i) { return i >= 0 && i < N_PASSES ? passes[i]->name : NULL; }

const char *cg_rewrite_doc(int i) { return i >= 0 && i < N_PASSES ? passes[i]->doc : NULL; }

static int pass_index(const char *name, size_t len) {
    for (int i = 0; i < N_PASSES; i++)
        if (strlen(passes[i]->name) == len && !strncmp(passes[i]->name, name, len)) return i;
    return -1;
}

/* The passes `which` selects as a bit set: NULL, "" and "all" every one,
 * "none" none, "a,b" those, "-a,-b" all but those (not mixed). */
static cg_status select_passes(const char *which, unsigned *out) {
    unsigned all = (1u << N_PASSES) - 1u;
    if (!which || !*which || !strcmp(which, "all")) return *out = all, CG_OK;
    if (!strcmp(which, "none")) return *out = 0, CG_OK;
    int minus = which[0] == '-';
    unsigned set = minus ? all : 0;
    for (const char *p = which; *p;) {
        size_t n = strcspn(p, ",");
        int neg = *p == '-';
        int i = pass_index(p + neg, n - (size_t)neg);
        if (neg != minus || i < 0) {
            char names[256] = "";
            for (int k = 0; k < N_PASSES; k++)
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", k ? ", " : "", passes[k]->name);
            return cg_error(CG_ERR_INVALID_ARGUMENT,
                            neg != minus ? "rewrites '%s': give names to run or -names to leave out, not both"
                                         : "rewrites '%s': no rewrite '%.*s' (there are: %s; or all, none)",
                            which, (int)(n - (size_t)neg), p + neg, names);
        }
        set = minus ? set & ~(1u << i) : set | (1u << i);
        p += n + (p[n] == ',');
    }
    *out = set;
    return CG_OK;
}

cg_status cg_model_rewrite(cg_model *m, const char *which) {
    if (!m) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_model_rewrite: model is NULL");
    unsigned set;
    cg_status st = select_passes(which, &set);
    if (st) return st;
    if (!m->verified && (st = cg_model_verify(m))) return st;
    m->rewritten = 1;
    for (int i = 0; i < N_PASSES; i++) {
        if (!(set & (1u << i))) continue;
        int fired = 0;
        for (int gi = 0; gi < m->n_graphs && !st; gi++) st = passes[i]->run(m->graphs[gi], &fired);
        /* the next pass reads the types of what this one made */
        if (!st && fired) st = cg_model_verify(m);
        if (st) return st;
        m->rewrites_ran |= 1u << i;
        m->rewrites_fired[i] += fired;
    }
    return CG_OK;
}

int cg_model_rewrite_fired(const cg_model *m, int i) {
    if (!m || i < 0 || i >= N_PASSES || !(m->rewrites_ran & (1u << i))) return -1;
    return m->rewrites_fired[i];
}
