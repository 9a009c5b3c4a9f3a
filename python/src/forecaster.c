/* Forecaster: an attention-RNN forecaster directory (clgraph/forecast.h)
 * for the Python Forecaster class, which takes numpy arrays or pandas
 * frames; this side takes float64 [T, C] buffers and gives raw forecasts. */
#include "pycg.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "clgraph/forecast.h"

typedef struct {
    pycg_base base;
    cg_forecaster *m;
} pycg_forecaster;

static void forecaster_dealloc(PyObject *self) {
    cg_forecast_free(((pycg_forecaster *)self)->m);
    pycg_base_dealloc(self);
}

typedef struct {
    const char *dir, *device, *place;
} forecaster_args;

static cg_status forecaster_load(PyObject *self, void *arg) {
    pycg_forecaster *f = (pycg_forecaster *)self;
    const forecaster_args *a = arg;
    cg_plan_options po = {.struct_size = sizeof po, .device = a->device, .place = a->place};
    return cg_forecast_load(f->base.ctx, a->dir, &po, &f->m);
}

/* Forecaster(dir, device=None, place=None, plugins=(), threads=0) */
static int forecaster_init(PyObject *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"dir", "device", "place", "plugins", "threads", NULL};
    forecaster_args a = {NULL, NULL, NULL};
    PyObject *plugins = NULL;
    int threads = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "s|zzOi", names, &a.dir, &a.device, &a.place, &plugins, &threads))
        return -1;
    return pycg_base_load(self, "Forecaster", threads, plugins, forecaster_load, &a);
}

static int check_ready(pycg_forecaster *f) { return pycg_base_ready((PyObject *)f, "Forecaster"); }

/* columns() -> (names, window). */
static PyObject *forecaster_columns(PyObject *self, PyObject *unused) {
    (void)unused;
    pycg_forecaster *f = (pycg_forecaster *)self;
    if (check_ready(f) < 0) return NULL;
    int c = cg_forecast_channels(f->m);
    PyObject *names = PyList_New(c);
    for (int i = 0; names && i < c; i++) {
        PyObject *s = PyUnicode_FromString(cg_forecast_column(f->m, i));
        if (!s || PyList_SetItem(names, i, s) < 0) Py_CLEAR(names);
    }
    return names ? Py_BuildValue("(Ni)", names, cg_forecast_window(f->m)) : NULL;
}

static PyObject *int_list(const int *v, int n) {
    PyObject *list = PyList_New(n);
    for (int i = 0; list && i < n; i++) {
        PyObject *o = PyLong_FromLong(v[i]);
        if (!o || PyList_SetItem(list, i, o) < 0) Py_CLEAR(list);
    }
    return list;
}

/* One result as (values bytes [horizon x C] f64, attention bytes or None,
 * first list or None, count list or None). */
static PyObject *result_object(const cg_forecast_result *r) {
    PyObject *vals = PyBytes_FromStringAndSize((const char *)r->values,
                                               (Py_ssize_t)sizeof(double) * r->horizon * (Py_ssize_t)r->channels);
    if (!r->attention) return vals ? Py_BuildValue("(NOOO)", vals, Py_None, Py_None, Py_None) : NULL;
    PyObject *att = PyBytes_FromStringAndSize((const char *)r->attention,
                                              (Py_ssize_t)sizeof(float) * r->horizon * (Py_ssize_t)r->window);
    PyObject *first = int_list(r->att_first, r->horizon), *count = int_list(r->att_count, r->horizon);
    if (!vals || !att || !first || !count) {
        Py_XDECREF(vals);
        Py_XDECREF(att);
        Py_XDECREF(first);
        Py_XDECREF(count);
        return NULL;
    }
    return Py_BuildValue("(NNNN)", vals, att, first, count);
}

/* The histories' buffers (float64, C-contiguous [T, C]), held in views. */
static int series_make(pycg_forecaster *f, PyObject *list, Py_buffer *views, cg_forecast_series *series, int *held) {
    const int c = cg_forecast_channels(f->m);
    for (Py_ssize_t i = 0; i < PyList_Size(list); i++) {
        Py_buffer *v = &views[i];
        if (PyObject_GetBuffer(PyList_GetItem(list, i), v, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return -1;
        (*held)++;
        const char *fmt = v->format ? v->format : "B";
        if (*fmt == '<' || *fmt == '=' || *fmt == '@') fmt++;
        if (strcmp(fmt, "d") || v->ndim != 2 || v->shape[1] != c || v->shape[0] < 1 || v->shape[0] > INT32_MAX) {
            pycg_raise_msg(CG_ERR_INVALID_ARGUMENT, "series %zd: expected float64 [T >= 1, %d], got %s with %d dims", i,
                           c, v->format ? v->format : "B", v->ndim);
            return -1;
        }
        series[i].values = v->buf;
        series[i].length = (int)v->shape[0];
    }
    return 0;
}

/* forecast(series, horizon, batch, attention) -> [result]. */
static PyObject *forecaster_forecast(PyObject *self, PyObject *args) {
    pycg_forecaster *f = (pycg_forecaster *)self;
    PyObject *list;
    cg_forecast_options o = {.struct_size = sizeof o};
    if (check_ready(f) < 0 || !PyArg_ParseTuple(args, "O!iip", &PyList_Type, &list, &o.horizon, &o.batch, &o.attention))
        return NULL;
    Py_ssize_t n = PyList_Size(list);
    Py_buffer *views = calloc((size_t)n + 1, sizeof *views);
    cg_forecast_series *series = calloc((size_t)n + 1, sizeof *series);
    cg_forecast_result *res = calloc((size_t)n + 1, sizeof *res);
    int held = 0;
    PyObject *out = NULL;
    if (!views || !series || !res) PyErr_NoMemory();
    else if (series_make(f, list, views, series, &held) == 0) {
        cg_status st;
        PyThreadState *saved = PyEval_SaveThread();
        pthread_mutex_lock(&f->base.lock);
        st = cg_forecast_run(f->m, &o, (int)n, series, res, NULL, NULL);
        pthread_mutex_unlock(&f->base.lock);
        PyEval_RestoreThread(saved);
        if (st) pycg_raise(st);
        else {
            out = PyList_New(n);
            for (Py_ssize_t i = 0; out && i < n; i++) {
                PyObject *r = result_object(&res[i]);
                if (!r || PyList_SetItem(out, i, r) < 0) Py_CLEAR(out);
            }
        }
    }
    for (Py_ssize_t i = 0; res && i < n; i++) cg_forecast_result_clear(&res[i]);
    for (int i = 0; i < held; i++) PyBuffer_Release(&views[i]);
    free(views);
    free(series);
    free(res);
    return out;
}

static PyMethodDef forecaster_methods[] = {
    {"columns", forecaster_columns, METH_NOARGS, "columns() -> (column names, attention window)."},
    {"forecast", forecaster_forecast, METH_VARARGS, "forecast(series, horizon, batch, attention) -> results."},
    {NULL, NULL, 0, NULL}};

static PyType_Slot forecaster_slots[] = {{Py_tp_dealloc, forecaster_dealloc},
                                         {Py_tp_init, forecaster_init},
                                         {Py_tp_new, PyType_GenericNew},
                                         {Py_tp_methods, forecaster_methods},
                                         {Py_tp_doc, "The C side of clgraph.Forecaster (use that class)."},
                                         {0, NULL}};

PyType_Spec pycg_forecaster_spec = {"clgraph._clgraph.Forecaster", sizeof(pycg_forecaster), 0,
                                    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, forecaster_slots};
