/* What Session, Translator and Forecaster share: a context of their own
 * (CPU threads, plugins), a lock that serialises their calls (the C API
 * allows one thread at a time per plan or model), and loading with the GIL
 * released. */
#include "pycg.h"

int pycg_base_load(PyObject *self, const char *type, int threads, PyObject *plugins, pycg_load_fn load, void *arg) {
    pycg_base *b = (pycg_base *)self;
    if (b->ctx || b->lock_init) {
        PyErr_Format(PyExc_RuntimeError, "%s is already initialised", type);
        return -1;
    }
    char **pl;
    int n_pl;
    if (pycg_strlist(plugins, "plugins", &pl, &n_pl) < 0) return -1;
    pthread_mutex_init(&b->lock, NULL);
    b->lock_init = 1;
    PyThreadState *saved = PyEval_SaveThread();
    cg_status st = pycg_context(threads, pl, n_pl, &b->ctx);
    if (!st) st = load(self, arg);
    PyEval_RestoreThread(saved);
    pycg_strlist_free(pl, n_pl);
    if (st) {
        pycg_raise(st);
        return -1;
    }
    b->ready = 1;
    return 0;
}

int pycg_base_ready(PyObject *self, const char *type) {
    if (((pycg_base *)self)->ready) return 0;
    PyErr_Format(PyExc_RuntimeError, "%s is not initialised", type);
    return -1;
}

void pycg_base_dealloc(PyObject *self) {
    pycg_base *b = (pycg_base *)self;
    cg_context_free(b->ctx);
    if (b->lock_init) pthread_mutex_destroy(&b->lock);
    PyTypeObject *tp = Py_TYPE(self);
    freefunc f = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    f(self);
    Py_DECREF(tp);
}
