/* Tensors across the buffer protocol: Tensor (a cg_tensor the extension
 * made, its bytes exported to numpy without a copy) and the wrapping of a
 * caller's array as a cg_tensor (read in place as an input, written in
 * place as an output of run_into). */
#include "pycg.h"

#include <string.h>

typedef struct {
    PyObject_HEAD cg_tensor *t;
    Py_ssize_t shape[CG_MAX_DIMS], strides[CG_MAX_DIMS];
} pycg_tensor;

/* The struct format of a dtype's storage: its own where Python has one,
 * else the integer of its bits (bf16 as 'H', the 8-bit floats as 'B'),
 * which the Python layer views as ml_dtypes' type. */
static const char *format_of(cg_dtype t) {
    switch (t) {
    case CG_F32: return "f";
    case CG_I32: return "i";
    case CG_F16: return "e";
    case CG_I64: return "q";
    case CG_BOOL: return "?";
    case CG_I16: return "h";
    case CG_BF16:
    case CG_U16: return "H";
    case CG_U32: return "I";
    case CG_U64: return "Q";
    case CG_I8:
    case CG_I4:
    case CG_I2: return "b";
    default: return "B"; /* u8, u4, u2 and the 8- and 4-bit floats */
    }
}

cg_dtype pycg_dtype_of_format(const char *f, Py_ssize_t itemsize) {
    if (!f) f = "B";
    if (*f == '<' || *f == '=' || *f == '@' || *f == '|') f++; /* native order on the little-endian hosts built for */
    if (!f[0] || f[1]) return (cg_dtype)0;
    switch (f[0]) {
    case 'f': return itemsize == 4 ? CG_F32 : (cg_dtype)0;
    case 'e': return CG_F16;
    case '?': return CG_BOOL;
    case 'b': return CG_I8;
    case 'B': return CG_U8;
    case 'h': return CG_I16;
    case 'H': return CG_U16;
    case 'i':
    case 'l':
    case 'q': return itemsize == 4 ? CG_I32 : itemsize == 8 ? CG_I64 : (cg_dtype)0;
    case 'I':
    case 'L':
    case 'Q': return itemsize == 4 ? CG_U32 : itemsize == 8 ? CG_U64 : (cg_dtype)0;
    default: return (cg_dtype)0;
    }
}

PyObject *pycg_tensor_new(cg_tensor *t) {
    pycg_tensor *o = PyObject_New(pycg_tensor, (PyTypeObject *)pycg_tensor_type);
    if (!o) {
        cg_tensor_free(t);
        return NULL;
    }
    o->t = t;
    Py_ssize_t step = (Py_ssize_t)cg_dtype_size(cg_tensor_dtype(t));
    for (int d = cg_tensor_ndim(t) - 1; d >= 0; d--) {
        o->shape[d] = (Py_ssize_t)cg_tensor_dim(t, d);
        o->strides[d] = step;
        step *= o->shape[d];
    }
    return (PyObject *)o;
}

static void tensor_dealloc(PyObject *self) {
    pycg_tensor *o = (pycg_tensor *)self;
    cg_tensor_free(o->t);
    PyTypeObject *tp = Py_TYPE(self);
    freefunc f = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    f(self);
    Py_DECREF(tp);
}

static int tensor_getbuffer(PyObject *self, Py_buffer *v, int flags) {
    pycg_tensor *o = (pycg_tensor *)self;
    cg_tensor *t = o->t;
    v->buf = cg_tensor_data(t);
    v->obj = Py_NewRef(self);
    v->len = (Py_ssize_t)(cg_tensor_numel(t) * (int64_t)cg_dtype_size(cg_tensor_dtype(t)));
    v->readonly = 0;
    v->itemsize = (Py_ssize_t)cg_dtype_size(cg_tensor_dtype(t));
    v->format = (flags & PyBUF_FORMAT) ? (char *)format_of(cg_tensor_dtype(t)) : NULL;
    v->ndim = cg_tensor_ndim(t);
    v->shape = (flags & PyBUF_ND) == PyBUF_ND ? o->shape : NULL;
    v->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? o->strides : NULL;
    v->suboffsets = NULL;
    v->internal = NULL;
    if (!v->shape) { /* a plain run of len bytes, as PyBuffer_FillInfo gives */
        v->ndim = 1;
        v->itemsize = 1;
    }
    return 0; /* the buffer holds a reference (v->obj): the tensor outlives every export */
}

