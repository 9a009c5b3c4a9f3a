/* Translator: a seq2seq model directory (clgraph/seq2seq.h) for the
 * Python Translator class, which takes and gives strings and tokens; this
 * side decodes token ids. One handle runs one translation at a time
 * (seq2seq.h, "Threads"): its runs queue on a mutex taken without the GIL. */
#include "pycg.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "clgraph/seq2seq.h"

typedef struct {
    pycg_base base;
    cg_s2s *m;
} pycg_translator;

static void translator_dealloc(PyObject *self) {
    cg_s2s_free(((pycg_translator *)self)->m);
    pycg_base_dealloc(self);
}

typedef struct {
    const char *dir, *device, *place;
    int wdt;
} translator_args;

static cg_status translator_load(PyObject *self, void *arg) {
    pycg_translator *t = (pycg_translator *)self;
    const translator_args *a = arg;
    cg_plan_options po = {.struct_size = sizeof po, .device = a->device, .place = a->place};
    cg_s2s_load_options lo = {.struct_size = sizeof lo, .weights_dtype = (cg_dtype)a->wdt};
    return cg_s2s_load(t->base.ctx, a->dir, &po, &lo, &t->m);
}

/* Translator(dir, device=None, place=None, plugins=(), threads=0, weights_dtype=0) */
static int translator_init(PyObject *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"dir", "device", "place", "plugins", "threads", "weights_dtype", NULL};
    translator_args a = {NULL, NULL, NULL, 0};
    PyObject *plugins = NULL;
    int threads = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "s|zzOii", names, &a.dir, &a.device, &a.place, &plugins, &threads,
                                     &a.wdt))
        return -1;
    return pycg_base_load(self, "Translator", threads, plugins, translator_load, &a);
}

static int check_ready(pycg_translator *t) { return pycg_base_ready((PyObject *)t, "Translator"); }

/* The sources as int32 arrays; *n set even on failure (for sources_free). */
static int sources_make(PyObject *list, int32_t ***src, int **len, int *n) {
    Py_ssize_t count = PyList_Check(list) ? PyList_Size(list) : -1;
    *n = 0;
    *src = NULL;
    *len = NULL;
    if (count < 0) {
        PyErr_SetString(PyExc_TypeError, "sources must be a list of lists of token ids");
        return -1;
    }
    *src = calloc((size_t)count + 1, sizeof **src);
    *len = calloc((size_t)count + 1, sizeof **len);
    if (!*src || !*len) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *fast = PySequence_Fast(PyList_GetItem(list, i), "each source must be a sequence of token ids");
        if (!fast) return -1;
        Py_ssize_t k = PySequence_Size(fast);
        (*src)[i] = malloc(sizeof(int32_t) * ((size_t)k + 1));
        *n = (int)i + 1;
        for (Py_ssize_t j = 0; (*src)[i] && j < k; j++) {
            PyObject *item = PySequence_GetItem(fast, j);
            long v = item ? PyLong_AsLong(item) : -1;
            Py_XDECREF(item);
            if (PyErr_Occurred() || v < INT32_MIN || v > INT32_MAX) {
                Py_DECREF(fast);
                if (!PyErr_Occurred())
                    PyErr_Format(PyExc_OverflowError, "source %zd: token id %ld is out of range", i, v);
                return -1;
            }
            (*src)[i][j] = (int32_t)v;
        }
        Py_DECREF(fast);
        if (!(*src)[i]) {
            PyErr_NoMemory();
            return -1;
        }
        (*len)[i] = (int)k;
    }
    return 0;
}

static void sources_free(int32_t **src, int *len, int n) {
    for (int i = 0; src && i < n; i++) free(src[i]);
    free(src);
    free(len);
}

