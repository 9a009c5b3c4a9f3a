/* Placement options: the default device, "--place" rules matched against
 * node and graph names, and the devices a plan may use. */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "plan.h"

cg_status cg_place_device(cg_plan *p, const char *spec, int *dev) {
    if (!strcmp(spec, "auto")) {
        *dev = -1;
        return CG_OK;
    }
    if (!strcmp(spec, "cpu")) {
        *dev = 0;
        return CG_OK;
    }
    if (cg_cl_device_count() == 0)
        return cg_error(CG_ERR_NOT_FOUND, "device '%s': %s", spec,
                        cg_cl_unavailable_reason() ? cg_cl_unavailable_reason() : "no OpenCL device");
    int idx;
    cg_status st = cg_cl_device_find(spec, &idx);
    if (st) return st;
    for (int d = 1; d < p->n_devs; d++)
        if (p->devs[d].cl_index == idx) {
            *dev = d;
            return CG_OK;
        }
    if (p->n_devs == CG_PLAN_MAX_DEVICES)
        return cg_error(CG_ERR_UNSUPPORTED, "a plan uses at most %d devices", CG_PLAN_MAX_DEVICES);
    pdev *pd = &p->devs[p->n_devs];
    st = cg_cl_device_open(idx, &pd->cl);
    if (st) return st;
    pd->cl_index = idx;
    snprintf(pd->name, sizeof pd->name, "opencl:%d", idx);
    pd->align = cg_cl_info_of(pd->cl)->mem_align;
    if (pd->align < 64) pd->align = 64;
    *dev = p->n_devs++;
    return CG_OK;
}

/* "auto" makes every OpenCL device a candidate. */
static cg_status open_all(cg_plan *p) {
    for (int i = 0; i < cg_cl_device_count(); i++) {
        char spec[32];
        int d;
        snprintf(spec, sizeof spec, "opencl:%d", i);
        cg_status st = cg_place_device(p, spec, &d);
        if (st) return st;
    }
    return CG_OK;
}

cg_status cg_place_parse(cg_plan *p, const char *device, const char *rules) {
    p->devs[0].cl_index = -1;
    p->devs[0].cl = NULL;
    snprintf(p->devs[0].name, sizeof p->devs[0].name, "cpu");
    p->devs[0].align = 64;
    p->n_devs = 1;
    int any_auto = 0;
    cg_status st = cg_place_device(p, device && *device ? device : "cpu", &p->default_dev);
    if (st) return st;
    any_auto |= p->default_dev < 0;
    if (rules && *rules) {
        char *list = cg_strdup(rules);
        if (!list) return CG_ERR_NO_MEMORY;
        char *save = NULL;
        for (char *r = strtok_r(list, ",", &save); r && !st; r = strtok_r(NULL, ",", &save)) {
            while (*r == ' ') r++;
            char *eq = strrchr(r, '=');
            if (!eq || eq == r || !eq[1]) {
                st = cg_error(CG_ERR_INVALID_ARGUMENT,
                              "placement rule '%s' is not PATTERN=DEVICE (e.g. 'decoder=opencl:1,*attn*=cpu')", r);
                break;
            }
            *eq = 0;
            int dev;
            st = cg_place_device(p, eq + 1, &dev);
            if (st) {
                cg_error_prefix("placement rule '%s=%s': ", r, eq + 1);
                break;
            }
            place_rule *nr = realloc(p->rules, sizeof *nr * ((size_t)p->n_rules + 1));
            if (!nr) {
                st = cg_error(CG_ERR_NO_MEMORY, "out of memory");
                break;
            }
            p->rules = nr;
            p->rules[p->n_rules].pattern = cg_strdup(r);
            p->rules[p->n_rules].dev = dev;
            if (!p->rules[p->n_rules].pattern) st = CG_ERR_NO_MEMORY;
            else p->n_rules++;
            any_auto |= dev < 0;
        }
        free(list);
    }
    if (!st && any_auto) st = open_all(p);
    return st;
}

int cg_place_rule_for(const cg_plan *p, const char *node_name) {
    int by_node = -2, by_graph = -2;
    for (int r = 0; r < p->n_rules; r++) {
        if (fnmatch(p->rules[r].pattern, node_name, 0) == 0) by_node = p->rules[r].dev;
        else if (fnmatch(p->rules[r].pattern, p->graph->name, 0) == 0) by_graph = p->rules[r].dev;
    }
    if (by_node != -2) return by_node;
    if (by_graph != -2) return by_graph;
    return p->default_dev;
}
