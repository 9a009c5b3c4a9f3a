/* vocab.json and the SentencePiece models of a MarianMT directory. */
#include "tf_vocab.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_json.h"
#include "error.h"
#include "strbuf.h"

typedef struct {
    const char *piece;
    int32_t id;
} piece_id;

static int by_piece(const void *a, const void *b) {
    return strcmp(((const piece_id *)a)->piece, ((const piece_id *)b)->piece);
}

/* ids in the order of their pieces (OPUS-MT's 58,101 pieces: qsort, not
 * an insertion sort). */
static cg_status sort_ids(int32_t *ids, int32_t n, char **piece, const char *path) {
    piece_id *tmp = malloc(sizeof *tmp * ((size_t)n + 1));
    if (!tmp) return cg_error(CG_ERR_NO_MEMORY, "%s: out of memory", path);
    for (int32_t i = 0; i < n; i++) tmp[i] = (piece_id){piece[ids[i]], ids[i]};
    qsort(tmp, (size_t)n, sizeof *tmp, by_piece);
    for (int32_t i = 0; i < n; i++) ids[i] = tmp[i].id;
    free(tmp);
    return CG_OK;
}

/* The table of vocab.json: {piece: id} with ids in [0, 2^24). */
static cg_status read_table(const char *path, tf_vocab *v) {
    cJSON *root;
    cg_status s = cg_cfg_read(path, &root);
    if (s) return s;
    int32_t max = -1, count = 0;
    for (const cJSON *e = root->child; e; e = e->next) {
        if (!cJSON_IsNumber(e) || e->valuedouble != (double)(int32_t)e->valuedouble || e->valuedouble < 0 ||
            e->valuedouble >= (1 << 24)) {
            char b[64];
            s = cg_error(CG_ERR_FORMAT, "%s: piece \"%s\": the id must be an integer in [0, 16777216), got %s", path,
                         e->string, cg_cfg_got(e, b, sizeof b));
            break;
        }
        if ((int32_t)e->valuedouble > max) max = (int32_t)e->valuedouble;
        count++;
    }
    v->n = max + 1;
    v->piece = s ? NULL : calloc((size_t)v->n + 1, sizeof *v->piece);
    v->order = s ? NULL : malloc(sizeof(int32_t) * ((size_t)count + 1));
    if (!s && (!v->piece || !v->order)) s = cg_error(CG_ERR_NO_MEMORY, "%s: out of memory", path);
    for (const cJSON *e = s ? NULL : root->child; e && !s; e = e->next) {
        int32_t id = (int32_t)e->valuedouble;
        if (v->piece[id])
            s = cg_error(CG_ERR_FORMAT, "%s: pieces \"%s\" and \"%s\" have the same id %d", path, v->piece[id],
                         e->string, id);
        else if (!(v->piece[id] = strdup(e->string))) s = cg_error(CG_ERR_NO_MEMORY, "%s: out of memory", path);
        else v->order[v->n_order++] = id;
    }
    cJSON_Delete(root);
    if (!s) s = sort_ids(v->order, v->n_order, v->piece, path);
    return s;
}