/* One hypothesis as (ids list, score, attention bytes or None, steps). */
static PyObject *hyp_object(const cg_s2s_hyp *h, int src_len) {
    PyObject *ids = PyList_New(h->n_tokens);
    for (int j = 0; ids && j < h->n_tokens; j++) {
        PyObject *v = PyLong_FromLong(h->tokens[j]);
        if (!v || PyList_SetItem(ids, j, v) < 0) Py_CLEAR(ids);
    }
    if (!ids) return NULL;
    PyObject *att = Py_None;
    if (h->attention)
        att = PyBytes_FromStringAndSize((const char *)h->attention,
                                        (Py_ssize_t)sizeof(float) * h->n_steps * (Py_ssize_t)src_len);
    else Py_INCREF(att);
    if (!att) {
        Py_DECREF(ids);
        return NULL;
    }
    return Py_BuildValue("(NdNi)", ids, h->score, att, h->n_steps);
}

static PyObject *results_object(cg_s2s_result *res, int n) {
    PyObject *list = PyList_New(n);
    for (int i = 0; list && i < n; i++) {
        PyObject *hyps = PyList_New(res[i].n_hyps);
        for (int h = 0; hyps && h < res[i].n_hyps; h++) {
            PyObject *o = hyp_object(&res[i].hyps[h], res[i].src_len);
            if (!o || PyList_SetItem(hyps, h, o) < 0) Py_CLEAR(hyps);
        }
        PyObject *item = hyps ? Py_BuildValue("(iN)", res[i].src_len, hyps) : NULL;
        if (!item || PyList_SetItem(list, i, item) < 0) Py_CLEAR(list);
    }
    return list;
}

/* translate(sources, beam, nbest, alpha, max_len, min_len, batch, attention,
 *           flags, attention_head) -> [(src_len, [(ids, score, attention bytes|None, steps)])] */
static PyObject *translator_translate(PyObject *self, PyObject *args) {
    pycg_translator *t = (pycg_translator *)self;
    PyObject *list;
    cg_s2s_options o = {.struct_size = sizeof o};
    if (check_ready(t) < 0 || !PyArg_ParseTuple(args, "Oiidiiipii", &list, &o.beam, &o.nbest, &o.alpha, &o.max_len,
                                                &o.min_len, &o.batch, &o.attention, &o.flags, &o.attention_head))
        return NULL;
    int32_t **src;
    int *len, n;
    PyObject *out = NULL;
    if (sources_make(list, &src, &len, &n) == 0) {
        cg_s2s_result *res = calloc((size_t)n + 1, sizeof *res);
        cg_status st = CG_ERR_NO_MEMORY;
        if (res) {
            PyThreadState *saved = PyEval_SaveThread();
            pthread_mutex_lock(&t->base.lock);
            st = cg_s2s_translate(t->m, &o, n, (const int32_t *const *)src, len, res, NULL, NULL);
            pthread_mutex_unlock(&t->base.lock);
            PyEval_RestoreThread(saved);
        }
        out = st ? pycg_raise(st) : results_object(res, n);
        for (int i = 0; res && i < n; i++) cg_s2s_result_clear(&res[i]);
        free(res);
    }
    sources_free(src, len, n);
    return out;
}

/* tokenize(text) -> [ids] by the model's tokenizer (chars or words). */
static PyObject *translator_tokenize(PyObject *self, PyObject *arg) {
    pycg_translator *t = (pycg_translator *)self;
    Py_ssize_t size;
    const char *text = check_ready(t) < 0 ? NULL : PyUnicode_AsUTF8AndSize(arg, &size);
    if (!text) return NULL;
    int32_t *ids = NULL;
    int n = 0;
    if (cg_s2s_tokenize(t->m, text, &ids, &n)) return pycg_raise(CG_ERR_INVALID_ARGUMENT);
    PyObject *list = PyList_New(n);
    for (int i = 0; list && i < n; i++) {
        PyObject *v = PyLong_FromLong(ids[i]);
        if (!v || PyList_SetItem(list, i, v) < 0) Py_CLEAR(list);
    }
    free(ids);
    return list;
}

