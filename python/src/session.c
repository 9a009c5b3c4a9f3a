/* Session: a model (.cg text or file, or ONNX file) loaded into its own
 * context and lowered into one plan; runs take and give arrays through the
 * buffer protocol with the GIL released. A plan runs one thread at a time
 * (clgraph.h, "Threads"): each Session serialises its runs on a mutex that
 * is taken without the GIL, so threads sharing one Session queue up while
 * other Sessions run in parallel. */
#include "pycg.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    pycg_base base;
    cg_model *m;
    cg_weights *w;
    cg_plan *p;
    cg_profiler *prof;
    cg_graph *g;
} pycg_session;

static void session_dealloc(PyObject *self) {
    pycg_session *s = (pycg_session *)self;
    cg_plan_free(s->p);
    cg_profiler_free(s->prof);
    cg_model_free(s->m);
    cg_weights_free(s->w);
    pycg_base_dealloc(self);
}

/* The options of Session(): strings owned here. */
typedef struct {
    char *path, *kind, *weights, *device, *place, *rewrites, *graph;
    int profile;
    const char *text; /* .cg text (of the bytes object the call holds), or NULL */
    size_t text_len;
} session_args;

static void args_free(session_args *a) {
    free(a->path);
    free(a->kind);
    free(a->weights);
    free(a->device);
    free(a->place);
    free(a->rewrites);
    free(a->graph);
}

static int parse_args(PyObject *args, PyObject *kw, session_args *a, PyObject **plugins, int *threads) {
    static char *names[] = {"path",  "text",    "kind",     "weights", "device",  "place",
                            "graph", "plugins", "rewrites", "threads", "profile", NULL};
    PyObject *path = NULL, *text = NULL, *kind = NULL, *weights = NULL, *device = NULL, *place = NULL, *graph = NULL,
             *rewrites = NULL;
    memset(a, 0, sizeof *a);
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|OOOOOOOOOip", names, &path, &text, &kind, &weights, &device, &place,
                                     &graph, plugins, &rewrites, threads, &a->profile))
        return -1;
    if (text && text != Py_None && !PyBytes_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "text must be bytes");
        return -1;
    }
    if (text && text != Py_None) {
        a->text = PyBytes_AsString(text);
        a->text_len = (size_t)PyBytes_Size(text);
    }
    if (pycg_opt_str(path, "path", &a->path) || pycg_opt_str(kind, "kind", &a->kind) ||
        pycg_opt_str(weights, "weights", &a->weights) || pycg_opt_str(device, "device", &a->device) ||
        pycg_opt_str(place, "place", &a->place) || pycg_opt_str(graph, "graph", &a->graph) ||
        pycg_opt_str(rewrites, "rewrites", &a->rewrites))
        return -1;
    if (!a->path == !a->text) {
        PyErr_SetString(PyExc_TypeError, "give exactly one of path and text");
        return -1;
    }
    return 0;
}

/* Loads the model into the session's context and makes the plan (no GIL:
 * parsing, importing and lowering take a while). */
static cg_status session_load(PyObject *self, void *arg) {
    pycg_session *s = (pycg_session *)self;
    const session_args *a = arg;
    cg_context *ctx = s->base.ctx;
    cg_status st;
    if (a->kind && !strcmp(a->kind, "onnx")) {
        cg_onnx_options oo = {.struct_size = sizeof oo, .rewrites = a->rewrites};
        st = cg_model_load_onnx(ctx, a->path, &oo, &s->m);
    } else {
        st = a->text ? cg_model_parse(ctx, a->text, a->text_len, "<text>", &s->m) : cg_model_load(ctx, a->path, &s->m);
        if (!st && a->weights) st = cg_weights_open(a->weights, &s->w);
        if (!st && s->w) st = cg_model_bind_weights(s->m, s->w);
        if (!st && a->rewrites) st = cg_model_rewrite(s->m, a->rewrites);
        if (!st) st = cg_model_verify(s->m);
    }
    cg_plan_options po = {.struct_size = sizeof po, .device = a->device, .place = a->place};
    if (!st) st = cg_plan_create(s->m, a->graph, &po, &s->p); /* names a graph the model lacks */
    if (!st) s->g = a->graph ? cg_model_graph(s->m, a->graph) : cg_model_graph_at(s->m, 0);
    if (!st && a->profile) st = cg_profiler_create(&s->prof);
    if (!st && s->prof) st = cg_plan_set_profiler(s->p, s->prof);
    return st;
}

