/* Vocabulary files: one token per line, UTF-8, the id is the 0-based line
 * number. Lookups go through a sorted index. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "read_file.h"
#include "s2s.h"

/* Token order, then id: the leftmost match of a duplicated token is its
 * lowest id. `ctx` is the vocabulary. */
static int by_token(const void *a, const void *b, void *ctx) {
    const s2s_vocab *v = ctx;
    int x = *(const int *)a, y = *(const int *)b;
    int c = strcmp(v->tokens[x], v->tokens[y]);
    return c ? c : (x > y) - (x < y);
}

void cg_s2s_vocab_free(s2s_vocab *v) {
    if (!v) return;
    for (int i = 0; i < v->n; i++) free(v->tokens[i]);
    free(v->tokens);
    free(v->sorted);
    memset(v, 0, sizeof *v);
}

cg_status cg_s2s_vocab_read(const char *path, s2s_vocab *v) {
    memset(v, 0, sizeof *v);
    /* Read whole through cg_read_file: a FIFO or device named as a
     * vocabulary is refused, and a vocabulary has a size cap. */
    char *text;
    size_t len;
    cg_status st = cg_read_file(path, CG_MAX_TEXT_FILE, &text, &len);
    if (st) return st;
    int n_cap = 0, lineno = 0;
    for (size_t pos = 0; pos < len;) {
        char *line = text + pos, *nl = memchr(line, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - line) : len - pos;
        pos += n + 1;
        lineno++;
        if (n > 0 && line[n - 1] == '\r') n--;
        if (memchr(line, 0, n)) {
            st = cg_error(CG_ERR_FORMAT, "%s:%d: the token contains a NUL byte", path, lineno);
            break;
        }
        line[n] = 0;
        if (v->n == n_cap) {
            n_cap = n_cap * 2 + 64;
            char **nt = realloc(v->tokens, sizeof *nt * (size_t)n_cap);
            if (!nt) {
                st = cg_error(CG_ERR_NO_MEMORY, "out of memory reading %s", path);
                break;
            }
            v->tokens = nt;
        }
        v->tokens[v->n] = strdup(line);
        if (!v->tokens[v->n]) {
            st = cg_error(CG_ERR_NO_MEMORY, "out of memory reading %s", path);
            break;
        }
        v->n++;
    }
    free(text);
    if (!st && v->n == 0) st = cg_error(CG_ERR_FORMAT, "%s: the vocabulary is empty", path);
    if (!st) {
        v->sorted = malloc(sizeof(int) * (size_t)v->n);
        int *tmp = malloc(sizeof(int) * (size_t)v->n);
        if (!v->sorted || !tmp) st = cg_error(CG_ERR_NO_MEMORY, "out of memory");
        else {
            for (int i = 0; i < v->n; i++) v->sorted[i] = i;
            cg_s2s_sort(v->sorted, (size_t)v->n, sizeof(int), by_token, v, tmp);
        }
        free(tmp);
    }
    /* A token on two lines makes ids ambiguous: the second could never be
     * produced from text. Sorted by token, then id: duplicates are adjacent. */
    for (int i = 1; !st && i < v->n; i++) {
        int a = v->sorted[i - 1], b = v->sorted[i];
        if (!strcmp(v->tokens[a], v->tokens[b]))
            st = cg_error(CG_ERR_FORMAT, "%s:%d: token '%s' is already on line %d", path, b + 1, v->tokens[b], a + 1);
    }
    if (st) cg_s2s_vocab_free(v);
    return st;
}

int cg_s2s_vocab_find(const s2s_vocab *v, const char *tok, size_t len) {
    int lo = 0, hi = v->n - 1, found = -1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        const char *t = v->tokens[v->sorted[mid]];
        int c = strncmp(t, tok, len);
        if (c == 0 && t[len] != 0) c = 1;
        if (c == 0) {
            found = v->sorted[mid];
            hi = mid - 1; /* keep going left: the lowest id among duplicates */
        } else if (c < 0) {
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    return found;
}
