/* clgraph bench MODEL_DIR: decoding speed of a seq2seq model on random
 * sources with a fixed number of generated tokens (cg_s2s_options.force_len),
 * the time to the first token in a fresh process with cold and warm program
 * caches, peak memory, allocations and OpenCL objects per decoder step in the
 * steady state, and with --machine this machine's read bandwidth and SGEMM
 * peak with the floors they put on a decoder step. */
#include <cblas.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "clgraph/seq2seq.h"

extern char **environ;

typedef struct bargs {
    const char *dir, *device, *place, *profile;
    int batch, beam, src_len, steps, warmup, runs, json, machine;
    cg_dtype weights_dtype; /* --weights-dtype, 0 as stored */
    const char *weights_dtype_arg;
    int n_plugins;
    const char *plugins[CLI_MAX_PLUGINS];
} bargs;

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int parse_int(const char *cmd, const char *opt, const char *v, int min, int *out) {
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < min || x > 1000000) {
        fprintf(stderr, "clgraph %s: %s takes an integer >= %d, got '%s'\n", cmd, opt, min, v);
        return CLI_USAGE;
    }
    *out = (int)x;
    return CLI_OK;
}

/* Parses the bench options; the hidden first-token child takes the same. */
static int parse_args(int argc, char **argv, bargs *a) {
    const char *cmd = argv[0];
    memset(a, 0, sizeof *a);
    a->batch = 1;
    a->beam = 1;
    a->src_len = 30;
    a->steps = 30;
    a->warmup = 1;
    a->runs = 5;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int rc = CLI_OK, takes = 1;
        if (!strcmp(o, "--json")) a->json = 1, takes = 0;
        else if (!strcmp(o, "--machine")) a->machine = 1, takes = 0;
        else if (o[0] != '-') {
            if (a->dir) {
                fprintf(stderr, "clgraph %s: unexpected argument '%s'\n", cmd, o);
                return CLI_USAGE;
            }
            a->dir = o;
            takes = 0;
        } else if (!v) {
            fprintf(stderr, "clgraph %s: option '%s' needs a value (try 'clgraph %s --help')\n", cmd, o, cmd);
            return CLI_USAGE;
        } else if (!strcmp(o, "--device")) a->device = v;
        else if (!strcmp(o, "--place")) {
            if (cli_check_place("bench", v)) return CLI_USAGE;
            a->place = v;
        } else if (!strcmp(o, "--profile")) a->profile = v;
        else if (!strcmp(o, "--weights-dtype")) {
            rc = cli_weights_dtype(cmd, v, &a->weights_dtype);
            a->weights_dtype_arg = v;
        } else if (!strcmp(o, "--batch")) rc = parse_int(cmd, o, v, 1, &a->batch);
        else if (!strcmp(o, "--beam")) rc = parse_int(cmd, o, v, 1, &a->beam);
        else if (!strcmp(o, "--src-len")) rc = parse_int(cmd, o, v, 1, &a->src_len);
        else if (!strcmp(o, "--steps")) rc = parse_int(cmd, o, v, 1, &a->steps);
        else if (!strcmp(o, "--warmup")) rc = parse_int(cmd, o, v, 0, &a->warmup);
        else if (!strcmp(o, "--runs")) rc = parse_int(cmd, o, v, 1, &a->runs);
        else if (!strcmp(o, "--plugin")) rc = cli_add_plugin(cmd, a->plugins, &a->n_plugins, v);
        else {
            fprintf(stderr, "clgraph %s: unknown option '%s' (try 'clgraph %s --help')\n", cmd, o, cmd);
            return CLI_USAGE;
        }
        if (rc) return rc;
        i += takes;
    }
    if (!a->dir) {
        fprintf(stderr, "clgraph %s: missing MODEL_DIR (try 'clgraph %s --help')\n", cmd, cmd);
        return CLI_USAGE;
    }
    if ((long)a->batch * a->beam > 1000000) {
        fprintf(stderr, "clgraph %s: --batch x --beam is too large\n", cmd);
        return CLI_USAGE;
    }
    return CLI_OK;
}

