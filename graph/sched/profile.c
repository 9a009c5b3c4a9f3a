/* The profiler: events recorded by the executor (exec.c) while a profiler
 * is attached to a plan, written as a Chrome trace / Perfetto JSON file
 * and summed into a per-node table.
 *
 * A profiled run serialises its devices: after each step the host waits
 * for the step's device, so each kernel's and copy's time is its own
 * (launch, queueing and execution) and the events of a run add up to the
 * run; overlap between devices is what a profiled run gives up, as
 * CUDA_LAUNCH_BLOCKING does. Where the device's queue records timestamps
 * (OpenCL profiling), an event also carries the time the device itself
 * took (args.device_us): the rest of its span is launching and waiting.
 * The strings of events are interned: a run
 * repeats the same nodes and shapes, so events stay small. */
#include "profile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "error.h"
#include "hash.h"
#include "strbuf.h"

#define MAX_EVENTS (1 << 24)

/* One distinct (kind, track, graph, name, op, detail). */
typedef struct label {
    prof_kind kind;
    char *track, *graph, *name, *op, *detail;
    uint64_t hash;
    int tid;         /* the track's index */
    double total_us; /* summed over events */
    uint64_t count;
} label;

typedef struct event {
    int32_t label;
    float dev_us; /* by the device's timestamps, < 0: none */
    double ts, dur;
    uint64_t bytes;
} event;

struct cg_profiler {
    struct timespec t0;
    label *labels;
    int n_labels, cap_labels;
    int *slots; /* label hash -> index, open addressing */
    int n_slots;
    event *events;
    size_t n_events, cap_events;
    uint64_t dropped;
    char **tracks; /* track names, by tid */
    int n_tracks;
};

cg_status cg_profiler_create(cg_profiler **out) {
    if (!out) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_profiler_create: NULL argument");
    cg_profiler *p = calloc(1, sizeof *p);
    if (!p) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    clock_gettime(CLOCK_MONOTONIC, &p->t0);
    *out = p;
    return CG_OK;
}

void cg_profiler_free(cg_profiler *p) {
    if (!p) return;
    for (int i = 0; i < p->n_labels; i++) {
        label *l = &p->labels[i];
        free(l->graph), free(l->name), free(l->op), free(l->detail);
    }
    for (int i = 0; i < p->n_tracks; i++) free(p->tracks[i]);
    free(p->tracks);
    free(p->labels);
    free(p->slots);
    free(p->events);
    free(p);
}

double cg_profile_now(const cg_profiler *p) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - p->t0.tv_sec) * 1e6 + (double)(t.tv_nsec - p->t0.tv_nsec) * 1e-3;
}

static int streq(const char *a, const char *b) { return a == b || (a && b && !strcmp(a, b)); }

static char *dup_or_null(const char *s, int *bad) {
    if (!s) return NULL;
    char *d = strdup(s);
    if (!d) *bad = 1;
    return d;
}

static int track_id(cg_profiler *p, const char *track) {
    for (int i = 0; i < p->n_tracks; i++)
        if (!strcmp(p->tracks[i], track)) return i;
    char **t = realloc(p->tracks, sizeof *t * (size_t)(p->n_tracks + 1));
    if (!t) return -1;
    p->tracks = t;
    if (!(t[p->n_tracks] = strdup(track))) return -1;
    return p->n_tracks++;
}

static int grow_slots(cg_profiler *p) {
    int n = p->n_slots ? p->n_slots * 2 : 256;
    int *s = malloc(sizeof *s * (size_t)n);
    if (!s) return -1;
    for (int i = 0; i < n; i++) s[i] = -1;
    for (int i = 0; i < p->n_labels; i++) {
        int k = (int)(p->labels[i].hash & (uint64_t)(n - 1));
        while (s[k] >= 0) k = (k + 1) & (n - 1);
        s[k] = i;
    }
    free(p->slots);
    p->slots = s;
    p->n_slots = n;
    return 0;
}