static PyObject *tensor_dtype(PyObject *self, void *unused) {
    (void)unused;
    return pycg_dtype_name(cg_tensor_dtype(((pycg_tensor *)self)->t));
}

static PyObject *tensor_shape(PyObject *self, void *unused) {
    (void)unused;
    cg_tensor *t = ((pycg_tensor *)self)->t;
    PyObject *tup = PyTuple_New(cg_tensor_ndim(t));
    for (int d = 0; tup && d < cg_tensor_ndim(t); d++) {
        PyObject *n = PyLong_FromLongLong((long long)cg_tensor_dim(t, d));
        if (!n || PyTuple_SetItem(tup, d, n) < 0) Py_CLEAR(tup);
    }
    return tup;
}

static PyGetSetDef tensor_getset[] = {{"dtype", tensor_dtype, NULL, "clgraph dtype name ('f32', 'bf16', ...)", NULL},
                                      {"shape", tensor_shape, NULL, "shape as a tuple", NULL},
                                      {NULL, NULL, NULL, NULL, NULL}};

static PyType_Slot tensor_slots[] = {
    {Py_tp_dealloc, tensor_dealloc},
    {Py_tp_getset, tensor_getset},
    {Py_tp_doc, "A tensor computed by clgraph; numpy.asarray(t) views its memory without a copy."},
    {Py_bf_getbuffer, tensor_getbuffer},
    {0, NULL}};

PyType_Spec pycg_tensor_spec = {"clgraph._clgraph.Tensor", sizeof(pycg_tensor), 0, Py_TPFLAGS_DEFAULT, tensor_slots};

int pycg_arg_wrap(PyObject *obj, cg_dtype as, int writable, const char *what, pycg_arg *a) {
    memset(a, 0, sizeof *a);
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, &a->view, flags) < 0) {
        PyErr_Clear();
        char tn[128];
        pycg_type_name(obj, tn, sizeof tn);
        pycg_raise_msg(CG_ERR_INVALID_ARGUMENT, "%s: expected a C-contiguous%s array, got %s", what,
                       writable ? " writable" : "", tn);
        return -1;
    }
    a->held = 1;
    cg_dtype t = as ? as : pycg_dtype_of_format(a->view.format, a->view.itemsize);
    if (!t || (Py_ssize_t)cg_dtype_size(t) != a->view.itemsize) {
        pycg_raise_msg(CG_ERR_UNSUPPORTED, "%s: clgraph has no dtype for buffer format '%s' (%zd-byte items)", what,
                       a->view.format ? a->view.format : "B", a->view.itemsize);
        pycg_arg_release(a);
        return -1;
    }
    if (a->view.ndim > CG_MAX_DIMS) {
        pycg_raise_msg(CG_ERR_INVALID_ARGUMENT, "%s: %d dimensions, clgraph takes at most %d", what, a->view.ndim,
                       CG_MAX_DIMS);
        pycg_arg_release(a);
        return -1;
    }
    int64_t dims[CG_MAX_DIMS];
    for (int d = 0; d < a->view.ndim; d++) dims[d] = (int64_t)a->view.shape[d];
    void *data = a->view.len ? a->view.buf : NULL;
    if (cg_tensor_wrap(t, a->view.ndim, dims, data, &a->t) != CG_OK) {
        pycg_raise_msg(CG_ERR_INVALID_ARGUMENT, "%s: %s", what, cg_last_error());
        pycg_arg_release(a);
        return -1;
    }
    return 0;
}

void pycg_arg_release(pycg_arg *a) {
    cg_tensor_free(a->t);
    a->t = NULL;
    if (a->held) PyBuffer_Release(&a->view);
    a->held = 0;
}
