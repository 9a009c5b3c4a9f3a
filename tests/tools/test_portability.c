/* One OpenCL implementation end to end (CG_TEST_IMPL; tests/meson.build
 * runs this once per implementation and kernel path set, with the
 * environment that selects them: OCL_ICD_VENDORS, POCL_DEVICES,
 * RUSTICL_ENABLE, CLGRAPH_CL_PATHS):
 * - `clgraph devices` lists the implementation's devices with the forced
 *   path set;
 * - `clgraph conform` passes for every op (the quick set under Oclgrind,
 *   whose reports fail the test);
 * - `clgraph translate models/dates --device opencl:N` prints
 *   models/dates/samples.expected (the PyTorch reference's greedy output)
 *   in a cold first run (fresh program caches) that prints nothing else:
 *   no compiler output, no Oclgrind report;
 * - with two devices, the encoder on one and the decoder on the other
 *   (`--place`) gives the same lines; with PoCL and rusticl ("split"),
 *   across two platforms, greedy and beam 5 both equal the CPU's output;
 * - imported nn.Transformer models (both exporters) match ONNX Runtime in
 *   a cold first run.
 * Conform, the samples and the imported models run on the implementation's
 * devices from impl.first on: not again on a device another test covers. */
#include <errno.h>
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_util.h"

typedef struct impl {
    const char *name;     /* CG_TEST_IMPL */
    const char *platform; /* in `clgraph devices`' platform line; NULL: any */
    int devices;          /* OpenCL devices it gives */
    int quick;            /* conform --quick (Oclgrind simulates every item) */
    int conform;          /* run conform at all */
    /* The first device conform, the dates samples and the imported
     * Transformers run on: pocl2's opencl:0 is pocl's device again (its
     * second device, a device other than the first, is what it adds), and
     * split's two are pocl's and rusticl's (its own test is the split). */
    int first;
} impl;

static const impl k_impls[] = {
    {"pocl", "Portable Computing Language", 1, 0, 1, 0},
    {"pocl2", "Portable Computing Language", 2, 0, 1, 1},
    {"rusticl", "rusticl", 1, 0, 1, 0},
    {"oclgrind", "Oclgrind", 1, 1, 1, 0},
    /* NVIDIA's driver, on a lent GPU machine (tools/gpu-check.sh points
     * OCL_ICD_VENDORS at it; no meson test names it). */
    {"nvidia", "NVIDIA CUDA", 1, 0, 1, 0},
    /* PoCL and rusticl side by side: each is conformed on its own above. */
    {"split", NULL, 2, 0, 0, 2},
};

/* Messages quote program output cut to 1500 characters: Check refuses
 * longer ones (and exits). */
static const impl *cur;
static const char *paths; /* CLGRAPH_CL_PATHS: cpu or gpu */

static void setup(void) { tu_setup_dir("portability"); }

static const char *model_dir(void) {
    static char p[600];
    snprintf(p, sizeof p, "%s/models/dates", tu_src_dir());
    return p;
}

static const char *model_file(const char *name) {
    static char p[700];
    snprintf(p, sizeof p, "%s/%s", model_dir(), name);
    return p;
}

/* The platform line under "opencl:N " in `clgraph devices` output. */
static const char *platform_of(const char *devices, int n, char *buf, size_t size) {
    char head[32];
    snprintf(head, sizeof head, "opencl:%d ", n);
    const char *l = strstr(devices, head);
    ck_assert_msg(l != NULL, "no %s in:\n%.1500s", head, devices);
    const char *p = strstr(l, "platform: ");
    ck_assert_ptr_nonnull(p);
    size_t k = strcspn(p, "\n");
    snprintf(buf, size, "%.*s", (int)k, p);
    return buf;
}

/* Runs `clgraph devices`; checks the count, platforms and path set. */
static char *devices_text(void) {
    const char *a[] = {"devices", NULL};
    ck_assert_msg(tu_run_cli(a, NULL, NULL) == 0, "%s", tu_err);
    return strdup(tu_out);
}

