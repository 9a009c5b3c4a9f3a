/* Module functions over whole directories and devices: conformance
 * (cg_conform) and the narrowing of a model's weights (quantize). */
#include "pycg.h"

#include <stdlib.h>

/* Rows of a conformance run, made with the GIL taken back per row. */
typedef struct {
    PyObject *list;
} conform_sink;

static const char *result_name(cg_conform_result r) {
    switch (r) {
    case CG_CONFORM_PASS: return "pass";
    case CG_CONFORM_FAIL: return "fail";
    case CG_CONFORM_NO_KERNEL: return "no kernel";
    default: return "no cases";
    }
}

static void conform_row(const cg_conform_row *r, void *user) {
    conform_sink *sink = user;
    PyGILState_STATE g = PyGILState_Ensure();
    if (sink->list) {
        PyObject *row =
            Py_BuildValue("{sssssssisisdsssssssi}", "op", r->op, "plugin", r->plugin ? r->plugin : "", "device",
                          r->device, "cases_run", r->cases_run, "cases_skipped", r->cases_skipped, "max_abs_error",
                          r->max_abs_error, "result", result_name(r->result), "message", r->message ? r->message : "",
                          "shapes", r->shapes ? r->shapes : "", "slow_cases", r->slow_cases);
        if (!row || PyList_Append(sink->list, row) < 0) Py_CLEAR(sink->list);
        Py_XDECREF(row);
    }
    PyGILState_Release(g);
}

/* conform(ops, device, quick, seed, plugins, plugin_only) -> [row dict]. */
static PyObject *py_conform(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *ops_obj, *plugins_obj;
    const char *device;
    int quick, plugin_only;
    unsigned long long seed;
    if (!PyArg_ParseTuple(args, "OzpKOp", &ops_obj, &device, &quick, &seed, &plugins_obj, &plugin_only)) return NULL;
    char **ops = NULL, **plugins = NULL;
    int n_ops = 0, n_plugins = 0;
    if (pycg_strlist(ops_obj, "ops", &ops, &n_ops) < 0 ||
        pycg_strlist(plugins_obj, "plugins", &plugins, &n_plugins) < 0) {
        pycg_strlist_free(ops, n_ops);
        return NULL;
    }
    conform_sink sink = {PyList_New(0)};
    cg_context *ctx = NULL;
    cg_status st = CG_ERR_NO_MEMORY;
    int failed = 0;
    if (sink.list) {
        PyThreadState *saved = PyEval_SaveThread();
        st = pycg_context(0, plugins, n_plugins, &ctx);
        cg_conform_options o = {.struct_size = sizeof o,
                                .device = device,
                                .quick = quick,
                                .seed = seed,
                                .ops = (const char *const *)ops,
                                .n_ops = n_ops,
                                .plugin_only = plugin_only};
        if (!st) st = cg_conform(ctx, &o, conform_row, &sink, &failed);
        PyEval_RestoreThread(saved);
    }
    cg_context_free(ctx);
    pycg_strlist_free(ops, n_ops);
    pycg_strlist_free(plugins, n_plugins);
    if (st) {
        Py_XDECREF(sink.list);
        return sink.list || st != CG_ERR_NO_MEMORY ? pycg_raise(st) : PyErr_NoMemory();
    }
    return sink.list;
}

/* cg_weights_narrow's pick, as `clgraph quantize` picks, counted. */
typedef struct {
    int embeddings, count;
} narrow_pick;

static int pick_counted(const char *name, cg_dtype stored, int ndim, void *user) {
    narrow_pick *p = user;
    int yes = cg_weights_pick_products(name, stored, ndim, &p->embeddings);
    p->count += yes;
    return yes;
}

/* narrow_weights(src, dst, to, embeddings) -> tensors converted: the
 * weights of `src` with the products' matrices stored as `to`, written to
 * `dst` atomically (what `clgraph quantize` does to weights.safetensors). */
static PyObject *py_narrow_weights(PyObject *self, PyObject *args) {
    (void)self;
    const char *src, *dst;
    int to;
    narrow_pick pick = {0, 0};
    if (!PyArg_ParseTuple(args, "ssip", &src, &dst, &to, &pick.embeddings)) return NULL;
    cg_weights *w = NULL, *q = NULL;
    cg_status st;
    PyThreadState *saved = PyEval_SaveThread();
    st = cg_weights_open(src, &w);
    if (!st) st = cg_weights_narrow(w, (cg_dtype)to, pick_counted, &pick, &q);
    if (!st) st = cg_weights_write(q, dst);
    cg_weights_free(q);
    cg_weights_free(w);
    PyEval_RestoreThread(saved);
    if (st) return pycg_raise(st);
    return PyLong_FromLong(pick.count);
}

PyMethodDef pycg_utility_methods[] = {
    {"conform", py_conform, METH_VARARGS, "conform(ops, device, quick, seed, plugins, plugin_only) -> [row]."},
    {"narrow_weights", py_narrow_weights, METH_VARARGS, "narrow_weights(src, dst, to, embeddings) -> converted."},
    {NULL, NULL, 0, NULL}};