/* The label's index, made when new; -1 when memory is short. */
static int intern(cg_profiler *p, prof_kind kind, const char *track, const char *graph, const char *name,
                  const char *op, const char *detail) {
    uint64_t h = cg_fnv1a_str(CG_FNV_BASIS + (uint64_t)kind, track);
    h = cg_fnv1a_str(h, graph ? graph : "");
    h = cg_fnv1a_str(h, name ? name : "");
    h = cg_fnv1a_str(h, op ? op : "");
    h = cg_fnv1a_str(h, detail ? detail : "");
    if ((p->n_labels + 1) * 2 > p->n_slots && grow_slots(p)) return -1;
    int k = (int)(h & (uint64_t)(p->n_slots - 1));
    for (; p->slots[k] >= 0; k = (k + 1) & (p->n_slots - 1)) {
        const label *l = &p->labels[p->slots[k]];
        if (l->hash == h && l->kind == kind && !strcmp(p->tracks[l->tid], track) && streq(l->graph, graph) &&
            streq(l->name, name) && streq(l->op, op) && streq(l->detail, detail))
            return p->slots[k];
    }
    if (p->n_labels == p->cap_labels) {
        int cap = p->cap_labels ? p->cap_labels * 2 : 64;
        label *nl = realloc(p->labels, sizeof *nl * (size_t)cap);
        if (!nl) return -1;
        p->labels = nl;
        p->cap_labels = cap;
    }
    label *l = &p->labels[p->n_labels];
    memset(l, 0, sizeof *l);
    int bad = 0;
    l->kind = kind;
    l->hash = h;
    l->tid = track_id(p, track);
    l->graph = dup_or_null(graph, &bad);
    l->name = dup_or_null(name, &bad);
    l->op = dup_or_null(op, &bad);
    l->detail = dup_or_null(detail, &bad);
    if (bad || l->tid < 0) {
        free(l->graph), free(l->name), free(l->op), free(l->detail);
        return -1;
    }
    p->slots[k] = p->n_labels;
    return p->n_labels++;
}

int cg_profile_add(cg_profiler *p, prof_kind kind, const char *track, const char *graph, const char *name,
                   const char *op, const char *detail, double t0, double t1, uint64_t bytes, double dev_us) {
    if (p->n_events == p->cap_events) {
        size_t cap = p->cap_events ? p->cap_events * 2 : 4096;
        event *e = p->n_events < MAX_EVENTS ? realloc(p->events, sizeof *e * cap) : NULL;
        if (!e) return (int)++p->dropped;
        p->events = e;
        p->cap_events = cap;
    }
    int li = intern(p, kind, track, graph, name, op, detail);
    if (li < 0) return (int)++p->dropped;
    p->labels[li].total_us += t1 - t0;
    p->labels[li].count++;
    p->events[p->n_events++] = (event){li, (float)dev_us, t0, t1 - t0, bytes};
    return 0;
}

uint64_t cg_profiler_dropped(const cg_profiler *p) { return p ? p->dropped : 0; }

/* ---- the trace ---- */

static void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

static const char *kind_name(prof_kind k) {
    return k == PROF_KERNEL ? "kernel" : k == PROF_COPY ? "copy" : k == PROF_WAIT ? "wait" : "run";
}

static void write_event(FILE *f, const cg_profiler *p, const event *e) {
    const label *l = &p->labels[e->label];
    fputs(",\n{\"name\":", f);
    json_str(f, l->kind == PROF_KERNEL ? l->op : l->name);
    fprintf(f, ",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,\"args\":{",
            kind_name(l->kind), l->tid + 1, e->ts, e->dur);
    fputs("\"graph\":", f);
    json_str(f, l->graph);
    if (l->kind != PROF_RUN) {
        fputs(",\"node\":", f);
        json_str(f, l->name);
    }
    if (l->op) fputs(",\"op\":", f), json_str(f, l->op);
    if (l->detail) fputs(",\"shapes\":", f), json_str(f, l->detail);
    if (l->kind == PROF_COPY) fprintf(f, ",\"bytes\":%llu", (unsigned long long)e->bytes);
    if (e->dev_us >= 0) fprintf(f, ",\"device_us\":%.3f", (double)e->dev_us);
    fputs("}}", f);
}

