/* The clgraph command-line tool. Exit codes: 0 success, 1 the input was bad
 * or a run failed (one line on stderr says why), 2 the command line was bad. */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clgraph/clgraph.h"
#include "clgraph/plugin.h"
#include "cli.h"

static const char usage_text[] =
    "usage: clgraph COMMAND [OPTIONS]\n"
    "\n"
    "Runs dataflow graphs written in the clgraph IR.\n"
    "\n"
    "commands:\n"
    "  run MODEL.cg --weights W.safetensors --input NAME=FILE.npy ... [--graph NAME]\n"
    "      [--output DIR] [--device D] [--place RULES] [--stats] [--profile FILE.json]\n"
    "      [--repeat N]\n"
    "                           run a graph; outputs go to DIR/NAME.npy ('/' in NAME as\n"
    "                           '_': ONNX names such as /m/Add_output_0), or are printed;\n"
    "                           D is cpu (default), opencl:N, a device name substring or\n"
    "                           auto; RULES like 'encoder=opencl:0,*attn*=cpu' place nodes\n"
    "                           by node or graph name (globs); --stats adds the time per\n"
    "                           node of a second, warm run; --profile writes a Chrome\n"
    "                           trace / Perfetto JSON of the run (ui.perfetto.dev);\n"
    "                           --repeat N times N more (warm) runs: median and fastest\n"
    "  plan MODEL.cg --weights W.safetensors [--device D] [--place RULES]\n"
    "      (--bind B=1,S=30 | --input NAME=FILE.npy ...) [--dot FILE]\n"
    "  plan MODEL_DIR [--device D] [--place RULES] [--bind B=1,S=10] [--dot FILE]\n"
    "                           show where every node runs, the copies, memory per\n"
    "                           device and the estimated cost; --dot writes Graphviz;\n"
    "                           for a model directory, the plans of its encoder and\n"
    "                           decoders (sizes: one sentence of 10 tokens unless\n"
    "                           --bind says otherwise; see clgraph plan --help)\n"
    "  check MODEL.cg [--weights W.safetensors]\n"
    "                           verify a graph and print every value's dtype and shape\n"
    "  import MODEL.onnx [-o OUT.cg] [--weights OUT.safetensors] [--input NAME=FILE.npy ...]\n"
    "                           import an ONNX model: the text IR (stdout without -o) and\n"
    "                           its initializers (OUT.safetensors beside OUT.cg); run,\n"
    "                           plan and check take MODEL.onnx directly; --input values\n"
    "                           are used where a node needs one at import (a shape);\n"
    "                           run, plan, check and import take --rewrites LIST, the\n"
    "                           import's graph rewrites: all (default), none, NAMES or\n"
    "                           -NAMES (CLGRAPH_REWRITES likewise); clgraph plan says\n"
    "                           which fired. Rewrites: cse, attention, norm,\n"
    "                           elementwise\n"
    "  onnx-test DIR... [--device D]... [--rtol R] [--atol A] [--one-plan]\n"
    "                           run ONNX backend test folders (model.onnx and\n"
    "                           test_data_set_N) on the CPU and every OpenCL device\n"
    "                           (or each D): |got - want| <= A + R |want| (ONNX's\n"
    "                           tolerances by default: R 1e-3, A 1e-7; R at least 2^-6\n"
    "                           for bfloat16 outputs, as ONNX's runner); exit 1 on a failure;\n"
    "                           --one-plan imports each model once, no input values given,\n"
    "                           and runs every data set through one plan\n"
    "  fmt MODEL.cg [--in-place] print a graph in canonical form, comments kept\n"
    "  ops [NAME]               list the operators, or document one\n"
    "  translate MODEL_DIR [--device D] [--place RULES] [--beam K] [--nbest N] [--alpha A]\n"
    "      [--max-len N] [--min-len N] [--batch N] [--ids] [--scores]\n"
    "      [--attention FILE.png|.svg|.json] [--window N] [--max-input-len N] [--crop]\n"
    "      [--profile FILE.json] [--weights-dtype f32|bf16|f16|int8]\n"
    "                           translate one source per line of stdin with a seq2seq\n"
    "                           model directory; one line per source on stdout, written\n"
    "                           window by window (N lines: default 16 batches, 1 from\n"
    "                           a terminal); a line over --max-input-len tokens (1024)\n"
    "                           is an error, or cropped with --crop (K at most 1024,\n"
    "                           A in [0, 100]); --max-len: tokens generated, EOS\n"
    "                           included (2 x source tokens + 10, at least --min-len);\n"
    "                           --min-len: the fewest, EOS included (EOS is masked\n"
    "                           until then; at most --max-len); --profile traces every\n"
    "                           run (slower: each step is waited for); --weights-dtype\n"
    "                           reads the encoder's and decoder's matrix weights in that\n"
    "                           type (an f32 model narrowed at load: half or a quarter\n"
    "                           of the bytes per step; int8: one scale per row)\n"
    "  s2s-graph MODEL_DIR [--weights-dtype f32|bf16|f16|int8]\n"
    "                           print the encoder and decoder graphs of a model directory\n"
    "                           as they run (with --weights-dtype as translate loads them)\n"
    "  quantize MODEL_DIR --to bf16|f16|int8 -o OUT_DIR [--embeddings]\n"
    "                           a copy of a model directory with the weights of its\n"
    "                           matrix products in 16 bits (half the bytes) or in 8\n"
    "                           with one f32 scale per row, NAME_scale (a quarter); the\n"
    "                           CPU kernels read them as stored, in integer products\n"
    "                           for int8\n"
    "  forecast MODEL_DIR --horizon N [--history N] [--device D] [--place RULES]\n"
    "      [--batch N] [--attention FILE.png|.svg|.json] [--plot FILE.png|.svg]\n"
    "                           forecast the series of a CSV on stdin (header: the\n"
    "                           model's columns, optionally `time` first and `series`)\n"
    "                           N steps ahead with a forecasting model directory; CSV\n"
    "                           on stdout, `time` continued; --history keeps the last\n"
    "                           N rows of each series; --plot draws each series' history,\n"
    "                           forecast and attention (FILE, FILE-1, ... per series)\n"
    "  forecast-graph MODEL_DIR print the step graph of a forecasting model directory\n"
    "  bench MODEL_DIR [--device D] [--place RULES] [--batch B] [--beam K] [--src-len S]\n"
    "      [--steps T] [--warmup W] [--runs N] [--json] [--machine] [--profile FILE.json]\n"
    "      [--weights-dtype f32|bf16|f16|int8]\n"
    "                           decode B random sources of S tokens in exactly T steps\n"
    "                           (EOS masked before the last: min and max length T;\n"
    "                           default 1, 1, 30, 30; 1 warm-up, 5 timed runs): ms per\n"
    "                           step, tokens/s, first token with cold and warm caches,\n"
    "                           peak memory, allocations per step; --machine adds read\n"
    "                           bandwidth, SGEMM peak and the floors they imply;\n"
    "                           --profile traces one more run after the timed ones\n"
    "  serve MODEL... [--host ADDR] [--port N] [--device D] [--max-batch N]\n"
    "      [--max-delay-us US] [--max-queue N] [--token-file FILE] [--access-log FILE]\n"
    "                           serve models over HTTP: graphs ([NAME=]FILE.cg@W.safetensors,\n"
    "                           [NAME=]FILE.onnx) by the Open Inference Protocol (KServe\n"
    "                           v2, JSON and binary tensors: tritonclient.http works),\n"
    "                           translation and forecasting model directories on\n"
    "                           /v2/models/NAME/translate and /forecast, a page at / to\n"
    "                           try translations and see their attention; requests\n"
    "                           batched across clients, /metrics; 127.0.0.1:8000 by\n"
    "                           default; SIGTERM answers what was accepted and exits;\n"
    "                           SIGHUP loads the models again (docs/serving.md)\n"
    "  devices                  list the CPU and every OpenCL device\n"
    "  conform [--op NAME[,NAME...]] [--plugin-only] [--device D] [--quick] [--verbose]\n"
    "      [--seed N] [--timeout S]\n"
    "                           run every operator's conformance cases (or those of the\n"
    "                           ops named, --op repeatable; --plugin-only: the loaded\n"
    "                           plugins' ops) on each OpenCL device against its CPU\n"
    "                           kernel: outputs start as NaN and are guarded, so an\n"
    "                           element never written or a write past an output fails;\n"
    "                           a crash, or a kernel run past S seconds (300), names the\n"
    "                           op, case and device; ops with a\n"
    "                           decomposition are checked against it too; --verbose\n"
    "                           times each case on both devices and flags those over\n"
    "                           100x the CPU kernel's time; exit 1 on any failure\n"
    "\n"
    "options for every command:\n"
    "  --plugin PATH            load an operator plugin (repeatable); the environment\n"
    "                           variable CLGRAPH_PLUGINS takes a ':'-separated list too\n"
    "  --verbose                show the OpenCL compiler's warnings (as\n"
    "                           CLGRAPH_CL_WARNINGS=1 does); conform says more too\n"
    "  -h, --help               show this help\n"
    "  --version                show the version\n";