static int session_init(PyObject *self, PyObject *args, PyObject *kw) {
    session_args a;
    PyObject *plugins = NULL;
    int threads = 0;
    int rc = parse_args(args, kw, &a, &plugins, &threads);
    if (rc == 0) rc = pycg_base_load(self, "Session", threads, plugins, session_load, &a);
    args_free(&a);
    return rc;
}

static int check_ready(pycg_session *s) { return pycg_base_ready((PyObject *)s, "Session"); }

/* One dimension: its size, or its symbol's name, or None when unknown. */
static PyObject *dim_object(int64_t size, const char *sym) {
    if (sym) return PyUnicode_FromString(sym);
    if (size < 0) Py_RETURN_NONE;
    return PyLong_FromLongLong((long long)size);
}

/* io(outputs) -> [(name, dtype name, shape tuple)] of the graph's inputs or outputs. */
static PyObject *session_io(PyObject *self, PyObject *arg) {
    pycg_session *s = (pycg_session *)self;
    if (check_ready(s) < 0) return NULL;
    int out = PyObject_IsTrue(arg);
    if (out < 0) return NULL;
    int n = out ? cg_graph_output_count(s->g) : cg_graph_input_count(s->g);
    PyObject *list = PyList_New(0);
    for (int i = 0; list && i < n; i++) {
        cg_dtype t;
        int nd;
        int64_t dims[CG_MAX_DIMS];
        const char *syms[CG_MAX_DIMS];
        if (cg_graph_io_shape(s->g, out, i, &t, &nd, dims, syms)) {
            Py_DECREF(list);
            return pycg_raise(CG_ERR_INVALID_ARGUMENT);
        }
        PyObject *shape = PyTuple_New(nd);
        for (int d = 0; shape && d < nd; d++) {
            PyObject *o = dim_object(dims[d], syms[d]);
            if (!o || PyTuple_SetItem(shape, d, o) < 0) Py_CLEAR(shape);
        }
        const char *name = out ? cg_graph_output_name(s->g, i) : cg_graph_input_name(s->g, i);
        PyObject *item = shape ? Py_BuildValue("(sNN)", name, pycg_dtype_name(t), shape) : NULL;
        if (!item || PyList_Append(list, item) < 0) Py_CLEAR(list);
        Py_XDECREF(item);
    }
    return list;
}

/* The feeds of a run: names, wrapped arrays, and converted copies where an
 * array's dtype converts exactly into the graph input's (int64 token ids
 * into an i32 input, as the CLI's --input does). */
typedef struct {
    int n;
    const char **names;
    pycg_arg *args;
    cg_tensor **tensors, **converted;
} feeds;

static void feeds_free(feeds *f) {
    for (int i = 0; i < f->n; i++) {
        pycg_arg_release(&f->args[i]);
        cg_tensor_free(f->converted[i]);
    }
    free(f->names);
    free(f->args);
    free(f->tensors);
    free(f->converted);
}

static int feed_one(pycg_session *s, PyObject *item, feeds *f, int i) {
    const char *name;
    PyObject *obj;
    int as;
    if (!PyArg_ParseTuple(item, "sOi", &name, &obj, &as)) return -1;
    char what[320];
    snprintf(what, sizeof what, "input '%.256s'", name);
    f->names[i] = name; /* the tuple's str: alive while the feeds list is */
    if (pycg_arg_wrap(obj, (cg_dtype)as, 0, what, &f->args[i]) < 0) return -1;
    f->n = i + 1;
    /* strict: an array the input's dtype does not take exactly is said here,
     * naming the array's dtype (an unknown name is the run's to report) */
    if (cg_graph_input_convert(s->g, name, f->args[i].t, 1, &f->converted[i]) != CG_OK) {
        pycg_raise(CG_ERR_INVALID_ARGUMENT);
        return -1;
    }
    f->tensors[i] = f->converted[i] ? f->converted[i] : f->args[i].t;
    return 0;
}

