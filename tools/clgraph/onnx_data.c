/* clgraph onnx-test's data files that are no plain tensor: a sequence
 * input or output file is the tensors it holds, named as the importer
 * takes them (cg_onnx_options: NAME.0 .. NAME.N-1, and NAME with no value
 * for an empty sequence or optional input), so the runner gives, feeds and
 * compares tensors only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cli_onnx_read_value(const char *path, cg_onnx_kind kind, int output, int max, int *n, cg_tensor **t, char **names,
                        char *why, size_t wsz) {
    cg_tensor **ts = NULL;
    char *name = NULL;
    int k = 0;
    cg_onnx_kind held;
    if (cg_tensors_load_onnx(path, kind, &k, &ts, &held, &name)) {
        snprintf(why, wsz, "%s", cg_last_error());
        return 0;
    }
    const int empty = !k && !output; /* an input given as empty: its name with no value */
    int ok = *n + k + empty <= max;
    if (!ok) snprintf(why, wsz, "%s: more than %d values in a data set", path, max);
    for (int i = 0; i < k + empty && ok; i++) {
        char nm[600];
        if (held != CG_ONNX_SEQUENCE || empty || !*name) snprintf(nm, sizeof nm, "%s", name);
        else snprintf(nm, sizeof nm, "%.500s.%d", name, i);
        t[*n] = empty ? NULL : ts[i];
        if (!empty) ts[i] = NULL;
        names[(*n)++] = strdup(nm);
    }
    for (int i = 0; i < k; i++) cg_tensor_free(ts[i]);
    free(ts);
    free(name);
    return ok;
}