static void usage(FILE *f) { fputs(usage_text, f); }

/* The first line of a command's entry, "COMMAND ARGS description" for a
 * short entry: the usage, then the description on a line of its own at the
 * column the other entries' descriptions start (27). The description is the
 * first word of lowercase letters alone after the command: arguments are
 * upper case, bracketed, options or lists such as bf16|f16. */
static void print_usage_line(const char *args, size_t len, const char *cmd) {
    size_t d = 0;
    while (d < len) {
        while (d < len && args[d] == ' ') d++;
        size_t w = d;
        while (w < len && args[w] >= 'a' && args[w] <= 'z') w++;
        if (w > d && (w == len || args[w] == ' ')) break;
        while (d < len && args[d] != ' ') d++;
    }
    size_t u = d;
    while (u > 0 && args[u - 1] == ' ') u--;
    printf("usage: clgraph %s%.*s\n", cmd, (int)u, args);
    if (d < len) printf("%27s%.*s\n", "", (int)(len - d), args + d);
}

/* `clgraph COMMAND -h`: the command's own entries of the usage text (a
 * line "  COMMAND ..." and the more indented lines under it) and the
 * options every command takes. 0 when the text has no such command. */
static int command_help(const char *cmd) {
    size_t n = strlen(cmd);
    int found = 0, in = 0;
    const char *common = strstr(usage_text, "options for every command:");
    for (const char *l = usage_text; *l && l < common;) {
        const char *e = strchr(l, '\n');
        size_t len = e ? (size_t)(e - l) : strlen(l);
        if (!strncmp(l, "  ", 2) && l[2] != ' ') in = !strncmp(l + 2, cmd, n) && (l[2 + n] == ' ' || l[2 + n] == '\n');
        else if (strncmp(l, "   ", 3)) in = 0;
        if (in && !found++) print_usage_line(l + 2 + n, len - 2 - n, cmd);
        else if (in) printf("%.*s\n", (int)len, l);
        l += len + (e != NULL);
    }
    if (found) printf("\n%s", common);
    return found;
}