/* detokenize(ids) -> text. */
static PyObject *translator_detokenize(PyObject *self, PyObject *arg) {
    pycg_translator *t = (pycg_translator *)self;
    int32_t **src;
    int *len, n;
    if (check_ready(t) < 0) return NULL;
    PyObject *wrap = PyList_New(1);
    if (!wrap) return NULL;
    Py_INCREF(arg);
    PyList_SetItem(wrap, 0, arg);
    PyObject *out = NULL;
    if (sources_make(wrap, &src, &len, &n) == 0) {
        char *text = NULL;
        cg_status st = cg_s2s_detokenize(t->m, src[0], len[0], &text);
        out = st ? pycg_raise(st) : PyUnicode_FromString(text);
        free(text);
    }
    sources_free(src, len, n);
    Py_DECREF(wrap);
    return out;
}

/* vocab(target) -> [token] of the source (False) or target (True) vocabulary. */
static PyObject *translator_vocab(PyObject *self, PyObject *arg) {
    pycg_translator *t = (pycg_translator *)self;
    int target = check_ready(t) < 0 ? -1 : PyObject_IsTrue(arg);
    if (target < 0) return NULL;
    PyObject *list = PyList_New(0);
    const char *tok;
    for (int32_t id = 0; list && (tok = cg_s2s_token(t->m, target, id)) != NULL; id++) {
        PyObject *s = PyUnicode_FromString(tok);
        if (!s || PyList_Append(list, s) < 0) Py_CLEAR(list);
        Py_XDECREF(s);
    }
    return list;
}

/* info() -> (family, tokenizer, unk_id, source vocabulary size, target
 * vocabulary size), cg_s2s_get_info's codes. */
static PyObject *translator_info(PyObject *self, PyObject *unused) {
    (void)unused;
    pycg_translator *t = (pycg_translator *)self;
    if (check_ready(t) < 0) return NULL;
    cg_s2s_info i = {.struct_size = sizeof i};
    cg_status st = cg_s2s_get_info(t->m, &i);
    if (st) return pycg_raise(st);
    return Py_BuildValue("(iiiii)", i.family, i.tokenizer, (int)i.unk_id, (int)i.src_vocab, (int)i.tgt_vocab);
}

/* stats() -> (encoder totals, decoder totals). */
static PyObject *translator_stats(PyObject *self, PyObject *unused) {
    (void)unused;
    pycg_translator *t = (pycg_translator *)self;
    if (check_ready(t) < 0) return NULL;
    cg_plan_stats enc, dec;
    pthread_mutex_lock(&t->base.lock);
    cg_status st = cg_s2s_stats(t->m, &enc, &dec);
    pthread_mutex_unlock(&t->base.lock);
    if (st) return pycg_raise(st);
    return Py_BuildValue("(NN)", pycg_stats_dict(&enc), pycg_stats_dict(&dec));
}

static PyMethodDef translator_methods[] = {
    {"translate", translator_translate, METH_VARARGS,
     "translate(sources, beam, nbest, alpha, max_len, min_len, batch, "
     "attention, flags, attention_head) -> results."},
    {"tokenize", translator_tokenize, METH_O, "tokenize(text) -> source token ids."},
    {"detokenize", translator_detokenize, METH_O, "detokenize(ids) -> target text."},
    {"vocab", translator_vocab, METH_O, "vocab(target) -> the tokens of a vocabulary, by id."},
    {"stats", translator_stats, METH_NOARGS, "stats() -> (encoder, decoder) plan totals."},
    {"info", translator_info, METH_NOARGS,
     "info() -> (family, tokenizer, unk_id, source vocabulary size, target vocabulary size)."},
    {NULL, NULL, 0, NULL}};

static PyType_Slot translator_slots[] = {{Py_tp_dealloc, translator_dealloc},
                                         {Py_tp_init, translator_init},
                                         {Py_tp_new, PyType_GenericNew},
                                         {Py_tp_methods, translator_methods},
                                         {Py_tp_doc, "The C side of clgraph.Translator (use that class)."},
                                         {0, NULL}};

PyType_Spec pycg_translator_spec = {"clgraph._clgraph.Translator", sizeof(pycg_translator), 0,
                                    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, translator_slots};
