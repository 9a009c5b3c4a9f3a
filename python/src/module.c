/* clgraph._clgraph: the module, its exception classes and the functions
 * that need no object (devices, version, build features, rewrites). */
#include "pycg.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

pycg_errors pycg_err;

/* The class of a status; NULL for CG_OK. */
static PyObject *class_of(cg_status s) {
    switch (s) {
    case CG_OK: return NULL;
    case CG_ERR_NO_MEMORY: return pycg_err.memory;
    case CG_ERR_IO: return pycg_err.file;
    case CG_ERR_NOT_FOUND: return pycg_err.not_found;
    case CG_ERR_PLUGIN: return pycg_err.plugin;
    case CG_ERR_KERNEL: return pycg_err.device;
    case CG_ERR_UNSUPPORTED: return pycg_err.unsupported;
    default: return pycg_err.invalid; /* invalid argument, parse, format, verify */
    }
}

/* The exception instance carries the status name in .status. */
static void set_error(cg_status s, const char *msg) {
    PyObject *cls = class_of(s);
    if (!cls) cls = pycg_err.base;
    PyObject *exc = PyObject_CallFunction(cls, "s", msg);
    if (!exc) return;
    PyObject *name = PyUnicode_FromString(cg_status_name(s));
    if (name && PyObject_SetAttrString(exc, "status", name) == 0) PyErr_SetObject(cls, exc);
    Py_XDECREF(name);
    Py_DECREF(exc);
}

PyObject *pycg_raise(cg_status s) {
    const char *msg = cg_last_error();
    set_error(s, msg && *msg ? msg : cg_status_name(s));
    return NULL;
}

PyObject *pycg_raise_msg(cg_status s, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    set_error(s, msg);
    return NULL;
}

void pycg_type_name(PyObject *obj, char *buf, size_t size) {
    PyObject *name = PyType_GetName(Py_TYPE(obj));
    const char *u = name ? PyUnicode_AsUTF8AndSize(name, NULL) : NULL;
    snprintf(buf, size, "%s", u ? u : "?");
    if (!u) PyErr_Clear();
    Py_XDECREF(name);
}