START_TEST(devices_listed) {
    char *text = devices_text();
    int n = 0;
    for (const char *q = text; (q = strstr(q, "\nopencl:")); q++) n++;
    ck_assert_msg(n == cur->devices, "%s: %d OpenCL devices, expected %d:\n%.1500s", cur->name, n, cur->devices, text);
    char line[400], want[64];
    for (int i = 0; i < n && cur->platform; i++)
        ck_assert_msg(strstr(platform_of(text, i, line, sizeof line), cur->platform), "opencl:%d: %s", i, line);
    snprintf(want, sizeof want, "kernel paths: %s (CLGRAPH_CL_PATHS)", paths);
    int shown = 0;
    for (const char *q = text; (q = strstr(q, want)); q++) shown++;
    ck_assert_msg(shown == n, "'%s' shown %d times for %d devices:\n%.1500s", want, shown, n, text);
    free(text);
}
END_TEST

START_TEST(conform_passes) {
    if (!cur->conform) return;
    char dev[32];
    snprintf(dev, sizeof dev, "opencl:%d", cur->first);
    const char *a[] = {"conform", "--device", dev, cur->quick ? "--quick" : NULL, NULL};
    int rc = tu_run_cli(a, NULL, NULL);
    if (rc != 0 || strstr(tu_out, " FAIL")) printf("conform's output:\n%s\nstderr:\n%s\n", tu_out, tu_err);
    ck_assert_msg(rc == 0, "%s, %s paths: exit %d (output above)\n%.1500s", cur->name, paths, rc, tu_err);
    ck_assert_msg(strstr(tu_out, " FAIL") == NULL, "failures (output above)");
    ck_assert_msg(strstr(tu_out, "no cases") == NULL, "ops without cases:\n%.1500s", tu_out);
    for (int i = cur->first; i < cur->devices; i++) {
        /* a row "gru <spaces> opencl:I ...": the op column is as wide as the
         * longest op name */
        char want[32], op[64], dev[64];
        snprintf(want, sizeof want, "opencl:%d", i);
        int found = 0;
        for (const char *l = tu_out; l && *l && !found; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
            found = sscanf(l, "%63s %63s", op, dev) == 2 && !strcmp(op, "gru") && !strcmp(dev, want);
        ck_assert_msg(found, "no gru row for opencl:%d:\n%.1500s", i, tu_out);
    }
    /* Oclgrind exits 0 when it finds errors; its reports go to stderr. */
    const char *reports[] = {"Invalid read", "Invalid write",         "Uninitialized",  "data race",
                             "Oclgrind - ",  "Work-group divergence", "Invalid access", NULL};
    for (int i = 0; reports[i]; i++)
        ck_assert_msg(strstr(tu_err, reports[i]) == NULL, "reported '%s':\n%.1500s", reports[i], tu_err);
    printf("%s, %s paths: conform%s passes on %s\n", cur->name, paths, cur->quick ? " --quick" : "", dev);
}
END_TEST

/* The environment of a cold first run: fresh program caches for clgraph,
 * PoCL and Mesa under tu_dir/coldN (env: 5 entries, NULL-terminated). */
/* A fresh set of empty caches for each cold run. */
static void cold_env(char bufs[TU_COLD_VARS][400], const char *env[TU_COLD_VARS + 1]) {
    static int run;
    char d[300];
    snprintf(d, sizeof d, "%s/cold%d", tu_dir, ++run);
    ck_assert_msg(tu_cold_caches(d, bufs, env) == 0, "%s: %s", d, strerror(errno));
}

/* Translates samples.txt with extra arguments in a cold first run.
 * Returns stdout (malloc'ed); asserts exit 0 and an empty stderr. */
static char *translate_cold(const char *what, const char *const *extra) {
    char bufs[TU_COLD_VARS][400];
    const char *env[TU_COLD_VARS + 1];
    cold_env(bufs, env);
    const char *a[16] = {"translate", model_dir()};
    int n = 2;
    for (int i = 0; extra[i] && n < 15; i++) a[n++] = extra[i];
    a[n] = NULL;
    int rc = tu_run_cli(a, env, model_file("samples.txt"));
    ck_assert_msg(rc == 0, "%s: exit %d: %.1500s", what, rc, tu_err);
    ck_assert_msg(tu_err[0] == 0, "%s: a cold first run printed on stderr:\n%.1500s", what, tu_err);
    return strdup(tu_out);
}

static void assert_expected(const char *what, const char *out) {
    char *want = tu_read_text(model_file("samples.expected"), NULL);
    ck_assert_ptr_nonnull(want);
    ck_assert_msg(!strcmp(out, want), "%s: output differs from samples.expected:\n%.1500s\nexpected:\n%.1500s", what,
                  out, want);
    free(want);
}

START_TEST(dates_samples) {
    for (int i = cur->first; i < cur->devices; i++) {
        char dev[32], what[128];
        snprintf(dev, sizeof dev, "opencl:%d", i);
        snprintf(what, sizeof what, "%s, %s paths, %s", cur->name, paths, dev);
        const char *extra[] = {"--device", dev, NULL};
        char *out = translate_cold(what, extra);
        assert_expected(what, out);
        free(out);
        printf("%s: models/dates samples as expected\n", what);
    }
}
END_TEST

/* Whole imported nn.Transformer steps (tests/data/onnx/models/
 * transformer_full_*: the TorchScript and the dynamo export) on each device
 * in a cold first run, against ONNX Runtime's outputs; the tests'
 * CLGRAPH_CHECK_RUNS repeats every run. A weight folded on the device and
 * read back by the host before the read finished gave wrong answers on
 * about half of such runs on PoCL. */
START_TEST(transformer_cold) {
    if (cur->quick) return; /* Oclgrind: the random graphs cover it (minutes of simulation here) */
    char m1[600], m2[600];
    snprintf(m1, sizeof m1, "%s/tests/data/onnx/models/transformer_full_ts", tu_src_dir());
    snprintf(m2, sizeof m2, "%s/tests/data/onnx/models/transformer_full_dynamo", tu_src_dir());
    for (int i = cur->first; i < cur->devices; i++) {
        char dev[32], bufs[TU_COLD_VARS][400];
        const char *env[TU_COLD_VARS + 1];
        snprintf(dev, sizeof dev, "opencl:%d", i);
        cold_env(bufs, env);
        const char *a[] = {"onnx-test", m1, m2, "--device", dev, "--rtol", "1e-4", "--atol", "1e-4", NULL};
        int rc = tu_run_cli(a, env, NULL);
        ck_assert_msg(rc == 0, "%s, %s paths, %s: exit %d:\n%.1500s\n%.1500s", cur->name, paths, dev, rc, tu_out,
                      tu_err);
        printf("%s, %s paths, %s: imported Transformers right in a cold first run\n", cur->name, paths, dev);
    }
}
END_TEST

/* Encoder on one device, decoder on the other, both ways; on two
 * platforms the CPU's output for greedy and beam 5 too. */
START_TEST(split_devices) {
    if (cur->devices < 2) return;
    char *cpu_beam = NULL;
    if (!cur->platform) {
        const char *e[] = {"--device", "cpu", "--beam", "5", NULL};
        cpu_beam = translate_cold("cpu, beam 5", e);
        char *text = devices_text(), a[400], b[400];
        ck_assert_msg(strcmp(platform_of(text, 0, a, sizeof a), platform_of(text, 1, b, sizeof b)) != 0,
                      "opencl:0 and opencl:1 are on one platform:\n%s", text);
        free(text);
    }
    for (int k = 0; k < 2; k++) {
        char place[128], what[256];
        snprintf(place, sizeof place, "encoder=opencl:%d,decoder=opencl:%d", k, 1 - k);
        snprintf(what, sizeof what, "%s, %s paths, --place '%s'", cur->name, paths, place);
        const char *g[] = {"--device", "opencl:0", "--place", place, NULL};
        char *out = translate_cold(what, g);
        assert_expected(what, out);
        free(out);
        if (cpu_beam) {
            const char *b[] = {"--device", "opencl:0", "--place", place, "--beam", "5", NULL};
            out = translate_cold(what, b);
            ck_assert_msg(!strcmp(out, cpu_beam), "%s, beam 5: differs from the CPU:\n%.1500s\nCPU:\n%.1500s", what,
                          out, cpu_beam);
            free(out);
        }
        printf("%s: the CPU's output\n", what);
    }
    free(cpu_beam);
}
END_TEST

/* Where CG_TEST_ICDS lists .icd files (':'-separated; "split"), a vendors
 * directory of just those for every clgraph this test runs, so that other
 * installed implementations (a GPU's) do not join in. 0 on success. */
static int only_these_icds(char *dir, size_t size) {
    const char *list = getenv("CG_TEST_ICDS");
    if (!list) return 0;
    snprintf(dir, size, "/tmp/cg_icds_XXXXXX");
    if (!mkdtemp(dir)) return -1;
    char *copy = strdup(list), *save = NULL;
    int rc = copy ? 0 : -1;
    for (char *f = copy ? strtok_r(copy, ":", &save) : NULL; f && !rc; f = strtok_r(NULL, ":", &save)) {
        char *text = tu_read_text(f, NULL);
        const char *base = strrchr(f, '/');
        char dst[600];
        snprintf(dst, sizeof dst, "%s/%s", dir, base ? base + 1 : f);
        FILE *o = text ? fopen(dst, "w") : NULL;
        if (!o || fputs(text, o) < 0) rc = -1;
        if (o && fclose(o)) rc = -1;
        if (!text) fprintf(stderr, "test_portability: cannot read %s (tools/install-deps.sh installs it)\n", f);
        free(text);
    }
    free(copy);
    return rc ? rc : setenv("OCL_ICD_VENDORS", dir, 1);
}

/* The ICD OCL_ICD_VENDORS names must be there: its absence is a missing
 * package, said once, not every test failing on a device count. */
static int vendor_present(void) {
    const char *v = getenv("OCL_ICD_VENDORS");
    if (!v || v[0] != '/' || access(v, R_OK) == 0) return 1;
    fprintf(stderr, "test_portability: %s is missing (tools/install-deps.sh installs it)\n", v);
    return 0;
}

static void remove_icds(const char *dir) {
    if (!dir[0]) return;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        char p[600];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (e->d_name[0] != '.') remove(p);
    }
    if (d) closedir(d);
    if (rmdir(dir) != 0) fprintf(stderr, "test_portability: cannot remove %s\n", dir);
}

