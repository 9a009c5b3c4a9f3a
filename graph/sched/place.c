/* Placement options: the default device, "--place" rules matched against
 * node and graph names, and the devices a plan may use. */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "plan.h"

/* The pdev of backend device `index`, opening it when new. */
static cg_status plan_device(cg_plan *p, int index, int *dev) {
    for (int d = 0; d < p->n_devs; d++)
        if (p->devs[d].index == index) {
            *dev = d;
            return CG_OK;
        }
    pdev *nd = realloc(p->devs, sizeof *nd * ((size_t)p->n_devs + 1));
    if (!nd) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    p->devs = nd;
    pdev *pd = &p->devs[p->n_devs];
    memset(pd, 0, sizeof *pd);
    cg_status st = cg_dev_open(index, &pd->dev);
    if (st) return st;
    pd->index = index;
    pd->info = cg_dev_info(pd->dev);
    *dev = p->n_devs++;
    return CG_OK;
}

cg_status cg_place_device(cg_plan *p, const char *spec, int *dev) {
    if (!strcmp(spec, "auto")) {
        *dev = -1;
        return CG_OK;
    }
    int index;
    cg_status st = cg_dev_find(spec, &index);
    return st ? st : plan_device(p, index, dev);
}

/* "auto" makes every device a candidate. */
static cg_status open_all(cg_plan *p) {
    int d;
    cg_status st = CG_OK;
    for (int i = 0; !st && i < cg_dev_count(); i++) st = plan_device(p, i, &d);
    return st;
}

cg_status cg_place_parse(cg_plan *p, const char *device, const char *rules) {
    /* Device 0 is the CPU: inputs and weights start there. */
    int cpu;
    cg_status st = plan_device(p, 0, &cpu);
    if (st) return st;
    int any_auto = 0;
    st = cg_place_device(p, device && *device ? device : "cpu", &p->default_dev);
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

/* The device the rules give node_name into *dev (a node-name match beats
 * a graph-name match, the last of a kind wins); 0 when no rule matches. */
static int rule_lookup(const cg_plan *p, const char *node_name, int *dev) {
    int by_node = -2, by_graph = -2;
    for (int r = 0; r < p->n_rules; r++) {
        if (fnmatch(p->rules[r].pattern, node_name, 0) == 0) by_node = p->rules[r].dev;
        else if (fnmatch(p->rules[r].pattern, p->graph->name, 0) == 0) by_graph = p->rules[r].dev;
    }
    *dev = by_node != -2 ? by_node : by_graph;
    return *dev != -2;
}

int cg_place_has_rule(const cg_plan *p, const char *node_name) {
    int dev;
    return rule_lookup(p, node_name, &dev);
}

int cg_place_rule_for(const cg_plan *p, const char *node_name) {
    int dev;
    return rule_lookup(p, node_name, &dev) ? dev : p->default_dev;
}