cg_status cg_profiler_write_trace(const cg_profiler *p, const char *path) {
    if (!p || !path) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_profiler_write_trace: NULL argument");
    FILE *f = fopen(path, "w");
    if (!f) return cg_error(CG_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n"
          "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"args\":{\"name\":\"clgraph\"}}",
          f);
    for (int t = 0; t < p->n_tracks; t++) {
        fprintf(f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"args\":{\"name\":", t + 1);
        json_str(f, p->tracks[t]);
        /* the host first, then the devices in the order they appeared */
        fprintf(f,
                "}},\n{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"args\":{\"sort_index\":%d}}",
                t + 1, strcmp(p->tracks[t], "host") ? t + 1 : 0);
    }
    for (size_t i = 0; i < p->n_events; i++) write_event(f, p, &p->events[i]);
    fprintf(f, "\n],\"otherData\":{\"dropped_events\":%llu}}\n", (unsigned long long)p->dropped);
    int bad = ferror(f), err = errno;
    if (fclose(f) != 0 && !bad) bad = 1, err = errno;
    if (bad) return cg_error(CG_ERR_IO, "cannot write %s: %s", path, strerror(err));
    return CG_OK;
}

/* ---- the table ---- */

/* Per (graph, node, op, device): kernels and copies summed over shapes. */
typedef struct row {
    const label *l;
    double us;
    uint64_t count;
} row;

static int by_time(const void *a, const void *b) {
    double x = ((const row *)a)->us, y = ((const row *)b)->us;
    return x < y ? 1 : x > y ? -1 : 0;
}

static int same_row(const label *a, const label *b) {
    return a->kind == b->kind && a->tid == b->tid && streq(a->graph, b->graph) && streq(a->name, b->name) &&
           streq(a->op, b->op);
}

cg_status cg_profiler_table(const cg_profiler *p, int top, char **out) {
    if (!p || !out) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_profiler_table: NULL argument");
    row *rows = calloc((size_t)p->n_labels + 1, sizeof *rows);
    if (!rows) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    int n = 0;
    double steps = 0, runs = 0;
    uint64_t n_runs = 0;
    for (int i = 0; i < p->n_labels; i++) {
        const label *l = &p->labels[i];
        if (l->kind == PROF_RUN) runs += l->total_us, n_runs += l->count;
        if (l->kind != PROF_KERNEL && l->kind != PROF_COPY) continue;
        steps += l->total_us;
        int r = 0;
        while (r < n && !same_row(rows[r].l, l)) r++; /* few distinct nodes; a table is printed once */
        if (r == n) rows[n++].l = l;
        rows[r].us += l->total_us;
        rows[r].count += l->count;
    }
    qsort(rows, (size_t)n, sizeof *rows, by_time);
    cg_strbuf b = {0};
    cg_strbuf_put(&b, "%-32s %-14s %-10s %8s %10s %10s %6s\n", "node", "op", "device", "calls", "total ms", "mean us",
                  "share");
    for (int r = 0; r < n && (top <= 0 || r < top); r++) {
        const label *l = rows[r].l;
        char node[160];
        snprintf(node, sizeof node, "%s%s%s", l->graph ? l->graph : "", l->graph ? "/" : "", l->name ? l->name : "");
        cg_strbuf_put(&b, "%-32s %-14s %-10s %8llu %10.3f %10.2f %5.1f%%\n", node, l->op ? l->op : "(copy)",
                      p->tracks[l->tid], (unsigned long long)rows[r].count, rows[r].us / 1e3,
                      rows[r].us / (double)rows[r].count, steps > 0 ? 100.0 * rows[r].us / steps : 0.0);
    }
    if (top > 0 && n > top) cg_strbuf_put(&b, "(%d more)\n", n - top);
    cg_strbuf_put(&b, "kernels and copies: %.3f ms of %.3f ms in %llu profiled run%s (%.1f%%)\n", steps / 1e3,
                  runs / 1e3, (unsigned long long)n_runs, n_runs == 1 ? "" : "s",
                  runs > 0 ? 100.0 * steps / runs : 0.0);
    if (p->dropped) cg_strbuf_put(&b, "%llu events dropped (out of memory)\n", (unsigned long long)p->dropped);
    free(rows);
    *out = cg_strbuf_take(&b);
    return *out ? CG_OK : cg_error(CG_ERR_NO_MEMORY, "out of memory");
}