int main(void) {
    const char *name = getenv("CG_TEST_IMPL");
    paths = getenv("CLGRAPH_CL_PATHS");
    for (size_t i = 0; name && i < sizeof k_impls / sizeof k_impls[0]; i++)
        if (!strcmp(name, k_impls[i].name)) cur = &k_impls[i];
    if (!cur || !paths || (strcmp(paths, "cpu") && strcmp(paths, "gpu"))) {
        fprintf(stderr, "test_portability: set CG_TEST_IMPL (pocl, pocl2, rusticl, oclgrind, nvidia, split) and "
                        "CLGRAPH_CL_PATHS (cpu, gpu)\n");
        return 1;
    }
    char icds[64] = "";
    if (only_these_icds(icds, sizeof icds) != 0 || !vendor_present()) {
        remove_icds(icds);
        return 1;
    }
    Suite *s = suite_create("portability");
    TCase *tc = tcase_create(name);
    tcase_add_checked_fixture(tc, setup, tu_teardown_dir);
    tcase_set_timeout(tc, 1500);
    tcase_add_test(tc, devices_listed);
    tcase_add_test(tc, dates_samples);
    tcase_add_test(tc, split_devices);
    tcase_add_test(tc, transformer_cold);
    tcase_add_test(tc, conform_passes);
    suite_add_tcase(s, tc);
    int rc = tu_run_suite(s, 1);
    remove_icds(icds);
    free(tu_out);
    free(tu_err);
    return rc;
}
