/* The per-graph index from value names to value indices: open addressing
 * with linear probing over FNV-1a hashes, at most half full. Values are only
 * ever added to a graph, so the index only grows. Before it, every lookup
 * compared against every earlier name: a 100,000-node chain took over a
 * minute to parse and verify. Each slot keeps its name's full hash: a probe
 * reads a name only when the hashes agree, and growing the index reads none
 * (on a 1,000,000-node chain those reads were cache misses into the values
 * and their names, a fifth of `clgraph check`). */
#include "ir.h"

#include "error.h"
#include "hash.h"

#include <stdlib.h>
#include <string.h>

/* FNV-1a's low bits cluster for names that differ only in their last
 * characters (x1, x2, ... of a long chain), and linear probing then walks
 * long runs: a finalizer (MurmurHash3's fmix64) spreads every bit first. */
static uint32_t hash_of(const char *name) {
    uint64_t h = cg_fnv1a_str(CG_FNV_BASIS, name);
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return (uint32_t)h;
}

static void put(cg_name_slot *slots, uint32_t mask, int32_t v, uint32_t hash) {
    uint32_t s = hash & mask;
    while (slots[s].v >= 0) s = (s + 1) & mask;
    slots[s].v = v;
    slots[s].hash = hash;
}

cg_status cg_graph_index_reserve(cg_graph *g, int extra) {
    uint64_t need = ((uint64_t)g->n_index + (uint64_t)extra) * 2;
    if (need <= g->cap_index) return CG_OK;
    uint64_t cap = g->cap_index ? g->cap_index : 16;
    while (cap < need) cap *= 2;
    if (cap > (uint64_t)UINT32_MAX / 2 + 1 || cap > SIZE_MAX / sizeof(cg_name_slot))
        return cg_error(CG_ERR_NO_MEMORY, "graph '%s': too many values to index", g->name);
    cg_name_slot *slots = malloc((size_t)cap * sizeof *slots);
    if (!slots) return cg_error(CG_ERR_NO_MEMORY, "out of memory indexing the values of graph '%s'", g->name);
    for (uint64_t i = 0; i < cap; i++) slots[i].v = -1;
    for (uint32_t i = 0; i < g->cap_index; i++)
        if (g->index[i].v >= 0) put(slots, (uint32_t)cap - 1, g->index[i].v, g->index[i].hash);
    free(g->index);
    g->index = slots;
    g->cap_index = (uint32_t)cap;
    return CG_OK;
}

void cg_graph_index_add(cg_graph *g, int32_t v) {
    put(g->index, g->cap_index - 1, v, hash_of(g->values[v].name));
    g->n_index++;
}

int32_t cg_graph_find_value(const cg_graph *g, const char *name) {
    if (!g || !name || !g->cap_index) return -1;
    uint32_t mask = g->cap_index - 1, hash = hash_of(name);
    for (uint32_t s = hash & mask; g->index[s].v >= 0; s = (s + 1) & mask)
        if (g->index[s].hash == hash && strcmp(g->values[g->index[s].v].name, name) == 0) return g->index[s].v;
    return -1;
}