/* --verbose is an option of every command: it lets the OpenCL compiler's
 * warnings through (the library passes -w otherwise) and is dropped from
 * the arguments of commands that have no verbose output of their own. */
static int take_verbose(int argc, char **argv) {
    int keep = !strcmp(argv[1], "conform");
    int n = 2;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--verbose")) {
            setenv("CLGRAPH_CL_WARNINGS", "1", 1);
            if (!keep) continue;
        }
        argv[n++] = argv[i];
    }
    argv[n] = NULL;
    return n;
}

/* No command takes an empty argument: `--device ''` used to mean the
 * default device and `--plugin ''` an unnamed file. 0, or the usage error
 * naming the option. */
static int refuse_empty(int argc, char **argv) {
    for (int i = 2; i < argc; i++) {
        if (argv[i][0]) continue;
        if (argv[i - 1][0] == '-')
            fprintf(stderr, "clgraph %s: option '%s' has an empty value\n", argv[1], argv[i - 1]);
        else fprintf(stderr, "clgraph %s: empty argument (number %d)\n", argv[1], i - 1);
        return CLI_USAGE;
    }
    return 0;
}

static int dispatch(int argc, char **argv) {
    if (argc < 2) { /* a usage error is one line, like every other mistake */
        fprintf(stderr, "clgraph: no command given (see clgraph --help)\n");
        return CLI_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
        printf("clgraph %s (plugin ABI %d.%d)\nfeatures: %s\n", cg_version(), CG_PLUGIN_ABI_MAJOR, CG_PLUGIN_ABI_MINOR,
               *cg_build_features() ? cg_build_features() : "none");
        return 0;
    }
    for (int i = 2; i < argc; i++)
        if ((!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) && strcmp(cmd, "plan") && command_help(cmd))
            return 0;
    argc = take_verbose(argc, argv);
    if (refuse_empty(argc, argv)) return CLI_USAGE;
    if (!strcmp(cmd, "run")) return cli_run(argc - 1, argv + 1);
    if (!strcmp(cmd, "check")) return cli_check(argc - 1, argv + 1);
    if (!strcmp(cmd, "import")) return cli_import(argc - 1, argv + 1);
    if (!strcmp(cmd, "onnx-test")) return cli_onnx_test(argc - 1, argv + 1);
    if (!strcmp(cmd, "fmt")) return cli_fmt(argc - 1, argv + 1);
    if (!strcmp(cmd, "ops")) return cli_ops(argc - 1, argv + 1);
    if (!strcmp(cmd, "devices")) return cli_devices(argc - 1, argv + 1);
    if (!strcmp(cmd, "conform")) return cli_conform(argc - 1, argv + 1);
    if (!strcmp(cmd, "plan")) return cli_plan(argc - 1, argv + 1);
    if (!strcmp(cmd, "translate")) return cli_translate(argc - 1, argv + 1);
    if (!strcmp(cmd, "s2s-graph")) return cli_s2s_graph(argc - 1, argv + 1);
    if (!strcmp(cmd, "quantize")) return cli_quantize(argc - 1, argv + 1);
    if (!strcmp(cmd, "forecast")) return cli_forecast(argc - 1, argv + 1);
    if (!strcmp(cmd, "forecast-graph")) return cli_forecast_graph(argc - 1, argv + 1);
    if (!strcmp(cmd, "bench")) return cli_bench(argc - 1, argv + 1);
    if (!strcmp(cmd, "serve")) return cli_serve(argc - 1, argv + 1);
    if (!strcmp(cmd, "__bench-first-token")) return cli_bench_first_token(argc - 1, argv + 1);
    fprintf(stderr, "clgraph: unknown command '%s' (try 'clgraph --help')\n", cmd);
    return CLI_USAGE;
}