/* Creates the context (with --plugin libraries) and loads the model. */
static int load(const bargs *a, cg_context **ctx, cg_s2s **m) {
    cli_opts o;
    memset(&o, 0, sizeof o);
    o.n_plugins = a->n_plugins;
    memcpy(o.plugins, a->plugins, sizeof a->plugins);
    int rc = cli_context(&o, ctx);
    if (rc) return rc;
    cg_plan_options popt = {.struct_size = sizeof(cg_plan_options), .device = a->device, .place = a->place};
    cg_s2s_load_options lopt = {.struct_size = sizeof lopt, .weights_dtype = a->weights_dtype};
    if (cg_s2s_load_ex(*ctx, a->dir, &popt, &lopt, m)) {
        rc = cli_fail();
        cg_context_free(*ctx);
        *ctx = NULL;
    }
    return rc;
}

/* `n` random sources of `len` ids in [4, V_src) (all of [0, V_src) for a
 * tiny vocabulary), the same for every run and process. */
static int32_t **make_sources(const cg_s2s *m, int n, int len) {
    int v = 0;
    while (cg_s2s_token(m, 0, v)) v++;
    int lo = v > 4 ? 4 : 0;
    int32_t **src = calloc((size_t)n, sizeof *src);
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (int i = 0; src && i < n; i++) {
        src[i] = malloc(sizeof(int32_t) * (size_t)len);
        if (!src[i]) {
            for (int j = 0; j < i; j++) free(src[j]);
            free(src);
            return NULL;
        }
        for (int j = 0; j < len; j++) {
            x ^= x << 13; /* xorshift64 */
            x ^= x >> 7;
            x ^= x << 17;
            src[i][j] = (int32_t)(lo + (int)(x % (uint64_t)(v - lo)));
        }
    }
    return src;
}

static void free_sources(int32_t **src, int n) {
    for (int i = 0; src && i < n; i++) free(src[i]);
    free(src);
}

