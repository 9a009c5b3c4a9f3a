/* The per-graph index from value names to value indices: open addressing
 * with linear probing over FNV-1a hashes, at most half full. Values are only
 * ever added to a graph, so the index only grows. Before it, every lookup
 * compared against every earlier name: a 100,000-node chain took over a
 * minute to parse and verify. */
#include "ir.h"

#include "error.h"
#include "hash.h"

#include <stdlib.h>
#include <string.h>

/* FNV-1a's low bits cluster for names that differ only in their last
 * characters (x1, x2, ... of a long chain), and linear probing then walks
 * long runs: a finalizer (MurmurHash3's fmix64) spreads every bit first. */
static uint32_t slot_of(const char *name, uint32_t mask) {
    uint64_t h = cg_fnv1a_str(CG_FNV_BASIS, name);
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return (uint32_t)h & mask;
}

static void put(int32_t *slots, uint32_t mask, const cg_value *values, int32_t v) {
    uint32_t s = slot_of(values[v].name, mask);
    while (slots[s] >= 0) s = (s + 1) & mask;
    slots[s] = v;
}

cg_status cg_graph_index_reserve(cg_graph *g, int extra) {
    uint64_t need = ((uint64_t)g->n_index + (uint64_t)extra) * 2;
    if (need <= g->cap_index) return CG_OK;
    uint64_t cap = g->cap_index ? g->cap_index : 16;
    while (cap < need) cap *= 2;
    if (cap > (uint64_t)UINT32_MAX / 2 + 1 || cap > SIZE_MAX / sizeof(int32_t))
        return cg_error(CG_ERR_NO_MEMORY, "graph '%s': too many values to index", g->name);
    int32_t *slots = malloc((size_t)cap * sizeof *slots);
    if (!slots) return cg_error(CG_ERR_NO_MEMORY, "out of memory indexing the values of graph '%s'", g->name);
    memset(slots, 0xff, (size_t)cap * sizeof *slots); /* every slot -1: empty */
    for (uint32_t i = 0; i < g->cap_index; i++)
        if (g->index[i] >= 0) put(slots, (uint32_t)cap - 1, g->values, g->index[i]);
    free(g->index);
    g->index = slots;
    g->cap_index = (uint32_t)cap;
    return CG_OK;
}

void cg_graph_index_add(cg_graph *g, int32_t v) {
    put(g->index, g->cap_index - 1, g->values, v);
    g->n_index++;
}

int32_t cg_graph_find_value(const cg_graph *g, const char *name) {
    if (!g || !name || !g->cap_index) return -1;
    uint32_t mask = g->cap_index - 1;
    for (uint32_t s = slot_of(name, mask); g->index[s] >= 0; s = (s + 1) & mask)
        if (strcmp(g->values[g->index[s]].name, name) == 0) return g->index[s];
    return -1;
}