/* Every command's output is checked once more at the end: a write that
 * failed in stdio's buffer (a full disk, a closed pipe with SIGPIPE
 * ignored) is an error, not a silent exit 0 with output missing. */
/* glibc raises its mmap threshold each time a big mmapped block is freed,
 * after which blocks of that size come from the heap and fragment it: a
 * translate that allocates and frees its encoder outputs (~1.5 MB) per batch
 * grew from 38 MB at 10,000 lines to 49 MB at 300,000 and on. A fixed
 * threshold keeps big blocks in mmap, where freeing returns them (peak RSS
 * 31.3 MB for both, and no slower). MALLOC_MMAP_THRESHOLD_ in the
 * environment still wins. */
static void pin_mmap_threshold(void) {
#ifdef __GLIBC__
    if (!getenv("MALLOC_MMAP_THRESHOLD_")) mallopt(M_MMAP_THRESHOLD, 256 * 1024);
#endif
}

/* OpenBLAS (pthreads build) starts its worker threads when it is loaded and
 * lets them spin (sched_yield) for about 0.1 s before they sleep. The CPU
 * backend's own pool then shares the cores with them: a batch-1 decoder
 * step of the medium model took 0.34-0.47 ms instead of 0.14-0.18 in half
 * the runs of `clgraph bench`, whose timed runs fall in that first 0.1 s
 * (OPENBLAS_NUM_THREADS=1 made every run fast). The hot paths never call
 * BLAS at that size, so the tool stops those idle threads before any work;
 * OpenBLAS starts them again at its next threaded call, as it does after a
 * fork. The library leaves OpenBLAS alone: an application may be using it. */
static void quiet_blas_threads(void) {
    int (*stop)(void) = NULL;
    *(void **)&stop = dlsym(RTLD_DEFAULT, "blas_thread_shutdown_");
    if (stop) stop();
}

int main(int argc, char **argv) {
    /* A closed pipe on stdout (`clgraph translate ... | head -1`) is a
     * write error like a full disk: reported in one line naming what was
     * being written, exit 1, instead of a silent death by SIGPIPE (141). */
    signal(SIGPIPE, SIG_IGN);
    pin_mmap_threshold();
    quiet_blas_threads();
    int rc = dispatch(argc, argv);
    int bad = fflush(stdout) != 0 || ferror(stdout), err = errno;
    if (fclose(stdout) != 0 && !bad) {
        bad = 1;
        err = errno;
    }
    if (bad && !rc) { /* a command that failed has said why already */
        fprintf(stderr, "clgraph%s%s: writing the output failed: %s\n", argc > 1 ? " " : "", argc > 1 ? argv[1] : "",
                strerror(err));
        return 1;
    }
    return rc;
}
