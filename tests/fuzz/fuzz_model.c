/* libFuzzer target for the whole model-directory loader (cg_s2s_load): the
 * input is config.json, src.vocab and tgt.vocab separated by NUL bytes,
 * written into a directory on tmpfs (/dev/shm when there is one) beside
 * the weights of a small golden model (CG_FUZZ_WEIGHTS), and loaded on the
 * CPU (config, vocabularies, weight shapes, graphs, plans). No crash or
 * leak; a rejected directory leaves a one-line message. */
#include "clgraph/clgraph.h"
#include "clgraph/seq2seq.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[256];
static cg_context *ctx;

static void put(const char *name, const uint8_t *data, size_t size) {
    char p[320];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f)) abort();
}

static void cleanup(void) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    cg_context_free(ctx);
}

static void setup(void) {
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(dir, sizeof dir, "%s/cg_fuzz_model.%ld", base, (long)getpid());
    char cmd[700];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s' && cp '%s' '%s/weights.safetensors'", dir, CG_FUZZ_WEIGHTS, dir);
    if (system(cmd) != 0) abort();
    if (cg_context_create(NULL, &ctx) != CG_OK) abort();
    atexit(cleanup);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!ctx) setup();
    const uint8_t *part[3] = {data, NULL, NULL};
    size_t len[3] = {size, 0, 0};
    for (int k = 1; k < 3; k++) {
        const uint8_t *z = memchr(part[k - 1], 0, len[k - 1]);
        if (!z) break;
        part[k] = z + 1;
        len[k] = len[k - 1] - (size_t)(part[k] - part[k - 1]);
        len[k - 1] = (size_t)(z - part[k - 1]);
    }
    put("config.json", part[0], len[0]);
    put("src.vocab", part[1] ? part[1] : (const uint8_t *)"", len[1]);
    put("tgt.vocab", part[2] ? part[2] : (const uint8_t *)"", len[2]);
    cg_s2s *m = NULL;
    if (cg_s2s_load(ctx, dir, NULL, NULL, &m) != CG_OK) {
        const char *e = cg_last_error();
        if (m || !e[0] || strchr(e, '\n')) {
            fprintf(stderr, "bad failure: %s\n", e);
            abort();
        }
        return 0;
    }
    cg_s2s_free(m);
    return 0;
}