static int feeds_make(pycg_session *s, PyObject *list, feeds *f) {
    memset(f, 0, sizeof *f);
    if (!PyList_Check(list)) {
        PyErr_SetString(PyExc_TypeError, "feeds must be a list of (name, array, dtype code)");
        return -1;
    }
    Py_ssize_t n = PyList_Size(list);
    size_t m = (size_t)n + 1;
    f->names = calloc(m, sizeof *f->names);
    f->args = calloc(m, sizeof *f->args);
    f->tensors = calloc(m, sizeof *f->tensors);
    f->converted = calloc(m, sizeof *f->converted);
    if (!f->names || !f->args || !f->tensors || !f->converted) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (feed_one(s, PyList_GetItem(list, i), f, (int)i) < 0) return -1;
    return 0;
}

/* Runs with the GIL released and the session's lock held; into: outputs
 * the caller allocated (cg_plan_run_into), else new ones. */
static cg_status locked_run(pycg_session *s, const feeds *f, int n_out, cg_tensor **outs, int into) {
    cg_status st;
    PyThreadState *saved = PyEval_SaveThread();
    pthread_mutex_lock(&s->base.lock);
    st = into ? cg_plan_run_into(s->p, f->n, f->names, f->tensors, n_out, outs)
              : cg_plan_run(s->p, f->n, f->names, f->tensors, n_out, outs);
    pthread_mutex_unlock(&s->base.lock);
    PyEval_RestoreThread(saved);
    return st;
}

/* run(feeds, wanted) -> [Tensor] for the output indices in `wanted` (None: all). */
static PyObject *session_run(PyObject *self, PyObject *args) {
    pycg_session *s = (pycg_session *)self;
    PyObject *list, *wanted;
    if (check_ready(s) < 0 || !PyArg_ParseTuple(args, "OO", &list, &wanted)) return NULL;
    feeds f = {0};
    int n_out = cg_graph_output_count(s->g);
    cg_tensor **outs = calloc((size_t)n_out + 1, sizeof *outs);
    PyObject *res = NULL;
    if (!outs) PyErr_NoMemory();
    else if (feeds_make(s, list, &f) == 0) {
        cg_status st = locked_run(s, &f, n_out, outs, 0);
        res = st ? pycg_raise(st) : NULL;
    }
    if (outs && !PyErr_Occurred()) {
        Py_ssize_t n = wanted == Py_None ? n_out : PySequence_Size(wanted);
        res = n >= 0 ? PyList_New(n) : NULL;
        for (Py_ssize_t i = 0; res && i < n; i++) {
            PyObject *ix = wanted == Py_None ? NULL : PySequence_GetItem(wanted, i);
            long k = ix ? PyLong_AsLong(ix) : (long)i;
            Py_XDECREF(ix);
            if (k < 0 || k >= n_out || !outs[k]) {
                if (!PyErr_Occurred()) PyErr_SetString(PyExc_IndexError, "output index out of range or repeated");
                Py_CLEAR(res);
                break;
            }
            PyObject *t = pycg_tensor_new(outs[k]);
            outs[k] = NULL;
            if (!t) Py_CLEAR(res);
            else PyList_SetItem(res, i, t);
        }
    }
    for (int k = 0; outs && k < n_out; k++) cg_tensor_free(outs[k]);
    free(outs);
    feeds_free(&f);
    return res;
}

/* run_into(feeds, outs): outs a list of (index, array, dtype code), each
 * array written in place; outputs not listed are computed, not read back. */