int pycg_opt_str(PyObject *obj, const char *what, char **out) {
    *out = NULL;
    if (!obj || obj == Py_None) return 0;
    if (!PyUnicode_Check(obj)) {
        char tn[128];
        pycg_type_name(obj, tn, sizeof tn);
        PyErr_Format(PyExc_TypeError, "%s must be a str or None, not %s", what, tn);
        return -1;
    }
    Py_ssize_t n;
    const char *s = PyUnicode_AsUTF8AndSize(obj, &n);
    if (!s) return -1;
    if ((Py_ssize_t)strlen(s) != n) {
        PyErr_Format(PyExc_ValueError, "%s must not contain a NUL character", what);
        return -1;
    }
    *out = strdup(s);
    if (!*out) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

int pycg_strlist(PyObject *seq, const char *what, char ***out, int *n) {
    *out = NULL;
    *n = 0;
    if (!seq || seq == Py_None) return 0;
    if (PyUnicode_Check(seq)) {
        PyErr_Format(PyExc_TypeError, "%s must be a sequence of str, not a str", what);
        return -1;
    }
    PyObject *fast = PySequence_Fast(seq, "must be a sequence of str");
    if (!fast) return -1;
    Py_ssize_t len = PySequence_Size(fast);
    *out = calloc((size_t)len + 1, sizeof **out);
    int rc = *out ? 0 : (PyErr_NoMemory(), -1);
    for (Py_ssize_t i = 0; !rc && i < len; i++) {
        PyObject *item = PySequence_GetItem(fast, i);
        rc = item ? pycg_opt_str(item, what, &(*out)[i]) : -1;
        Py_XDECREF(item);
        if (!rc) (*n)++;
    }
    Py_DECREF(fast);
    return rc;
}

void pycg_strlist_free(char **list, int n) {
    for (int i = 0; i < n; i++) free(list[i]);
    free(list);
}

cg_status pycg_context(int threads, char **plugins, int n_plugins, cg_context **out) {
    cg_context_options co = {
        .struct_size = sizeof co, .threads = threads, .plugins = (const char *const *)plugins, .n_plugins = n_plugins};
    return cg_context_create(&co, out);
}

PyObject *pycg_dtype_name(cg_dtype t) {
    const char *n = cg_dtype_name(t);
    return PyUnicode_FromString(n ? n : "?");
}

/* devices() -> [(name, description)], the CPU first. */
static PyObject *py_devices(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    int n;
    PyThreadState *saved = PyEval_SaveThread();
    n = cg_device_count(); /* enumerates OpenCL once: may compile nothing, but waits on drivers */
    PyEval_RestoreThread(saved);
    PyObject *list = PyList_New(0);
    for (int i = 0; list && i < n; i++) {
        char buf[512];
        const char *name = cg_device_describe(i, buf, sizeof buf);
        PyObject *item = name ? Py_BuildValue("(ss)", name, buf) : NULL;
        if (!item || PyList_Append(list, item) < 0) Py_CLEAR(list);
        Py_XDECREF(item);
    }
    return list;
}

/* device_note() -> why there is no OpenCL device, or "". */
static PyObject *py_device_note(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    const char *note = cg_device_note();
    return PyUnicode_FromString(note ? note : "");
}

static PyObject *py_version(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyUnicode_FromString(cg_version());
}

static PyObject *py_build_features(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyUnicode_FromString(cg_build_features());
}

/* rewrites() -> [(name, doc)] of the graph rewrites. */
static PyObject *py_rewrites(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    PyObject *list = PyList_New(0);
    for (int i = 0; list && i < cg_rewrite_count(); i++) {
        PyObject *item = Py_BuildValue("(ss)", cg_rewrite_name(i), cg_rewrite_doc(i));
        if (!item || PyList_Append(list, item) < 0) Py_CLEAR(list);
        Py_XDECREF(item);
    }
    return list;
}

/* dtypes() -> {name: (code, size)} of every clgraph dtype. */
static PyObject *py_dtypes(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    PyObject *d = PyDict_New();
    for (int t = 1; d && cg_dtype_size((cg_dtype)t); t++) {
        PyObject *v = Py_BuildValue("(in)", t, (Py_ssize_t)cg_dtype_size((cg_dtype)t));
        if (!v || PyDict_SetItemString(d, cg_dtype_name((cg_dtype)t), v) < 0) Py_CLEAR(d);
        Py_XDECREF(v);
    }
    return d;
}

static PyMethodDef methods[] = {
    {"devices", py_devices, METH_NOARGS, "devices() -> list of (name, description): the CPU, then OpenCL devices."},
    {"device_note", py_device_note, METH_NOARGS, "Why no OpenCL device was found, or ''."},
    {"version", py_version, METH_NOARGS, "The library's version."},
    {"build_features", py_build_features, METH_NOARGS, "Optional parts built in: 'opencl clblast onnx png'."},
    {"rewrites", py_rewrites, METH_NOARGS, "rewrites() -> list of (name, doc) of the graph rewrites."},
    {"dtypes", py_dtypes, METH_NOARGS, "dtypes() -> {name: (code, itemsize)}."},
    {NULL, NULL, 0, NULL}};

/* Adds exception class NAME (clgraph.NAME) with bases to the module. */
static PyObject *new_error(PyObject *m, const char *name, PyObject *bases, const char *doc) {
    char full[64];
    snprintf(full, sizeof full, "clgraph.%s", name);
    PyObject *cls = PyErr_NewExceptionWithDoc(full, doc, bases, NULL);
    if (cls && PyModule_AddObjectRef(m, name, cls) < 0) Py_CLEAR(cls);
    return cls;
}

static int add_errors(PyObject *m) {
    PyObject *b = pycg_err.base = new_error(m, "Error", PyExc_Exception,
                                            "Base of clgraph's errors; str() is the library's one-line message and "
                                            ".status the status name (e.g. 'CG_ERR_VERIFY').");
    if (!b) return -1;
    struct {
        PyObject **slot;
        const char *name;
        PyObject *other;
        const char *doc;
    } sub[] = {
        {&pycg_err.invalid, "InvalidInput", PyExc_ValueError,
         "A bad argument, a malformed graph, model or weight file, or wrong shapes."},
        {&pycg_err.not_found, "NotFound", PyExc_LookupError, "A named graph, input, output, weight or op is missing."},
        {&pycg_err.unsupported, "Unsupported", PyExc_NotImplementedError,
         "An op, dtype or feature this build or device does not have."},
        {&pycg_err.device, "DeviceError", PyExc_RuntimeError, "A device or one of its kernels failed."},
        {&pycg_err.file, "FileError", PyExc_OSError, "A file could not be opened, read or written."},
        {&pycg_err.memory, "OutOfMemory", PyExc_MemoryError, "An allocation failed."},
        {&pycg_err.plugin, "PluginError", PyExc_ImportError, "An operator plugin could not be loaded."},
    };
    for (size_t i = 0; i < sizeof sub / sizeof sub[0]; i++) {
        PyObject *bases = PyTuple_Pack(2, b, sub[i].other);
        *sub[i].slot = bases ? new_error(m, sub[i].name, bases, sub[i].doc) : NULL;
        Py_XDECREF(bases);
        if (!*sub[i].slot) return -1;
    }
    return 0;
}

PyObject *pycg_tensor_type;

static int exec_module(PyObject *m) {
    if (add_errors(m) < 0 || PyModule_AddFunctions(m, pycg_utility_methods) < 0) return -1;
    pycg_tensor_type = PyType_FromSpec(&pycg_tensor_spec);
    if (!pycg_tensor_type || PyModule_AddObjectRef(m, "Tensor", pycg_tensor_type) < 0) return -1;
    struct {
        PyType_Spec *spec;
        const char *name;
    } types[] = {
        {&pycg_session_spec, "Session"}, {&pycg_translator_spec, "Translator"}, {&pycg_forecaster_spec, "Forecaster"}};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        PyObject *tp = PyType_FromSpec(types[i].spec);
        if (!tp || PyModule_AddObject(m, types[i].name, tp) < 0) {
            Py_XDECREF(tp);
            return -1;
        }
    }
    return 0;
}

static PyModuleDef_Slot slots[] = {{Py_mod_exec, (void *)exec_module}, {0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT,
                                    "clgraph._clgraph",
                                    "clgraph's C library, for the clgraph package (see help(clgraph)).",
                                    0,
                                    methods,
                                    slots,
                                    NULL,
                                    NULL,
                                    NULL};

PyMODINIT_FUNC PyInit__clgraph(void) { return PyModuleDef_Init(&module); }