/* One decode of every source, `steps` tokens each; checks the lengths. */
static int decode(cg_s2s *m, const bargs *a, int32_t **src, const int *len, int n, int steps, double *ms) {
    cg_s2s_result *res = calloc((size_t)n, sizeof *res);
    if (!res) {
        fprintf(stderr, "clgraph: out of memory\n");
        return CLI_FAIL;
    }
    cg_s2s_options so = {.beam = a->beam, .batch = n, .force_len = steps};
    double t0 = now_ms();
    int rc = CLI_OK;
    if (cg_s2s_translate(m, &so, n, (const int32_t *const *)src, len, res, NULL, NULL)) rc = cli_fail();
    *ms = now_ms() - t0;
    for (int i = 0; !rc && i < n; i++)
        if (res[i].n_hyps < 1 || res[i].hyps[0].n_tokens != steps) {
            fprintf(stderr, "clgraph: bench: source %d decoded into %d tokens, not %d\n", i,
                    res[i].n_hyps ? res[i].hyps[0].n_tokens : 0, steps);
            rc = CLI_FAIL;
        }
    for (int i = 0; i < n; i++) cg_s2s_result_clear(&res[i]);
    free(res);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Time to the first token, in a child process                          */

/* The hidden subcommand: load, encode and decode one token of one source,
 * then print CLOCK_MONOTONIC in ns (the parent took it just before it
 * started this process) and the phases. */
int cli_bench_first_token(int argc, char **argv) {
    bargs a;
    int rc = parse_args(argc, argv, &a);
    if (rc) return rc;
    double t0 = now_ms();
    cg_context *ctx = NULL;
    cg_s2s *m = NULL;
    rc = load(&a, &ctx, &m);
    if (rc) return rc;
    double t1 = now_ms();
    int32_t **src = make_sources(m, 1, a.src_len);
    double dec_ms = 0;
    rc = src ? decode(m, &a, src, &a.src_len, 1, 1, &dec_ms) : CLI_FAIL;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    if (!rc)
        printf("first_token_ns %lld load_ms %.3f decode_ms %.3f main_ms %.3f\n",
               (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec, t1 - t0, dec_ms, now_ms() - t0);
    free_sources(src, 1);
    cg_s2s_free(m);
    cg_context_free(ctx);
    return rc;
}

static void remove_tree(const char *path) {
    struct stat sb;
    if (lstat(path, &sb) != 0) return;
    if (S_ISDIR(sb.st_mode)) {
        DIR *d = opendir(path);
        struct dirent *e;
        while (d && (e = readdir(d)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            size_t n = strlen(path) + strlen(e->d_name) + 2;
            char *p = malloc(n);
            if (!p) break;
            snprintf(p, n, "%s/%s", path, e->d_name);
            remove_tree(p);
            free(p);
        }
        if (d) closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

/* Program caches a cold start must not find: clgraph's own and those of
 * the OpenCL implementations (PoCL's kernel library, Mesa's shader cache,
 * which rusticl and llvmpipe share). */
static const char *const cache_vars[] = {"CLGRAPH_CACHE_DIR", "POCL_CACHE_DIR", "MESA_SHADER_CACHE_DIR"};
enum { N_CACHE_VARS = sizeof cache_vars / sizeof cache_vars[0] };

static int is_cache_var(const char *entry) {
    for (int i = 0; i < N_CACHE_VARS; i++) {
        size_t l = strlen(cache_vars[i]);
        if (!strncmp(entry, cache_vars[i], l) && entry[l] == '=') return 1;
    }
    return 0;
}

/* Runs the child with the bench's model options; `cache` non-NULL points
 * every variable of cache_vars into a fresh directory below it. *ms: start
 * to first token. */
static int first_token(const bargs *a, const char *cache, double *ms) {
    char *argv[80];
    int n = 0;
    char slen[32];
    snprintf(slen, sizeof slen, "%d", a->src_len);
    argv[n++] = "clgraph";
    argv[n++] = "__bench-first-token";
    argv[n++] = (char *)a->dir;
    argv[n++] = "--src-len";
    argv[n++] = slen;
    if (a->device) argv[n++] = "--device", argv[n++] = (char *)a->device;
    if (a->place) argv[n++] = "--place", argv[n++] = (char *)a->place;
    if (a->weights_dtype_arg) argv[n++] = "--weights-dtype", argv[n++] = (char *)a->weights_dtype_arg;
    for (int i = 0; i < a->n_plugins; i++) argv[n++] = "--plugin", argv[n++] = (char *)a->plugins[i];
    argv[n] = NULL;
    /* The environment, with the cache directories replaced. */
    size_t ne = 0;
    while (environ[ne]) ne++;
    char **env = calloc(ne + N_CACHE_VARS + 1, sizeof *env);
    char *dirs[N_CACHE_VARS] = {NULL};
    int rc = CLI_FAIL;
    if (!env) return CLI_FAIL;
    size_t k = 0;
    for (size_t i = 0; i < ne; i++)
        if (!cache || !is_cache_var(environ[i])) env[k++] = environ[i];
    for (int i = 0; cache && i < N_CACHE_VARS; i++) {
        size_t vl = strlen(cache_vars[i]), l = vl + strlen(cache) + 40;
        if (!(dirs[i] = malloc(l))) goto out;
        snprintf(dirs[i], l, "%s=%s/%d", cache_vars[i], cache, i);
        /* Mesa turns its cache off, saying so on stderr, without one. */
        mkdir(dirs[i] + vl + 1, 0700);
        env[k++] = dirs[i];
    }
    env[k] = NULL;
    int fd[2];
    if (pipe(fd) != 0) {
        fprintf(stderr, "clgraph: bench: pipe: %s\n", strerror(errno));
        goto out;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
    posix_spawn_file_actions_addclose(&fa, fd[0]);
    posix_spawn_file_actions_addclose(&fa, fd[1]);
    fflush(stdout);
    fflush(stderr);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    long long start = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
    /* The resolved path: a tool like valgrind answers readlink for its
     * client but would run itself for the link. */
    char exe[4096];
    ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (el > 0) exe[el] = 0;
    else snprintf(exe, sizeof exe, "/proc/self/exe");
    pid_t pid;
    int err = posix_spawn(&pid, exe, &fa, NULL, argv, env);
    posix_spawn_file_actions_destroy(&fa);
    close(fd[1]);
    if (err) {
        close(fd[0]);
        fprintf(stderr, "clgraph: bench: cannot start %s: %s\n", exe, strerror(err));
        goto out;
    }
    char buf[512];
    size_t got = 0;
    ssize_t r;
    while (got < sizeof buf - 1 && ((r = read(fd[0], buf + got, sizeof buf - 1 - got)) > 0 || (r < 0 && errno == EINTR)))
        if (r > 0) got += (size_t)r;
    buf[got] = 0;
    close(fd[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    long long done;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "clgraph: bench: the first-token process (%s caches) failed\n", cache ? "cold" : "warm");
    } else if (sscanf(buf, "first_token_ns %lld", &done) != 1) {
        fprintf(stderr, "clgraph: bench: the first-token process printed no time\n");
    } else {
        *ms = (double)(done - start) / 1e6;
        rc = CLI_OK;
    }
out:
    for (int i = 0; i < N_CACHE_VARS; i++) free(dirs[i]);
    free(env);
    return rc;
}

/* Cold: fresh, empty cache directories; warm: the normal ones, after one
 * child has filled them for this shape (the second child is reported). */
static int first_tokens(const bargs *a, double *cold, double *warm) {
    const char *tmp = getenv("TMPDIR");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/clgraph-bench-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        fprintf(stderr, "clgraph: bench: cannot make a temporary directory: %s\n", strerror(errno));
        return CLI_FAIL;
    }
    int rc = first_token(a, dir, cold);
    remove_tree(dir);
    if (!rc) rc = first_token(a, NULL, warm);
    if (!rc) rc = first_token(a, NULL, warm);
    return rc;
}

/* ------------------------------------------------------------------ */
/* This machine's limits                                                */

typedef float v4sf __attribute__((vector_size(16)));

typedef struct stream_job {
    const float *a;
    size_t n; /* floats, a multiple of 16 */
    pthread_barrier_t *bar;
    int reps;
    double *best_ms; /* thread 0 only */
    float sum;
} stream_job;

static void *stream_thread(void *arg) {
    stream_job *j = arg;
    for (int r = 0; r < j->reps; r++) {
        pthread_barrier_wait(j->bar);
        double t0 = now_ms();
        v4sf s0 = {0, 0, 0, 0}, s1 = s0, s2 = s0, s3 = s0;
        for (size_t i = 0; i < j->n; i += 16) {
            v4sf x0, x1, x2, x3;
            memcpy(&x0, j->a + i, 16);
            memcpy(&x1, j->a + i + 4, 16);
            memcpy(&x2, j->a + i + 8, 16);
            memcpy(&x3, j->a + i + 12, 16);
            s0 += x0;
            s1 += x1;
            s2 += x2;
            s3 += x3;
        }
        v4sf s = s0 + s1 + s2 + s3;
        j->sum += s[0] + s[1] + s[2] + s[3];
        pthread_barrier_wait(j->bar);
        if (j->best_ms) {
            double t = now_ms() - t0;
            if (*j->best_ms == 0 || t < *j->best_ms) *j->best_ms = t;
        }
    }
    return NULL;
}

static void *touch_thread(void *arg) {
    stream_job *j = arg;
    memset((void *)j->a, 0, j->n * sizeof(float));
    for (size_t i = 0; i < j->n; i += 1024) ((float *)j->a)[i] = (float)(i & 7);
    return NULL;
}

/* GB/s reading a 512 MiB float array, summed by `threads` threads, best of 5. */
static double read_bandwidth(int threads) {
    size_t n = (size_t)512 << 20 >> 2;
    float *a = aligned_alloc(64, n * sizeof(float));
    stream_job *jobs = calloc((size_t)threads, sizeof *jobs);
    pthread_t *tid = calloc((size_t)threads, sizeof *tid);
    pthread_barrier_t bar;
    double best = 0, gbps = 0;
    if (!a || !jobs || !tid || pthread_barrier_init(&bar, NULL, (unsigned)threads)) goto out;
    size_t per = n / (size_t)threads / 16 * 16;
    for (int t = 0; t < threads; t++) {
        jobs[t].a = a + (size_t)t * per;
        jobs[t].n = t == threads - 1 ? (n - (size_t)t * per) / 16 * 16 : per;
        jobs[t].bar = &bar;
        jobs[t].reps = 5;
        jobs[t].best_ms = t == 0 ? &best : NULL;
    }
    /* Pages first touched by the thread that reads them. */
    int started = 0;
    for (; started < threads; started++)
        if (pthread_create(&tid[started], NULL, touch_thread, &jobs[started])) break;
    for (int t = 0; t < started; t++) pthread_join(tid[t], NULL);
    if (started == threads) {
        for (started = 0; started < threads; started++)
            if (pthread_create(&tid[started], NULL, stream_thread, &jobs[started])) break;
        if (started < threads) {
            /* cannot run without every thread at the barrier: give up */
            fprintf(stderr, "clgraph: bench: cannot start %d threads\n", threads);
            exit(CLI_FAIL);
        }
        float sum = 0;
        for (int t = 0; t < threads; t++) {
            pthread_join(tid[t], NULL);
            sum += jobs[t].sum;
        }
        size_t read = 0;
        for (int t = 0; t < threads; t++) read += jobs[t].n * sizeof(float);
        if (best > 0 && sum >= 0) gbps = (double)read / (best * 1e6);
    }
    pthread_barrier_destroy(&bar);
out:
    free(a);
    free(jobs);
    free(tid);
    return gbps;
}

/* GFLOP/s of cblas_sgemm on 2048 x 2048 matrices, best of 3. */
static double sgemm_peak(void) {
    const int n = 2048;
    size_t nn = (size_t)n * (size_t)n;
    float *a = malloc(nn * sizeof(float)), *b = malloc(nn * sizeof(float)), *c = malloc(nn * sizeof(float));
    double best = 0;
    if (a && b && c) {
        for (size_t i = 0; i < nn; i++) {
            a[i] = (float)(i % 7) * 0.125f;
            b[i] = (float)(i % 5) * 0.25f;
        }
        for (int r = 0; r < 3; r++) {
            double t0 = now_ms();
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
            double t = now_ms() - t0;
            if (best == 0 || t < best) best = t;
        }
    }
    free(a);
    free(b);
    free(c);
    return best > 0 ? 2.0 * n * n * (double)n / (best * 1e6) : 0;
}

/* The CPU backend's thread pool and OpenBLAS both default to the online
 * CPUs; CLGRAPH_THREADS sets the pool's count. */
static int blas_threads(void) {
    const char *env = getenv("CLGRAPH_THREADS");
    if (env && atoi(env) > 0) return atoi(env);
#ifdef CG_HAVE_OPENBLAS_THREADS
    int t = openblas_get_num_threads();
    if (t > 0) return t;
#endif
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* ------------------------------------------------------------------ */
/* The benchmark                                                        */

typedef struct stat3 {
    double median, min, max;
} stat3;

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static stat3 summarize(const double *v, int n) {
    double *s = malloc(sizeof(double) * (size_t)n);
    stat3 r = {0, 0, 0};
    if (!s || n < 1) {
        free(s);
        return r;
    }
    memcpy(s, v, sizeof(double) * (size_t)n);
    qsort(s, (size_t)n, sizeof(double), cmp_double);
    r.min = s[0];
    r.max = s[n - 1];
    r.median = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    free(s);
    return r;
}

/* VmHWM from /proc/self/status in MB (0 if unknown). */
static double vm_hwm_mb(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    double mb = 0;
    while (f && fgets(line, sizeof line, f)) {
        long long kb;
        if (sscanf(line, "VmHWM: %lld kB", &kb) == 1) mb = (double)kb / 1024.0;
    }
    if (f) fclose(f);
    return mb;
}

static cJSON *json_stat3(stat3 s) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "median", s.median);
    cJSON_AddNumberToObject(o, "min", s.min);
    cJSON_AddNumberToObject(o, "max", s.max);
    return o;
}

/* What one benchmark measured. */
typedef struct bench_result {
    double load_ms;
    stat3 step_ms, tps;            /* ms per step, target tokens per s */
    double rss_mb, hwm_mb;         /* peak resident: ru_maxrss, VmHWM */
    double allocs, clobj, copied_kb; /* per decoder step */
    double enc_allocs;             /* per encoder run */
    size_t wbytes;                 /* decoder weights */
    int threads;                   /* the CPU backend's */
    double cold, warm;             /* first token, ms */
    long nproc;
    double gbps, gflops, floor1, floorc; /* --machine */
} bench_result;

/* The warm-up and timed decodes of a batch of random sources, with what
 * the plans counted over the timed ones and the peak memory. */
/* --profile: one more run of the workload after the timed ones (which it
 * would slow down: a profiled run waits for every step), traced. */
static int profiled_run(cg_s2s *m, const bargs *a, int32_t **src, int *len) {
    cg_profiler *prof = NULL;
    double ms;
    int rc = cg_profiler_create(&prof) ? cli_fail() : cli_s2s_profile(m, prof);
    if (!rc) rc = decode(m, a, src, len, a->batch, a->steps, &ms);
    int detach = cli_s2s_profile(m, NULL);
    if (!rc) rc = detach;
    if (!rc && cg_profiler_write_trace(prof, a->profile)) rc = cli_fail();
    cg_profiler_free(prof);
    return rc;
}

static int timed_runs(cg_s2s *m, const bargs *a, bench_result *r) {
    int B = a->batch, T = a->steps, N = a->runs;
    int32_t **src = make_sources(m, B, a->src_len);
    int *len = malloc(sizeof(int) * (size_t)B);
    double *step_ms = calloc((size_t)N, sizeof(double)), *tps = calloc((size_t)N, sizeof(double));
    cg_plan_stats e0, e1, d0, d1;
    int rc = CLI_FAIL;
    if (!src || !len || !step_ms || !tps) {
        fprintf(stderr, "clgraph: out of memory\n");
        goto done;
    }
    for (int i = 0; i < B; i++) len[i] = a->src_len;
    double ms;
    for (int w = 0; w < a->warmup; w++)
        if ((rc = decode(m, a, src, len, B, T, &ms)) != CLI_OK) goto done;
    if (cg_s2s_stats(m, &e0, &d0)) {
        rc = cli_fail();
        goto done;
    }
    for (int i = 0; i < N; i++) {
        if ((rc = decode(m, a, src, len, B, T, &ms)) != CLI_OK) goto done;
        step_ms[i] = ms / T;
        tps[i] = (double)B * T / (ms / 1e3);
    }
    if (cg_s2s_stats(m, &e1, &d1)) {
        rc = cli_fail();
        goto done;
    }
    if (a->profile && (rc = profiled_run(m, a, src, len)) != CLI_OK) goto done;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    r->rss_mb = (double)ru.ru_maxrss / 1024.0;
    r->hwm_mb = vm_hwm_mb();
    uint64_t dec_runs = d1.runs - d0.runs, enc_runs = e1.runs - e0.runs;
    double steps_done = dec_runs ? (double)dec_runs : 1;
    r->allocs = (double)(d1.host_allocs - d0.host_allocs) / steps_done;
    r->clobj = (double)(d1.device_objects - d0.device_objects) / steps_done;
    /* Host <-> device traffic of a step: what a PCIe-attached GPU waits on. */
    r->copied_kb = (double)(d1.bytes_copied - d0.bytes_copied) / steps_done / 1024.0;
    r->enc_allocs = enc_runs ? (double)(e1.host_allocs - e0.host_allocs) / (double)enc_runs : 0;
    r->wbytes = cg_s2s_decoder_weight_bytes(m);
    r->step_ms = summarize(step_ms, N);
    r->tps = summarize(tps, N);
    rc = CLI_OK;
done:
    free_sources(src, B);
    free(len);
    free(step_ms);
    free(tps);
    return rc;
}

/* --machine: read bandwidth and SGEMM peak, and the floors they put on a
 * decoder step of batch x beam rows. */
static void measure_machine(const bargs *a, bench_result *r) {
    int rows = a->batch * a->beam;
    r->gbps = read_bandwidth((int)r->nproc);
    r->gflops = sgemm_peak();
    r->floor1 = r->gbps > 0 ? (double)r->wbytes / (r->gbps * 1e9) * 1e3 : 0;
    r->floorc = r->gflops > 0 ? 2.0 * rows * ((double)r->wbytes / sizeof(float)) / (r->gflops * 1e9) * 1e3 : 0;
}

static int print_json(const bargs *a, const bench_result *r) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "model", a->dir);
    cJSON_AddStringToObject(o, "device", a->device ? a->device : "cpu");
    if (a->place) cJSON_AddStringToObject(o, "place", a->place);
    else cJSON_AddNullToObject(o, "place");
    cJSON_AddNumberToObject(o, "batch", a->batch);
    cJSON_AddNumberToObject(o, "beam", a->beam);
    cJSON_AddNumberToObject(o, "src_len", a->src_len);
    cJSON_AddNumberToObject(o, "steps", a->steps);
    cJSON_AddNumberToObject(o, "runs", a->runs);
    cJSON_AddItemToObject(o, "ms_per_step", json_stat3(r->step_ms));
    cJSON_AddItemToObject(o, "tokens_per_s", json_stat3(r->tps));
    cJSON *ft = cJSON_AddObjectToObject(o, "first_token_ms");
    cJSON_AddNumberToObject(ft, "cold", r->cold);
    cJSON_AddNumberToObject(ft, "warm", r->warm);
    cJSON_AddNumberToObject(o, "peak_rss_mb", r->rss_mb);
    cJSON_AddNumberToObject(o, "peak_vmhwm_mb", r->hwm_mb);
    cJSON_AddNumberToObject(o, "allocs_per_step", r->allocs);
    cJSON_AddNumberToObject(o, "device_objects_per_step", r->clobj);
    cJSON_AddNumberToObject(o, "copied_kib_per_step", r->copied_kb);
    cJSON_AddNumberToObject(o, "encoder_allocs_per_run", r->enc_allocs);
    cJSON_AddNumberToObject(o, "decoder_weight_mb", (double)r->wbytes / (1024.0 * 1024.0));
    cJSON_AddNumberToObject(o, "load_ms", r->load_ms);
    cJSON_AddNumberToObject(o, "blas_threads", r->threads);
    if (a->machine) {
        cJSON *mc = cJSON_AddObjectToObject(o, "machine");
        cJSON_AddNumberToObject(mc, "read_gbps", r->gbps);
        cJSON_AddNumberToObject(mc, "sgemm_gflops", r->gflops);
        cJSON_AddNumberToObject(mc, "threads", (double)r->nproc);
        cJSON_AddNumberToObject(mc, "blas_threads", r->threads);
        cJSON *fl = cJSON_AddObjectToObject(o, "floors");
        cJSON_AddNumberToObject(fl, "batch1_ms_per_step", r->floor1);
        cJSON_AddNumberToObject(fl, "compute_ms_per_step", r->floorc);
    }
    char *text = cJSON_Print(o);
    cJSON_Delete(o);
    if (!text) {
        fprintf(stderr, "clgraph: out of memory\n");
        return CLI_FAIL;
    }
    puts(text);
    free(text);
    return CLI_OK;
}

static void print_text(const bargs *a, const bench_result *r) {
    printf("model     %s\n", a->dir);
    printf("device    %s%s%s\n", a->device ? a->device : "cpu", a->place ? "  place " : "", a->place ? a->place : "");
    printf("workload  batch %d, beam %d, source %d tokens, %d steps; %d warm-up + %d timed runs\n", a->batch, a->beam,
           a->src_len, a->steps, a->warmup, a->runs);
    printf("threads   %d (CPU backend)\n", r->threads);
    printf("load      %.1f ms\n\n", r->load_ms);
    printf("%-22s %12s %12s %12s\n", "", "median", "min", "max");
    printf("%-22s %12.3f %12.3f %12.3f\n", "ms per step", r->step_ms.median, r->step_ms.min, r->step_ms.max);
    printf("%-22s %12.1f %12.1f %12.1f\n", "target tokens per s", r->tps.median, r->tps.min, r->tps.max);
    printf("\n%-22s %12.1f ms (fresh cache directories)\n", "first token, cold", r->cold);
    printf("%-22s %12.1f ms (caches filled)\n", "first token, warm", r->warm);
    printf("%-22s %12.1f MB (ru_maxrss), VmHWM %.1f MB\n", "peak resident", r->rss_mb, r->hwm_mb);
    printf("%-22s %12.2f allocations, %.2f OpenCL objects, %.1f KiB copied (decoder plan)\n", "per step", r->allocs,
           r->clobj, r->copied_kb);
    printf("%-22s %12.2f allocations (encoder plan)\n", "per encoder run", r->enc_allocs);
    printf("%-22s %12.1f MB\n", "decoder weights", (double)r->wbytes / (1024.0 * 1024.0));
    if (a->machine) {
        printf("\nmachine: read %.1f GB/s (%ld threads, 512 MiB, best of 5), SGEMM %.1f GFLOP/s "
               "(2048^3, %d threads, best of 3)\n",
               r->gbps, r->nproc, r->gflops, r->threads);
        printf("%-22s %12.3f ms per step (decoder weights / read bandwidth)\n", "batch-1 floor", r->floor1);
        printf("%-22s %12.3f ms per step (2 x %d rows x weights / SGEMM peak)\n", "compute floor", r->floorc,
               a->batch * a->beam);
    }
}

int cli_bench(int argc, char **argv) {
    bargs a;
    int rc = parse_args(argc, argv, &a);
    if (rc) return rc;
    cg_context *ctx = NULL;
    cg_s2s *m = NULL;
    bench_result r;
    memset(&r, 0, sizeof r);
    double t0 = now_ms();
    rc = load(&a, &ctx, &m);
    if (rc) return rc;
    r.load_ms = now_ms() - t0;
    rc = timed_runs(m, &a, &r);
    r.threads = blas_threads();
    /* The model is freed before the child processes run. */
    cg_s2s_free(m);
    cg_context_free(ctx);
    if (rc) return rc;
    if ((rc = first_tokens(&a, &r.cold, &r.warm)) != CLI_OK) return rc;
    r.nproc = sysconf(_SC_NPROCESSORS_ONLN);
    if (r.nproc < 1) r.nproc = 1;
    if (a.machine) measure_machine(&a, &r);
    if (a.json) rc = print_json(&a, &r);
    else print_text(&a, &r);
    if (!rc && fflush(stdout) != 0) {
        fprintf(stderr, "clgraph: cannot write the output: %s\n", strerror(errno));
        rc = CLI_FAIL;
    }
    return rc;
}
