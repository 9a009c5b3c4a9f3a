/* clgraph bench MODEL_DIR: decoding speed of a seq2seq model on random
 * sources with a fixed number of generated tokens (cg_s2s_options min_len =
 * max_len: EOS is masked until the last step, so every hypothesis lives on),
 * the time to the first token in a fresh process with cold and warm program
 * caches, peak memory, allocations and OpenCL objects per decoder step in the
 * steady state, and with --machine this machine's read bandwidth and SGEMM
 * peak (cg_machine_measure) with the floors they put on a decoder step. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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
    cli_plugins plugins;
} bargs;

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* --weights-dtype: the type, and the name as given for the child. */
static int opt_weights_dtype(const char *cmd, const char *v, void *dst) {
    bargs *a = dst;
    a->weights_dtype_arg = v;
    return cli_weights_dtype(cmd, v, &a->weights_dtype);
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
    const char *ge1 = "an integer >= 1";
    const cli_opt opts[] = {
        {"json", 0, CLI_FLAG, &a->json, .help = "the results as JSON"},
        {"machine", 0, CLI_FLAG, &a->machine, .help = "read bandwidth, SGEMM peak and the floors"},
        {"device", 0, CLI_STR, &a->device, .arg = "DEVICE", .help = "cpu or opencl[:N]"},
        {"place", 0, CLI_CALL, &a->place, .fn = cli_opt_place, .arg = "RULES", .help = "PATTERN=DEVICE,..."},
        {"profile", 0, CLI_STR, &a->profile, .arg = "FILE.json", .help = "a trace of one run"},
        {"weights-dtype", 0, CLI_CALL, a, .fn = opt_weights_dtype, .arg = "TYPE", .help = "f32, bf16, f16 or int8"},
        {"batch", 0, CLI_INT, &a->batch, 1, 1000000, ge1, .arg = "N", .help = "sources per decode"},
        {"beam", 0, CLI_INT, &a->beam, 1, 1000000, ge1, .arg = "N", .help = "beam width"},
        {"src-len", 0, CLI_INT, &a->src_len, 1, 1000000, ge1, .arg = "N", .help = "tokens per source"},
        {"steps", 0, CLI_INT, &a->steps, 1, 1000000, ge1, .arg = "N", .help = "tokens generated"},
        {"warmup", 0, CLI_INT, &a->warmup, 0, 1000000, "an integer >= 0", .arg = "N", .help = "untimed runs"},
        {"runs", 0, CLI_INT, &a->runs, 1, 1000000, ge1, .arg = "N", .help = "timed runs"},
        {"plugin", 0, CLI_CALL, &a->plugins, .fn = cli_opt_plugin, .arg = "LIB", .help = "load an op library"},
        {0},
    };
    cli_spec spec = {.cmd = cmd,
                     .opts = opts,
                     .pos = &a->dir,
                     .min_pos = 1,
                     .max_pos = 1,
                     .pos_name = "MODEL_DIR",
                     .unknown_hint = CLI_HINT_CMD,
                     .value_hint = CLI_HINT_CMD,
                     .missing_hint = CLI_HINT_CMD};
    int rc = cli_args_parse(&spec, argc, argv);
    if (rc) return rc;
    if ((long)a->batch * a->beam > 1000000) return cli_usage(cmd, CLI_HINT_NONE, "--batch x --beam is too large");
    return CLI_OK;
}

/* Creates the context (with --plugin libraries) and loads the model. */
static int load(const bargs *a, cg_context **ctx, cg_s2s **m) {
    cli_opts o;
    memset(&o, 0, sizeof o);
    o.n_plugins = a->plugins.n;
    memcpy(o.plugins, a->plugins.list, sizeof a->plugins.list);
    int rc = cli_context(&o, ctx);
    if (rc) return rc;
    cg_plan_options popt = {.struct_size = sizeof(cg_plan_options), .device = a->device, .place = a->place};
    cg_s2s_load_options lopt = {.struct_size = sizeof lopt, .weights_dtype = a->weights_dtype};
    if (cg_s2s_load(*ctx, a->dir, &popt, &lopt, m)) {
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

/* One decode of every source, `steps` tokens each (EOS included: it may
 * come at the last step only); checks the lengths. */
static int decode(cg_s2s *m, const bargs *a, int32_t **src, const int *len, int n, int steps, double *ms) {
    cg_s2s_result *res = calloc((size_t)n, sizeof *res);
    if (!res) {
        fprintf(stderr, "clgraph: out of memory\n");
        return CLI_FAIL;
    }
    cg_s2s_options so = {.struct_size = sizeof so, .beam = a->beam, .batch = n, .max_len = steps, .min_len = steps};
    double t0 = now_ms();
    int rc = CLI_OK;
    if (cg_s2s_translate(m, &so, n, (const int32_t *const *)src, len, res, NULL, NULL)) rc = cli_fail();
    *ms = now_ms() - t0;
    for (int i = 0; !rc && i < n; i++)
        if (res[i].n_hyps < 1 || res[i].hyps[0].n_steps != steps) {
            fprintf(stderr, "clgraph: bench: source %d decoded in %d steps, not %d\n", i,
                    res[i].n_hyps ? res[i].hyps[0].n_steps : 0, steps);
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
    if (rc) return rc == CLI_HELP ? CLI_OK : rc;
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
    for (int i = 0; i < a->plugins.n; i++) argv[n++] = "--plugin", argv[n++] = (char *)a->plugins.list[i];
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
    while (got < sizeof buf - 1 &&
           ((r = read(fd[0], buf + got, sizeof buf - 1 - got)) > 0 || (r < 0 && errno == EINTR)))
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
    stat3 step_ms, tps;              /* ms per step, target tokens per s */
    double rss_mb, hwm_mb;           /* peak resident: ru_maxrss, VmHWM */
    double allocs, clobj, copied_kb; /* per decoder step */
    double enc_allocs;               /* per encoder run */
    size_t wbytes;                   /* decoder weights */
    int threads;                     /* the CPU backend's */
    double cold, warm;               /* first token, ms */
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

/* --machine: read bandwidth and SGEMM peak (cg_machine_measure), and the
 * floors they put on a decoder step of batch x beam rows. */
static int measure_machine(const bargs *a, bench_result *r) {
    int rows = a->batch * a->beam;
    cg_machine_info mi = {.struct_size = sizeof mi, .measure = CG_MACHINE_READ | CG_MACHINE_SGEMM};
    if (cg_machine_measure(&mi)) return cli_fail();
    r->nproc = mi.read_threads;
    r->gbps = mi.read_gbps;
    r->gflops = mi.sgemm_gflops;
    r->floor1 = r->gbps > 0 ? (double)r->wbytes / (r->gbps * 1e9) * 1e3 : 0;
    r->floorc = r->gflops > 0 ? 2.0 * rows * ((double)r->wbytes / sizeof(float)) / (r->gflops * 1e9) * 1e3 : 0;
    return CLI_OK;
}

/* The BLAS thread count of cg_machine_info, without timing anything. */
static int blas_threads(void) {
    cg_machine_info mi = {.struct_size = sizeof mi};
    return cg_machine_measure(&mi) ? 0 : mi.blas_threads;
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
    if (rc) return rc == CLI_HELP ? CLI_OK : rc;
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
    if (a.machine && (rc = measure_machine(&a, &r)) != CLI_OK) return rc;
    if (a.json) rc = print_json(&a, &r);
    else print_text(&a, &r);
    if (!rc && fflush(stdout) != 0) {
        fprintf(stderr, "clgraph: cannot write the output: %s\n", strerror(errno));
        rc = CLI_FAIL;
    }
    return rc;
}
