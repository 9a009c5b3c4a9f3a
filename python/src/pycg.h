/* What the files of clgraph's Python extension (clgraph._clgraph) share.
 * The extension is built for CPython's stable ABI (Py_LIMITED_API 3.11:
 * the buffer protocol entered it then), so one build serves every later
 * interpreter; numpy is not needed to build it: arrays cross through the
 * buffer protocol, and the Python layer (clgraph/__init__.py) makes
 * ndarrays of what the extension returns. */
#ifndef CG_PYCG_H
#define CG_PYCG_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "clgraph/clgraph.h"
#include "clgraph/plugin.h" /* CG_MAX_DIMS */

#include <pthread.h>

/* The exception classes, made at import (module.c). */
typedef struct pycg_errors {
    PyObject *base;        /* clgraph.Error */
    PyObject *invalid;     /* InvalidInput: bad argument, malformed file, graph or shape */
    PyObject *not_found;   /* NotFound: a named graph, input, weight or op is missing */
    PyObject *unsupported; /* Unsupported: a feature, op or dtype this build or device lacks */
    PyObject *device;      /* DeviceError: a kernel or device failed */
    PyObject *file;        /* FileError: a file could not be read or written */
    PyObject *memory;      /* OutOfMemory */
    PyObject *plugin;      /* PluginError */
} pycg_errors;

extern pycg_errors pycg_err;

/* Raises the exception of status s with cg_last_error()'s message (the
 * one line of this thread's last failure; call with the GIL held, on the
 * thread that failed) and returns NULL. */
PyObject *pycg_raise(cg_status s);

/* Raises the exception of status s with a message of the caller's. */
PyObject *pycg_raise_msg(cg_status s, const char *fmt, ...);

/* A UTF-8 copy of str or None (NULL, no error, for None) into *out; -1
 * with a TypeError naming `what` otherwise. The caller frees *out. */
int pycg_opt_str(PyObject *obj, const char *what, char **out);

/* A sequence of str (None: empty) as n UTF-8 copies in *out; -1 with a
 * TypeError naming `what` otherwise. Free with pycg_strlist_free. */
int pycg_strlist(PyObject *seq, const char *what, char ***out, int *n);
void pycg_strlist_free(char **list, int n);

/* A context with `threads` CPU threads (0: the default) and the plugins;
 * no GIL needed. */
cg_status pycg_context(int threads, char **plugins, int n_plugins, cg_context **out);

/* The head of Session, Translator and Forecaster (base.c): their own
 * context, and the lock their calls take without the GIL. */
typedef struct pycg_base {
    PyObject_HEAD cg_context *ctx;
    pthread_mutex_t lock;
    int lock_init;
    int ready; /* loaded: the type's handles are set */
} pycg_base;

/* Loads the object's model into a new context: load(self, arg) with the
 * GIL released once the context is made. `type` names the class in the
 * errors (a second __init__); raises and returns -1 on failure. */
typedef cg_status (*pycg_load_fn)(PyObject *self, void *arg);
int pycg_base_load(PyObject *self, const char *type, int threads, PyObject *plugins, pycg_load_fn load, void *arg);

/* 0, or -1 with a RuntimeError when __init__ has not succeeded. */
int pycg_base_ready(PyObject *self, const char *type);

/* Frees the context and the lock, then the object: the end of a dealloc,
 * after the type freed what it loaded into the context. */
void pycg_base_dealloc(PyObject *self);

/* The name of obj's type, for messages (\"?\" when unknown). */
void pycg_type_name(PyObject *obj, char *buf, size_t size);

/* The Tensor type: an owned cg_tensor exposing its bytes through the
 * buffer protocol (tensor.c). */
extern PyType_Spec pycg_tensor_spec;
extern PyObject *pycg_tensor_type;

/* A new Tensor owning t (freed with it; on failure too). */
PyObject *pycg_tensor_new(cg_tensor *t);

/* The dtype of a buffer format ("f", "<i8", "?" ...) with item size
 * `itemsize`, or 0 when clgraph has none. */
cg_dtype pycg_dtype_of_format(const char *format, Py_ssize_t itemsize);

/* An array given by the caller, as a tensor: the buffer of obj (C-contiguous;
 * dtype from its format unless `as` is not 0: then the buffer holds raw
 * elements of `as`, and its item count must be a multiple of that size)
 * wrapped without a copy (writable: for outputs). `view` keeps the buffer
 * until pycg_arg_release. Raises and returns -1 on failure, naming `what`. */
typedef struct pycg_arg {
    Py_buffer view;
    int held;
    cg_tensor *t;
} pycg_arg;
int pycg_arg_wrap(PyObject *obj, cg_dtype as, int writable, const char *what, pycg_arg *a);
void pycg_arg_release(pycg_arg *a);

/* The Session type (session.c). */
extern PyType_Spec pycg_session_spec;

/* A plan's statistics as a dict (session.c). */
PyObject *pycg_stats_dict(const cg_plan_stats *st);

/* The Translator and Forecaster types (translator.c, forecaster.c). */
extern PyType_Spec pycg_translator_spec;
extern PyType_Spec pycg_forecaster_spec;

/* conform and narrow_weights (utility.c), added to the module's functions. */
extern PyMethodDef pycg_utility_methods[];

/* Module functions of session.c: the graph inputs' and outputs' types. */
PyObject *pycg_dtype_name(cg_dtype t);

#endif