int32_t tf_vocab_find(const tf_vocab *v, const char *piece) {
    int32_t lo = 0, hi = v->n_order;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        int c = strcmp(v->piece[v->order[mid]], piece);
        if (c == 0) return v->order[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return -1;
}

cg_status tf_vocab_load(const char *dir, int32_t pad, int32_t eos, tf_vocab *out) {
    memset(out, 0, sizeof *out);
    cg_strbuf b = {0};
    cg_strbuf_cat(&b, dir, "/vocab.json", (const char *)NULL);
    char *path = cg_strbuf_take(&b);
    if (!path) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    cg_status s = read_table(path, out);
    out->pad = pad;
    out->eos = eos;
    out->unk = s ? -1 : tf_vocab_find(out, "<unk>");
    if (!s && out->unk < 0)
        s = cg_error(CG_ERR_FORMAT, "%s: has no \"<unk>\" piece (MarianTokenizer's unknown token)", path);
    for (int i = 0; !s && i < 2; i++) {
        const int32_t id = i ? eos : pad;
        if (id < 0 || id >= out->n || !out->piece[id])
            s = cg_error(CG_ERR_FORMAT, "%s: config.json's %s (%d) is not an id of a piece", path,
                         i ? "eos_token_id" : "pad_token_id", id);
    }
    free(path);
    const char *spm[2] = {"/source.spm", "/target.spm"};
    for (int i = 0; !s && i < 2; i++) {
        cg_strbuf_cat(&b, dir, spm[i], (const char *)NULL);
        path = cg_strbuf_take(&b);
        s = path ? tf_spm_load(path, i ? &out->tgt : &out->src) : cg_error(CG_ERR_NO_MEMORY, "out of memory");
        free(path);
    }
    if (s) tf_vocab_free(out);
    return s;
}

void tf_vocab_free(tf_vocab *v) {
    for (int32_t i = 0; v->piece && i < v->n; i++) free(v->piece[i]);
    free(v->piece);
    free(v->order);
    tf_spm_free(v->src);
    tf_spm_free(v->tgt);
    memset(v, 0, sizeof *v);
}

cg_status tf_vocab_encode(const tf_vocab *v, const char *text, int32_t **ids, int *n) {
    char **pieces;
    int np;
    *ids = NULL;
    *n = 0;
    cg_status s = tf_spm_encode(v->src, text, &pieces, &np);
    if (s) return s;
    *ids = malloc(sizeof(int32_t) * ((size_t)np + 1));
    if (!*ids) s = cg_error(CG_ERR_NO_MEMORY, "out of memory tokenizing a text of %zu bytes", strlen(text));
    for (int i = 0; !s && i < np; i++) {
        int32_t id = tf_vocab_find(v, pieces[i]);
        (*ids)[i] = id < 0 ? v->unk : id;
    }
    if (!s) {
        (*ids)[np] = v->eos;
        *n = np + 1;
    }
    free(pieces);
    return s;
}

/* MarianTokenizer's last touches on a decoded text, in place: every U+2581
 * (the word boundary a piece target.spm lacks still spells out) becomes a
 * space, then the ends are stripped of whitespace. */
static void marian_finish(char *t) {
    char *w = t;
    for (const char *r = t; *r;) {
        if ((unsigned char)r[0] == 0xE2 && (unsigned char)r[1] == 0x96 && (unsigned char)r[2] == 0x81) {
            *w++ = ' ';
            r += 3;
        } else {
            *w++ = *r++;
        }
    }
    while (w > t && strchr(" \t\n\r\v\f", w[-1])) w--;
    *w = 0;
    size_t lead = strspn(t, " \t\n\r\v\f");
    memmove(t, t + lead, strlen(t + lead) + 1);
}

cg_status tf_vocab_decode(const tf_vocab *v, const int32_t *ids, int n, char **text) {
    *text = NULL;
    const char **pieces = malloc(sizeof(char *) * ((size_t)n + 1));
    if (!pieces) return cg_error(CG_ERR_NO_MEMORY, "out of memory detokenizing %d ids", n);
    int np = 0;
    cg_status s = CG_OK;
    for (int i = 0; i < n && !s; i++) {
        if (ids[i] < 0 || ids[i] >= v->n || !v->piece[ids[i]])
            s = cg_error(CG_ERR_INVALID_ARGUMENT, "target id %d (position %d) is not in the vocabulary (%d ids)",
                         ids[i], i, v->n);
        else if (ids[i] != v->pad && ids[i] != v->eos && ids[i] != v->unk) pieces[np++] = v->piece[ids[i]];
    }
    if (!s) s = tf_spm_decode(v->tgt, pieces, np, text);
    free(pieces);
    if (!s) marian_finish(*text);
    return s;
}