static PyObject *session_run_into(PyObject *self, PyObject *args) {
    pycg_session *s = (pycg_session *)self;
    PyObject *list, *olist;
    if (check_ready(s) < 0 || !PyArg_ParseTuple(args, "OO!", &list, &PyList_Type, &olist)) return NULL;
    int n_out = cg_graph_output_count(s->g);
    Py_ssize_t n = PyList_Size(olist);
    cg_tensor **outs = calloc((size_t)n_out + 1, sizeof *outs);
    pycg_arg *oargs = calloc((size_t)n + 1, sizeof *oargs);
    feeds f = {0};
    int ok = outs && oargs ? 1 : (PyErr_NoMemory(), 0);
    for (Py_ssize_t i = 0; ok && i < n; i++) {
        int k, as;
        PyObject *obj;
        ok = PyArg_ParseTuple(PyList_GetItem(olist, i), "iOi", &k, &obj, &as);
        if (ok && (k < 0 || k >= n_out || outs[k])) {
            PyErr_SetString(PyExc_IndexError, "output index out of range or repeated");
            ok = 0;
        }
        char what[320];
        if (ok) snprintf(what, sizeof what, "output '%.256s'", cg_graph_output_name(s->g, k));
        ok = ok && pycg_arg_wrap(obj, (cg_dtype)as, 1, what, &oargs[i]) == 0;
        if (ok) outs[k] = oargs[i].t;
    }
    if (ok && feeds_make(s, list, &f) == 0) {
        cg_status st = locked_run(s, &f, n_out, outs, 1);
        if (st) pycg_raise(st);
    }
    for (Py_ssize_t i = 0; oargs && i < n; i++) pycg_arg_release(&oargs[i]);
    free(oargs);
    free(outs);
    feeds_free(&f);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

PyObject *pycg_stats_dict(const cg_plan_stats *st) {
    return Py_BuildValue("{sKsKsKsKsKsKsKsKsd}", "runs", (unsigned long long)st->runs, "instances_built",
                         (unsigned long long)st->instances_built, "host_allocs", (unsigned long long)st->host_allocs,
                         "device_objects", (unsigned long long)st->device_objects, "kernel_launches",
                         (unsigned long long)st->kernel_launches, "copies", (unsigned long long)st->copies,
                         "bytes_copied", (unsigned long long)st->bytes_copied, "library_calls",
                         (unsigned long long)st->library_calls, "run_ms", st->run_ms);
}

/* stats() -> (last run, all runs, memory) as dicts. */
static PyObject *session_stats(PyObject *self, PyObject *unused) {
    (void)unused;
    pycg_session *s = (pycg_session *)self;
    if (check_ready(s) < 0) return NULL;
    cg_plan_stats last, total;
    cg_plan_memory_info mem;
    pthread_mutex_lock(&s->base.lock); /* runs hold it only briefly past their work */
    cg_status st = cg_plan_stats_get(s->p, &last, &total);
    if (!st) st = cg_plan_memory(s->p, &mem);
    pthread_mutex_unlock(&s->base.lock);
    if (st) return pycg_raise(st);
    return Py_BuildValue("(NN{sKsKsKsKsK})", pycg_stats_dict(&last), pycg_stats_dict(&total), "arena_bytes",
                         (unsigned long long)mem.arena_bytes, "param_bytes", (unsigned long long)mem.param_bytes,
                         "state_bytes", (unsigned long long)mem.state_bytes, "all_state_bytes",
                         (unsigned long long)mem.all_state_bytes, "instances", (unsigned long long)mem.instances);
}

/* write_profile(path): the runs traced so far, as a Chrome/Perfetto trace. */
static PyObject *session_write_profile(PyObject *self, PyObject *arg) {
    pycg_session *s = (pycg_session *)self;
    if (check_ready(s) < 0) return NULL;
    const char *path = PyUnicode_Check(arg) ? PyUnicode_AsUTF8AndSize(arg, NULL) : NULL;
    if (!path && !PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "path must be a str");
    if (!path) return NULL;
    if (!s->prof) return pycg_raise_msg(CG_ERR_INVALID_ARGUMENT, "the session was made without profile=True");
    cg_status st;
    PyThreadState *saved = PyEval_SaveThread();
    pthread_mutex_lock(&s->base.lock);
    st = cg_profiler_write_trace(s->prof, path);
    pthread_mutex_unlock(&s->base.lock);
    PyEval_RestoreThread(saved);
    if (st) return pycg_raise(st);
    Py_RETURN_NONE;
}

/* describe(bindings, dot) -> the plan as text (or Graphviz). */
static PyObject *session_describe(PyObject *self, PyObject *args) {
    pycg_session *s = (pycg_session *)self;
    const char *bindings = NULL;
    int dot = 0;
    if (check_ready(s) < 0 || !PyArg_ParseTuple(args, "|zp", &bindings, &dot)) return NULL;
    char *text = NULL;
    cg_status st;
    PyThreadState *saved = PyEval_SaveThread();
    pthread_mutex_lock(&s->base.lock);
    st = cg_plan_describe(s->p, bindings, dot, &text);
    pthread_mutex_unlock(&s->base.lock);
    PyEval_RestoreThread(saved);
    if (st) return pycg_raise(st);
    PyObject *r = PyUnicode_FromString(text);
    free(text);
    return r;
}

static PyObject *session_device(PyObject *self, void *unused) {
    (void)unused;
    pycg_session *s = (pycg_session *)self;
    if (check_ready(s) < 0) return NULL;
    return PyUnicode_FromString(cg_plan_device(s->p));
}

/* rewrites_fired() -> {name: count} of the rewrites that changed the model. */
static PyObject *session_fired(PyObject *self, PyObject *unused) {
    (void)unused;
    pycg_session *s = (pycg_session *)self;
    if (check_ready(s) < 0) return NULL;
    PyObject *d = PyDict_New();
    for (int i = 0; d && i < cg_rewrite_count(); i++) {
        int n = cg_model_rewrite_fired(s->m, i);
        PyObject *v = n > 0 ? PyLong_FromLong(n) : NULL;
        if (n > 0 && (!v || PyDict_SetItemString(d, cg_rewrite_name(i), v) < 0)) Py_CLEAR(d);
        Py_XDECREF(v);
    }
    return d;
}

/* keep_input(name, keep): see cg_plan_keep_input. */
static PyObject *session_keep_input(PyObject *self, PyObject *args) {
    pycg_session *s = (pycg_session *)self;
    const char *name;
    int keep;
    if (check_ready(s) < 0 || !PyArg_ParseTuple(args, "sp", &name, &keep)) return NULL;
    pthread_mutex_lock(&s->base.lock);
    cg_status st = cg_plan_keep_input(s->p, name, keep);
    pthread_mutex_unlock(&s->base.lock);
    if (st) return pycg_raise(st);
    Py_RETURN_NONE;
}

static PyMethodDef session_methods[] = {
    {"io", session_io, METH_O, "io(outputs) -> [(name, dtype, shape)] of the inputs (False) or outputs (True)."},
    {"run", session_run, METH_VARARGS, "run(feeds, wanted) -> [Tensor]."},
    {"run_into", session_run_into, METH_VARARGS, "run_into(feeds, outs): write into the given arrays."},
    {"stats", session_stats, METH_NOARGS, "stats() -> (last run, all runs, memory)."},
    {"write_profile", session_write_profile, METH_O, "write_profile(path): the trace of the profiled runs."},
    {"describe", session_describe, METH_VARARGS, "describe(bindings=None, dot=False) -> the plan as text."},
    {"rewrites_fired", session_fired, METH_NOARGS, "rewrites_fired() -> {rewrite: places changed}."},
    {"keep_input", session_keep_input, METH_VARARGS, "keep_input(name, keep): keep an input on its devices."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef session_getset[] = {{"device", session_device, NULL, "the plan's device", NULL},
                                       {NULL, NULL, NULL, NULL, NULL}};

static PyType_Slot session_slots[] = {{Py_tp_dealloc, session_dealloc},
                                      {Py_tp_init, session_init},
                                      {Py_tp_new, PyType_GenericNew},
                                      {Py_tp_methods, session_methods},
                                      {Py_tp_getset, session_getset},
                                      {Py_tp_doc, "The C side of clgraph.Session (use that class)."},
                                      {0, NULL}};

PyType_Spec pycg_session_spec = {"clgraph._clgraph.Session", sizeof(pycg_session), 0,
                                 Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, session_slots};
