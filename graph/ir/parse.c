/* Parser of the graph text format.
 *
 *   file      := { graph } EOF                      (at least one graph)
 *   graph     := 'graph' NAME '{' { stmt } '}'
 *   stmt      := 'input' NAME ':' type
 *              | 'param' NAME ':' type '=' STRING
 *              | 'output' NAME { ',' NAME }
 *              | [ NAME ':' ] NAME { ',' NAME } '=' NAME '(' [ NAME { ',' NAME } ] ')' [ attrs ]
 *   type      := ('f32' | 'i32') '[' [ dim { ',' dim } ] ']'
 *   dim       := INT (>= 0) | NAME (a symbol shared by the whole model)
 *   attrs     := '{' [ attr { ',' attr } [ ',' ] ] '}'
 *   attr      := NAME ':' value
 *   value     := INT | FLOAT | 'inf' | '-inf' | 'nan' | STRING | '[' [ INT { ',' INT } [ ',' ] ] ']'
 *
 * NAME is [A-Za-z_][A-Za-z0-9_.]*. Statements end at a newline or at the
 * '}' closing the graph; inside ( ) [ ] and attribute { } newlines are
 * ignored. '#' starts a comment that runs to the end of the line. The words
 * graph/input/param/output are keywords only at the start of a statement and
 * only when not followed by ':', ',' or '=' (so they may name nodes and
 * values). Columns count bytes from 1 (a tab counts 1).
 */
#include "ir.h"
#include "dtype.h"
#include "error.h"
#include "read_file.h"
#include "utf8.h"

#include <errno.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum tok_kind {
    T_EOF,
    T_NL,
    T_IDENT,
    T_INT,
    T_FLOAT,
    T_STRING,
    T_LPAREN,
    T_RPAREN,
    T_LBRACK,
    T_RBRACK,
    T_LBRACE,
    T_RBRACE,
    T_COMMA,
    T_COLON,
    T_EQ,
    T_OP, /* + - * / % of a derived dim: the character in i */
    T_CMP /* == != < <= > >= of a graph's guard: the CG_GUARD_* in i */
} tok_kind;

typedef struct token {
    tok_kind kind;
    size_t start, end; /* bytes of the text */
    int line, col;
    int64_t i;  /* T_INT */
    double f;   /* T_FLOAT */
    char *s;    /* T_IDENT: the name; T_STRING: the decoded text (owned) */
    int quoted; /* T_IDENT written `like this`: never a keyword */
} token;

typedef struct parser {
    const char *text;
    size_t len, pos, line_start;
    int line;
    const cg_model *loc; /* filename for messages */
    cg_model *m;         /* model being built (NULL for attribute lists) */
    token tok;           /* current token */
    token ahead;         /* one token of lookahead when has_ahead */
    int has_ahead;
    int keep_comments; /* record '#' comments in m (whole texts, not attribute lists) */
    int dim_ops;       /* + - * / % are tokens (inside a `dim` definition) */
    int guard_ops;     /* == != < <= > >= are tokens (a graph's `when` guards) */
} parser;

/* ------------------------------------------------------------------ */
/* Errors                                                              */

static cg_status perr(parser *p, int line, int col, const char *fmt, ...) CG_PRINTF(4, 5);

static cg_status perr(parser *p, int line, int col, const char *fmt, ...) {
    char where[512], msg[1280];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cg_loc_format(where, sizeof where, p->loc, line, col);
    return cg_error(CG_ERR_PARSE, "%s%s", where, msg);
}

static cg_status oom(void) { return cg_error(CG_ERR_NO_MEMORY, "out of memory"); }

/* Quoted text of bytes [b, e), shortened to 40 characters. */
static const char *quote_span(const parser *p, size_t b, size_t e, char *buf, size_t size) {
    size_t n = e - b;
    if (n > 40) snprintf(buf, size, "'%.40s...'", p->text + b);
    else snprintf(buf, size, "'%.*s'", (int)n, p->text + b);
    return buf;
}

/* What a token is, for "expected X, got Y". */
static const char *desc(const parser *p, const token *t, char *buf, size_t size) {
    switch (t->kind) {
    case T_EOF: return "end of file";
    case T_NL: return "end of line";
    case T_STRING: return "a string";
    default: return quote_span(p, t->start, t->end, buf, size);
    }
}

/* "expected <what>, got <current token>" at the current token. */
static cg_status expected(parser *p, const char *what) {
    char b[64];
    return perr(p, p->tok.line, p->tok.col, "expected %s, got %s", what, desc(p, &p->tok, b, sizeof b));
}

/* ------------------------------------------------------------------ */
/* Lexer                                                               */

static int is_alpha(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static int is_digit(int c) { return c >= '0' && c <= '9'; }
static int is_ident(int c) { return is_alpha(c) || is_digit(c) || c == '.'; }
static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int col_at(const parser *p, size_t pos) {
    size_t c = pos - p->line_start + 1;
    return c > INT_MAX ? INT_MAX : (int)c;
}

/* strtod in the "C" locale, whatever the application's locale is. */
static double c_strtod(const char *s, char **end) {
    locale_t c = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    locale_t old = c ? uselocale(c) : (locale_t)0;
    errno = 0;
    double v = strtod(s, end);
    int e = errno;
    if (c) {
        uselocale(old);
        freelocale(c);
    }
    errno = e;
    return v;
}

static cg_status lex_number(parser *p, token *t) {
    const char *s = p->text;
    size_t n = p->len, b = p->pos, e = b;
    int is_float = 0;
    char q[64];
    if (s[e] == '+' || s[e] == '-') e++;
    while (e < n && is_digit(s[e])) e++;
    if (e < n && s[e] == '.') {
        is_float = 1;
        e++;
        while (e < n && is_digit(s[e])) e++;
    }
    if (e < n && (s[e] == 'e' || s[e] == 'E')) {
        size_t x = e + 1;
        if (x < n && (s[x] == '+' || s[x] == '-')) x++;
        if (x < n && is_digit(s[x])) {
            is_float = 1;
            e = x;
            while (e < n && is_digit(s[e])) e++;
        }
    }
    if (e < n && is_ident((unsigned char)s[e])) {
        while (e < n && is_ident((unsigned char)s[e])) e++;
        return perr(p, t->line, t->col, "invalid number %s", quote_span(p, b, e, q, sizeof q));
    }
    t->end = e;
    if (is_float) {
        char *buf = malloc(e - b + 1), *end;
        if (!buf) return oom();
        memcpy(buf, s + b, e - b);
        buf[e - b] = 0;
        double v = c_strtod(buf, &end);
        int bad = *end != 0, range = isinf(v);
        free(buf);
        if (bad) return perr(p, t->line, t->col, "invalid number %s", quote_span(p, b, e, q, sizeof q));
        if (range) return perr(p, t->line, t->col, "float %s is out of range", quote_span(p, b, e, q, sizeof q));
        t->kind = T_FLOAT;
        t->f = v;
    } else {
        int neg = s[b] == '-';
        uint64_t v = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
        for (size_t d = b + (s[b] == '-' || s[b] == '+'); d < e; d++) {
            unsigned dg = (unsigned)(s[d] - '0');
            if (v > (lim - dg) / 10)
                return perr(p, t->line, t->col, "integer %s is out of range", quote_span(p, b, e, q, sizeof q));
            v = v * 10 + dg;
        }
        t->kind = T_INT;
        t->i = !neg ? (int64_t)v : v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
    }
    p->pos = e;
    return CG_OK;
}

/* Appends code point cp (valid, non-surrogate) as UTF-8. */
static size_t put_utf8(char *o, uint32_t cp) {
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Four hex digits at s[i..i+4), or -1. */
static long hex4(const parser *p, size_t i) {
    long v = 0;
    if (i > p->len || p->len - i < 4) return -1;
    for (int k = 0; k < 4; k++) {
        int h = hexval((unsigned char)p->text[i + k]);
        if (h < 0) return -1;
        v = v * 16 + h;
    }
    return v;
}

/* A "string" or, with q '`', a quoted name (`onnx::MatMul_7`): the same
 * escapes, and \` in a name. */
static cg_status lex_string(parser *p, token *t, char q) {
    const char *s = p->text;
    const char *what = q == '"' ? "string" : "quoted name";
    size_t n = p->len, b = p->pos, i = b + 1, j = b + 1, k = 0;
    /* The decoded text is never longer than the literal: find its end. */
    while (j < n && s[j] != q && s[j] != '\n') j += (s[j] == '\\' && j + 1 < n && s[j + 1] != '\n') ? 2 : 1;
    char *o = malloc(j - b + 1);
    if (!o) return oom();
    cg_status st = CG_OK;
    for (;;) {
        if (i >= n || s[i] == '\n') {
            st = perr(p, t->line, t->col, "unterminated %s", what);
            break;
        }
        unsigned char c = (unsigned char)s[i];
        if (c == (unsigned char)q) {
            i++;
            break;
        }
        if (c == 0) {
            st = perr(p, p->line, col_at(p, i), "NUL byte in %s", what);
            break;
        }
        if (c >= 0x80) {
            size_t len = cg_utf8_seq_len(s + i, n - i);
            if (!len) {
                st = perr(p, p->line, col_at(p, i), "invalid UTF-8 in %s", what);
                break;
            }
            memcpy(o + k, s + i, len);
            k += len;
            i += len;
            continue;
        }
        if (c != '\\') {
            o[k++] = (char)c;
            i++;
            continue;
        }
        if (i + 1 >= n || s[i + 1] == '\n') {
            st = perr(p, t->line, t->col, "unterminated %s", what);
            break;
        }
        int e = (unsigned char)s[i + 1];
        if (e == q || e == '\\') o[k++] = (char)e;
        else if (e == 'n') o[k++] = '\n';
        else if (e == 't') o[k++] = '\t';
        else if (e == 'u') {
            long cp = hex4(p, i + 2);
            if (cp < 0) {
                st = perr(p, p->line, col_at(p, i), "invalid \\u escape in %s (expected 4 hex digits)", what);
                break;
            }
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                long lo = (i + 7 < n && s[i + 6] == '\\' && s[i + 7] == 'u') ? hex4(p, i + 8) : -1;
                if (lo < 0xDC00 || lo > 0xDFFF) {
                    st = perr(p, p->line, col_at(p, i), "unpaired surrogate '\\u%04lX' in %s", cp, what);
                    break;
                }
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                i += 6;
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                st = perr(p, p->line, col_at(p, i), "unpaired surrogate '\\u%04lX' in %s", cp, what);
                break;
            } else if (cp == 0) {
                st = perr(p, p->line, col_at(p, i), "\\u0000 is not allowed in a %s", what);
                break;
            }
            k += put_utf8(o + k, (uint32_t)cp);
            i += 4;
        } else {
            if (e > 0x20 && e < 0x7f) st = perr(p, p->line, col_at(p, i), "invalid escape '\\%c' in %s", e, what);
            else st = perr(p, p->line, col_at(p, i), "invalid escape in %s", what);
            break;
        }
        i += 2;
    }
    if (st) {
        free(o);
        return st;
    }
    o[k] = 0;
    if (q != '"' && !st && k == 0) {
        free(o);
        return perr(p, t->line, t->col, "empty quoted name");
    }
    t->kind = q == '"' ? T_STRING : T_IDENT;
    t->quoted = q != '"';
    t->s = o;
    t->end = i;
    p->pos = i;
    return CG_OK;
}

static int is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

/* Records the comment text[b, e) in the model, for the printer. */
static cg_status keep_comment(parser *p, size_t b, size_t e) {
    cg_model *m = p->m;
    while (e > b && is_blank(p->text[e - 1])) e--;
    if (m->n_comments == m->cap_comments) {
        if (m->cap_comments > INT_MAX / 2) return oom();
        int cap = m->cap_comments ? 2 * m->cap_comments : 16;
        cg_comment *nc = realloc(m->comments, sizeof *nc * (size_t)cap);
        if (!nc) return oom();
        m->comments = nc;
        m->cap_comments = cap;
    }
    char *t = malloc(e - b + 1);
    if (!t) return oom();
    /* Control bytes (a NUL, a CR inside the line) become spaces: printed
     * as they were, a NUL would end the comment's string and a CR could
     * end its line, and `fmt` must print what it prints again unchanged. */
    for (size_t i = 0; i < e - b; i++) {
        unsigned char c = (unsigned char)p->text[b + i];
        t[i] = (c < 0x20 && c != '\t') || c == 0x7f ? ' ' : (char)c;
    }
    size_t n = e - b;
    while (n > 0 && (t[n - 1] == ' ' || t[n - 1] == '\t')) n--; /* a blank bared by a control byte too */
    t[n] = 0;
    int own = 1;
    for (size_t i = p->line_start; i < b && own; i++) own = is_blank(p->text[i]);
    m->comments[m->n_comments++] = (cg_comment){t, p->line, own};
    return CG_OK;
}

/* Reads the next token into *t (whose string must already be freed). */
static cg_status lex(parser *p, token *t) {
    const char *s = p->text;
    size_t n = p->len;
    memset(t, 0, sizeof *t);
    while (p->pos < n) {
        char c = s[p->pos];
        if (c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f') p->pos++;
        else if (c == '#') {
            size_t b = p->pos;
            while (p->pos < n && s[p->pos] != '\n') p->pos++;
            if (p->keep_comments) {
                cg_status st = keep_comment(p, b, p->pos);
                if (st) return st;
            }
        } else break;
    }
    size_t b = p->pos;
    t->start = t->end = b;
    t->line = p->line;
    t->col = col_at(p, b);
    if (b >= n) {
        t->kind = T_EOF;
        return CG_OK;
    }
    unsigned char c = (unsigned char)s[b];
    if (c == '\n') {
        t->kind = T_NL;
        p->pos = t->end = b + 1;
        if (p->line < INT_MAX) p->line++;
        p->line_start = p->pos;
        return CG_OK;
    }
    if (is_alpha(c)) {
        size_t e = b + 1;
        while (e < n && is_ident((unsigned char)s[e])) e++;
        t->s = malloc(e - b + 1);
        if (!t->s) return oom();
        memcpy(t->s, s + b, e - b);
        t->s[e - b] = 0;
        t->kind = T_IDENT;
        p->pos = t->end = e;
        return CG_OK;
    }
    if (is_digit(c) || ((c == '-' || c == '+') && b + 1 < n && is_digit((unsigned char)s[b + 1])))
        return lex_number(p, t);
    if (c == '-' && n - b >= 4 && memcmp(s + b + 1, "inf", 3) == 0 &&
        !(n - b > 4 && is_ident((unsigned char)s[b + 4]))) {
        t->kind = T_FLOAT;
        t->f = -INFINITY;
        p->pos = t->end = b + 4;
        return CG_OK;
    }
    if (c == '"' || c == '`') return lex_string(p, t, c);
    if (p->guard_ops && strchr("=!<>", c)) {
        const int two = b + 1 < n && s[b + 1] == '=';
        const char op[3] = {(char)c, two ? '=' : 0, 0};
        if ((t->i = cg_guard_op_parse(op))) {
            t->kind = T_CMP;
            p->pos = t->end = b + 1 + (size_t)two;
            return CG_OK;
        }
    }
    tok_kind k;
    switch (c) {
    case '(': k = T_LPAREN; break;
    case ')': k = T_RPAREN; break;
    case '[': k = T_LBRACK; break;
    case ']': k = T_RBRACK; break;
    case '{': k = T_LBRACE; break;
    case '}': k = T_RBRACE; break;
    case ',': k = T_COMMA; break;
    case ':': k = T_COLON; break;
    case '=': k = T_EQ; break;
    case '+':
    case '-':
    case '*':
    case '/':
    case '%':
        if (!p->dim_ops) return perr(p, t->line, t->col, "unexpected character '%c'", c);
        k = T_OP;
        t->i = c;
        break;
    default:
        if (c > 0x20 && c < 0x7f) return perr(p, t->line, t->col, "unexpected character '%c'", c);
        return perr(p, t->line, t->col, "unexpected character '\\x%02x'", c);
    }
    t->kind = k;
    p->pos = t->end = b + 1;
    return CG_OK;
}

/* ------------------------------------------------------------------ */
/* Token stream                                                        */

static void tok_free(token *t) {
    free(t->s);
    t->s = NULL;
}

static void parser_free(parser *p) {
    tok_free(&p->tok);
    tok_free(&p->ahead);
}

/* Takes ownership of the current token's string. */
static char *take(parser *p) {
    char *s = p->tok.s;
    p->tok.s = NULL;
    return s;
}

static cg_status next(parser *p) {
    tok_free(&p->tok);
    if (p->has_ahead) {
        p->tok = p->ahead;
        memset(&p->ahead, 0, sizeof p->ahead);
        p->has_ahead = 0;
        return CG_OK;
    }
    return lex(p, &p->tok);
}

static cg_status peek(parser *p, const token **out) {
    if (!p->has_ahead) {
        cg_status st = lex(p, &p->ahead);
        if (st) return st;
        p->has_ahead = 1;
    }
    *out = &p->ahead;
    return CG_OK;
}

static cg_status skip_nl(parser *p) {
    while (p->tok.kind == T_NL) {
        cg_status st = next(p);
        if (st) return st;
    }
    return CG_OK;
}

/* Next token, skipping newlines (inside brackets). */
static cg_status next_nl(parser *p) {
    cg_status st = next(p);
    return st ? st : skip_nl(p);
}

static int is_word(const token *t, const char *w) { return t->kind == T_IDENT && !t->quoted && strcmp(t->s, w) == 0; }

/* A list of names with their positions. */
typedef struct namelist {
    char **v;
    int *line, *col;
    int n, cap;
} namelist;

static void names_free(namelist *l) {
    for (int i = 0; i < l->n; i++) free(l->v[i]);
    free(l->v);
    free(l->line);
    free(l->col);
    memset(l, 0, sizeof *l);
}

/* Appends s (ownership passes to the list, even on failure). */
static cg_status names_push(namelist *l, char *s, int line, int col) {
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 4;
        char **v = l->cap < INT_MAX / 2 ? realloc(l->v, sizeof *v * (size_t)cap) : NULL;
        if (v) l->v = v;
        int *a = v ? realloc(l->line, sizeof *a * (size_t)cap) : NULL;
        if (a) l->line = a;
        int *b = a ? realloc(l->col, sizeof *b * (size_t)cap) : NULL;
        if (b) l->col = b;
        if (!b) {
            free(s);
            return oom();
        }
        l->cap = cap;
    }
    l->v[l->n] = s;
    l->line[l->n] = line;
    l->col[l->n] = col;
    l->n++;
    return CG_OK;
}

/* ------------------------------------------------------------------ */
/* Statements                                                          */

/* Fails if `name` is already a value of g. */
static cg_status check_new(parser *p, const cg_graph *g, const char *name, int line, int col) {
    int32_t v = cg_graph_find_value(g, name);
    if (v < 0) return CG_OK;
    if (g->values[v].line > 0)
        return perr(p, line, col, "value '%s' is already defined at %d:%d", name, g->values[v].line, g->values[v].col);
    return perr(p, line, col, "value '%s' is already defined", name);
}

/* type := DTYPE '[' [dim {',' dim}] ']', DTYPE a cg_dtype_name ('f32', 'i32',
 * 'f16', 'bf16', 'i8', 'u8', 'i64', 'bool'); leaves the token after ']'. */
static cg_status parse_type(parser *p, cg_dtype *dtype, int *ndim, int64_t *dims) {
    cg_status st;
    if (p->tok.kind != T_IDENT) return expected(p, "a type such as f32[2, 3]");
    *dtype = cg_dtype_parse(p->tok.s, strlen(p->tok.s));
    if (!*dtype)
        return perr(p, p->tok.line, p->tok.col, "unknown dtype '%s' (expected %s)", p->tok.s, cg_dtype_all_names());
    if ((st = next(p))) return st;
    if (p->tok.kind != T_LBRACK) return expected(p, "'[' after the dtype");
    if ((st = next_nl(p))) return st;
    *ndim = 0;
    if (p->tok.kind == T_RBRACK) return next(p);
    for (;;) {
        if (p->tok.kind != T_INT && p->tok.kind != T_IDENT) return expected(p, "a dimension (integer or symbol)");
        if (*ndim == CG_MAX_DIMS)
            return perr(p, p->tok.line, p->tok.col, "too many dimensions (at most %d)", CG_MAX_DIMS);
        if (p->tok.kind == T_INT) {
            if (p->tok.i < 0)
                return perr(p, p->tok.line, p->tok.col, "dimension must be >= 0, got %lld", (long long)p->tok.i);
            dims[(*ndim)++] = p->tok.i;
        } else {
            int k = cg_model_sym(p->m, p->tok.s);
            if (k < 0) return CG_ERR_NO_MEMORY;
            dims[(*ndim)++] = CG_DIM_SYM(k);
        }
        if ((st = next_nl(p))) return st;
        if (p->tok.kind == T_COMMA) {
            if ((st = next_nl(p))) return st;
            continue;
        }
        if (p->tok.kind == T_RBRACK) return next(p);
        return expected(p, "']' or ',' in shape");
    }
}

/* 'input' NAME ':' type  |  'param' NAME ':' type '=' STRING */
static cg_status parse_decl(parser *p, cg_graph *g, int is_param) {
    cg_status st;
    cg_dtype dtype = CG_F32;
    int ndim = 0;
    int64_t dims[CG_MAX_DIMS];
    if ((st = next(p))) return st;
    if (p->tok.kind != T_IDENT) return expected(p, is_param ? "a param name" : "an input name");
    int line = p->tok.line, col = p->tok.col;
    if ((st = check_new(p, g, p->tok.s, line, col))) return st;
    char *name = take(p);
    if (!(st = next(p))) {
        if (p->tok.kind != T_COLON)
            st = expected(p, is_param ? "':' after the param name" : "':' after the input name");
        else if (!(st = next(p))) st = parse_type(p, &dtype, &ndim, dims);
    }
    if (!st && !is_param) st = cg_graph_new_input(g, name, dtype, ndim, dims, line, col, NULL);
    if (!st && is_param) {
        if (p->tok.kind != T_EQ) st = expected(p, "'=' and a weight name after the param type");
        else if (!(st = next(p))) {
            if (p->tok.kind != T_STRING) st = expected(p, "a weight name string");
            else if (!p->tok.s[0]) st = perr(p, p->tok.line, p->tok.col, "empty weight name");
            else if (!(st = cg_graph_new_param(g, name, p->tok.s, dtype, ndim, dims, line, col, NULL))) st = next(p);
        }
    }
    free(name);
    return st;
}

/* 'output' NAME {',' NAME} */
static cg_status parse_output(parser *p, cg_graph *g, int *seen_line, int *seen_col) {
    cg_status st;
    namelist l = {0};
    if (*seen_line)
        return perr(p, p->tok.line, p->tok.col, "graph '%s' already has an output statement at %d:%d", g->name,
                    *seen_line, *seen_col);
    *seen_line = p->tok.line;
    *seen_col = p->tok.col;
    if ((st = next(p))) return st;
    for (;;) {
        if (p->tok.kind != T_IDENT) {
            st = expected(p, "an output name");
            break;
        }
        int line = p->tok.line, col = p->tok.col;
        if ((st = names_push(&l, take(p), line, col)) || (st = next(p))) break;
        if (p->tok.kind != T_COMMA) break;
        if ((st = next(p))) break;
    }
    if (!st) st = cg_graph_add_output_names(g, l.n, (const char *const *)l.v, l.line, l.col);
    names_free(&l);
    return st;
}

/* attr := NAME ':' value ; leaves the token after the value (newlines skipped). */
static cg_status parse_attr(parser *p, cg_node *n) {
    cg_status st;
    cg_attr a;
    size_t cap = 0;
    memset(&a, 0, sizeof a);
    if (p->tok.kind != T_IDENT) return expected(p, "an attribute name");
    for (int i = 0; i < n->n_attrs; i++)
        if (strcmp(n->attrs[i].key, p->tok.s) == 0) {
            if (n->attrs[i].line > 0)
                return perr(p, p->tok.line, p->tok.col, "attribute '%s' is already set at %d:%d", p->tok.s,
                            n->attrs[i].line, n->attrs[i].col);
            return perr(p, p->tok.line, p->tok.col, "attribute '%s' is already set", p->tok.s);
        }
    a.line = p->tok.line;
    a.col = p->tok.col;
    a.key = take(p);
    if ((st = next_nl(p))) goto done;
    if (p->tok.kind != T_COLON) {
        st = expected(p, "':' after the attribute name");
        goto done;
    }
    if ((st = next_nl(p))) goto done;
    switch (p->tok.kind) {
    case T_INT:
        a.type = CG_ATTR_INT;
        a.i = p->tok.i;
        break;
    case T_FLOAT:
        a.type = CG_ATTR_FLOAT;
        a.f = p->tok.f;
        break;
    case T_STRING:
        a.type = CG_ATTR_STRING;
        a.s = take(p);
        break;
    case T_IDENT:
        if (strcmp(p->tok.s, "inf") == 0 || strcmp(p->tok.s, "nan") == 0) {
            a.type = CG_ATTR_FLOAT;
            a.f = p->tok.s[0] == 'i' ? INFINITY : NAN;
            break;
        }
        st = expected(p, "an attribute value");
        goto done;
    case T_LBRACK: {
        a.type = CG_ATTR_INTS;
        int low_line = 0, low_col = 0; /* a literal below -1: never a dim beside names */
        if ((st = next_nl(p))) goto done;
        while (p->tok.kind != T_RBRACK) {
            int64_t v = p->tok.i;
            if (p->tok.kind == T_IDENT && p->m) {
                /* a symbolic dim (attributes of type dims: reshape's shape) */
                int k = cg_model_sym(p->m, p->tok.s);
                if (k < 0) {
                    st = oom();
                    goto done;
                }
                v = CG_DIM_SYM(k);
                a.syms = 1;
            } else if (p->tok.kind != T_INT) {
                st = expected(p, p->m ? "an integer or a dim name in the list" : "an integer in the list");
                goto done;
            } else if (v < -1 && !low_line) {
                low_line = p->tok.line;
                low_col = p->tok.col;
            }
            if ((size_t)a.n_ints == cap) {
                size_t nc = cap ? cap * 2 : 8;
                int64_t *v = nc <= INT32_MAX ? realloc(a.ints, nc * sizeof *v) : NULL;
                if (!v) {
                    st = oom();
                    goto done;
                }
                a.ints = v;
                cap = nc;
            }
            a.ints[a.n_ints++] = v;
            if ((st = next_nl(p))) goto done;
            if (p->tok.kind == T_COMMA) {
                if ((st = next_nl(p))) goto done;
            } else if (p->tok.kind != T_RBRACK) {
                st = expected(p, "']' or ',' in the list");
                goto done;
            }
        }
        if (a.syms && low_line) {
            st = perr(p, low_line, low_col, "a list with dim names holds sizes, 0 or -1, not numbers below -1");
            goto done;
        }
        break;
    }
    default: st = expected(p, "an attribute value"); goto done;
    }
    if (!(st = next_nl(p))) st = cg_node_add_attr(n, &a);
done:
    cg_attr_clear(&a);
    return st;
}

/* '{' [attr {',' attr} [',']] '}' */
static cg_status parse_attr_block(parser *p, cg_node *n) {
    cg_status st = next_nl(p);
    while (!st) {
        if (p->tok.kind == T_RBRACE) return next(p);
        if ((st = parse_attr(p, n))) break;
        if (p->tok.kind == T_COMMA) st = next_nl(p);
        else if (p->tok.kind != T_RBRACE) st = expected(p, "'}' or ',' in attributes");
    }
    return st;
}

/* [NAME ':'] NAME {',' NAME} '=' NAME '(' [NAME {',' NAME}] ')' [attrs] */
static cg_status parse_node(parser *p, cg_graph *g) {
    cg_status st;
    namelist outs = {0}, ins = {0};
    char *node_name = NULL, *op = NULL;
    int line = p->tok.line, col = p->tok.col, op_line = 0, op_col = 0;
    int nl = p->tok.line, nc = p->tok.col;
    char *first = take(p);
    cg_node *node = NULL;
    if ((st = next(p))) goto done;
    if (p->tok.kind == T_COLON) {
        node_name = first;
        first = NULL;
        if ((st = next(p))) goto done;
        if (p->tok.kind != T_IDENT) {
            st = expected(p, "an output name after the node name");
            goto done;
        }
        nl = p->tok.line;
        nc = p->tok.col;
        first = take(p);
        if ((st = next(p))) goto done;
    }
    if ((st = check_new(p, g, first, nl, nc))) goto done;
    st = names_push(&outs, first, nl, nc);
    first = NULL;
    if (st) goto done;
    while (p->tok.kind == T_COMMA) {
        if ((st = next(p))) goto done;
        if (p->tok.kind != T_IDENT) {
            st = expected(p, "an output name");
            goto done;
        }
        if ((st = check_new(p, g, p->tok.s, p->tok.line, p->tok.col))) goto done;
        for (int i = 0; i < outs.n; i++)
            if (strcmp(outs.v[i], p->tok.s) == 0) {
                st = perr(p, p->tok.line, p->tok.col, "value '%s' is already defined at %d:%d", p->tok.s, outs.line[i],
                          outs.col[i]);
                goto done;
            }
        int l = p->tok.line, c = p->tok.col;
        if ((st = names_push(&outs, take(p), l, c)) || (st = next(p))) goto done;
    }
    if (p->tok.kind != T_EQ) {
        st = expected(p, "'=' or ',' after the node outputs");
        goto done;
    }
    if ((st = next(p))) goto done;
    if (p->tok.kind != T_IDENT) {
        st = expected(p, "an operator name after '='");
        goto done;
    }
    op_line = p->tok.line;
    op_col = p->tok.col;
    op = take(p);
    if ((st = next(p))) goto done;
    if (p->tok.kind != T_LPAREN) {
        st = expected(p, "'(' after the operator name");
        goto done;
    }
    if ((st = next_nl(p))) goto done;
    while (p->tok.kind != T_RPAREN) {
        if (p->tok.kind != T_IDENT) {
            st = expected(p, "an input name");
            goto done;
        }
        int l = p->tok.line, c = p->tok.col;
        if ((st = names_push(&ins, take(p), l, c)) || (st = next_nl(p))) goto done;
        if (p->tok.kind == T_COMMA) {
            if ((st = next_nl(p))) goto done;
            if (p->tok.kind == T_RPAREN) {
                st = expected(p, "an input name");
                goto done;
            }
        } else if (p->tok.kind != T_RPAREN) {
            st = expected(p, "')' or ',' in inputs");
            goto done;
        }
    }
    if ((st = next(p))) goto done;
    st = cg_graph_new_node(g, op, node_name, ins.n, (const char *const *)ins.v, outs.n, (const char *const *)outs.v,
                           line, col, &node);
    if (st) goto done;
    node->op_line = op_line;
    node->op_col = op_col;
    for (int i = 0; i < outs.n; i++) {
        g->values[node->outputs[i]].line = outs.line[i];
        g->values[node->outputs[i]].col = outs.col[i];
    }
    if (p->tok.kind == T_LBRACE) st = parse_attr_block(p, node);
done:
    free(first);
    free(node_name);
    free(op);
    names_free(&outs);
    names_free(&ins);
    return st;
}

/* 'graph' NAME '{' {stmt} '}' */
static cg_status parse_dim_operand(parser *p, int64_t *out);

/* ['when' a CMP b {',' a CMP b}] before a graph's '{'. */
static cg_status parse_guards(parser *p, cg_guard *gd, int *n) {
    cg_status st = CG_OK;
    *n = 0;
    if (!is_word(&p->tok, "when")) return CG_OK;
    p->guard_ops = 1;
    do {
        if (*n == CG_MAX_GUARDS) {
            st = perr(p, p->tok.line, p->tok.col, "more than %d guards", CG_MAX_GUARDS);
            break;
        }
        cg_guard *c = &gd[(*n)++];
        if ((st = next(p)) || (st = parse_dim_operand(p, &c->a))) break;
        if (p->tok.kind != T_CMP) {
            st = expected(p, "a comparison (== != < <= > >=) in the guard");
            break;
        }
        c->op = (int)p->tok.i;
        if ((st = next(p)) || (st = parse_dim_operand(p, &c->b))) break;
    } while (p->tok.kind == T_COMMA);
    p->guard_ops = 0;
    return st;
}

static cg_status parse_graph(parser *p) {
    cg_status st;
    cg_graph *g;
    int out_line = 0, out_col = 0, n_guards;
    cg_guard guards[CG_MAX_GUARDS];
    if ((st = next(p))) return st;
    if (p->tok.kind != T_IDENT) return expected(p, "a graph name after 'graph'");
    const int line = p->tok.line, col = p->tok.col;
    char *name = take(p);
    if (!name) return oom();
    if (!(st = next(p)) && !(st = parse_guards(p, guards, &n_guards)))
        st = cg_model_new_variant(p->m, name, n_guards, guards, line, col, &g);
    free(name);
    if (st) return st;
    if (p->tok.kind != T_LBRACE) return expected(p, n_guards ? "'{' after the guards" : "'{' after the graph name");
    if ((st = next(p))) return st;
    for (;;) {
        if ((st = skip_nl(p))) return st;
        if (p->tok.kind == T_RBRACE) {
            g->end_line = p->tok.line;
            break;
        }
        if (p->tok.kind == T_EOF) {
            char b[300];
            snprintf(b, sizeof b, "'}' to close graph '%s'", g->name);
            return expected(p, b);
        }
        if (p->tok.kind != T_IDENT) return expected(p, "a statement");
        int kw = 0;
        if (is_word(&p->tok, "graph") || is_word(&p->tok, "input") || is_word(&p->tok, "param") ||
            is_word(&p->tok, "output")) {
            const token *a;
            if ((st = peek(p, &a))) return st;
            kw = a->kind != T_COLON && a->kind != T_COMMA && a->kind != T_EQ;
        }
        if (!kw) st = parse_node(p, g);
        else if (is_word(&p->tok, "input")) st = parse_decl(p, g, 0);
        else if (is_word(&p->tok, "param")) st = parse_decl(p, g, 1);
        else if (is_word(&p->tok, "output")) st = parse_output(p, g, &out_line, &out_col);
        else st = perr(p, p->tok.line, p->tok.col, "unexpected 'graph' inside graph '%s' (missing '}'?)", g->name);
        if (st) return st;
        if (p->tok.kind != T_NL && p->tok.kind != T_RBRACE) return expected(p, "end of line after the statement");
    }
    if ((st = next(p))) return st;
    if (p->tok.kind != T_NL && p->tok.kind != T_EOF) return expected(p, "end of line after '}'");
    return CG_OK;
}

/* An operand of a derived dim: a size, or a symbol (new ones are free). */
static cg_status parse_dim_operand(parser *p, int64_t *out) {
    if (p->tok.kind == T_INT && p->tok.i >= 0) {
        *out = p->tok.i;
        return next(p);
    }
    if (p->tok.kind != T_IDENT) return expected(p, "a size or a dim name");
    int k = cg_model_sym(p->m, p->tok.s);
    if (k < 0) return oom();
    *out = CG_DIM_SYM(k);
    return next(p);
}

/* 'dim' NAME '=' operand OP operand  |  'dim' NAME '=' FUNC '(' operand ',' operand ')' */
static cg_status parse_dim(parser *p) {
    cg_status st;
    if ((st = next(p))) return st;
    if (p->tok.kind != T_IDENT) return expected(p, "a dim name after 'dim'");
    const int line = p->tok.line, col = p->tok.col;
    char *name = take(p);
    int64_t a = 0, b = 0;
    int op = 0;
    if (!(st = next(p)) && p->tok.kind != T_EQ) st = expected(p, "'=' after the dim name");
    p->dim_ops = 1;
    if (!st) st = next(p);
    if (!st && is_word(&p->tok, "value")) { /* value(INPUT): bound from an input's value */
        p->dim_ops = 0;
        if (!(st = next(p)) && p->tok.kind != T_LPAREN) st = expected(p, "'(' after value");
        if (!st && !(st = next(p)) && p->tok.kind != T_IDENT) st = expected(p, "an input name");
        char *input = st ? NULL : take(p);
        if (!st && !input) st = oom();
        if (!st && !(st = next(p)) && p->tok.kind != T_RPAREN) st = expected(p, "')'");
        if (!st) st = next(p);
        int k;
        if (!st && (st = cg_model_sym_value(p->m, name, input, &k))) {
            char why[400];
            snprintf(why, sizeof why, "%s", cg_last_error());
            st = perr(p, line, col, "%s", why);
        }
        free(input);
        free(name);
        return st;
    }
    if (!st && p->tok.kind == T_IDENT && !p->tok.quoted && (op = cg_sym_op_parse(p->tok.s)) &&
        strlen(cg_sym_op_text(op)) > 1) { /* min(a, b), max(a, b), ceil_div(a, b) */
        if (!(st = next(p)) && p->tok.kind != T_LPAREN) st = expected(p, "'(' after the function");
        if (!st && !(st = next(p)) && !(st = parse_dim_operand(p, &a)) && p->tok.kind != T_COMMA)
            st = expected(p, "',' between the operands");
        if (!st && !(st = next(p)) && !(st = parse_dim_operand(p, &b)) && p->tok.kind != T_RPAREN)
            st = expected(p, "')'");
        if (!st) st = next(p);
    } else if (!st && !(st = parse_dim_operand(p, &a))) {
        if (p->tok.kind == T_INT && (p->text[p->tok.start] == '-' || p->text[p->tok.start] == '+')) {
            op = p->text[p->tok.start] == '-' ? CG_SYM_SUB : CG_SYM_ADD; /* "S -1" lexes as S and -1 */
            b = p->tok.i < 0 ? -p->tok.i : p->tok.i;
            st = next(p);
        } else if (p->tok.kind != T_OP) {
            st = expected(p, "an operator (+ - * / %) or min, max, ceil_div");
        } else {
            const char c[2] = {(char)p->tok.i, 0};
            op = cg_sym_op_parse(c);
            if (!(st = next(p))) st = parse_dim_operand(p, &b);
        }
    }
    p->dim_ops = 0;
    if (!st) {
        int k;
        st = cg_model_sym_define_named(p->m, name, op, a, b, &k);
        if (st) {
            char why[400];
            snprintf(why, sizeof why, "%s", cg_last_error());
            st = perr(p, line, col, "%s", why);
        }
    }
    free(name);
    return st;
}

static cg_status parse_file(parser *p) {
    cg_status st;
    /* A UTF-8 byte order mark is ignored. */
    if (p->len >= 3 && memcmp(p->text, "\xEF\xBB\xBF", 3) == 0) p->pos = p->line_start = 3;
    if ((st = next(p)) || (st = skip_nl(p))) return st;
    while (p->tok.kind != T_EOF) {
        if (is_word(&p->tok, "dim")) {
            if ((st = parse_dim(p))) return st;
            if (p->tok.kind != T_NL && p->tok.kind != T_EOF) return expected(p, "end of line after the dim");
            if ((st = skip_nl(p))) return st;
            continue;
        }
        if (!is_word(&p->tok, "graph")) return expected(p, "'graph' or 'dim'");
        if ((st = parse_graph(p)) || (st = skip_nl(p))) return st;
    }
    if (p->m->n_graphs == 0) {
        char where[512];
        cg_loc_format(where, sizeof where, p->loc, 0, 0);
        return cg_error(CG_ERR_PARSE, "%sno graph", where);
    }
    return CG_OK;
}

/* Every failure but a lack of memory reads as a parse error. */
static cg_status as_parse(cg_status st) { return st == CG_OK || st == CG_ERR_NO_MEMORY ? st : CG_ERR_PARSE; }

cg_status cg_parse_text(cg_context *ctx, const char *text, size_t len, const char *filename, cg_model **out) {
    cg_model *m;
    parser p;
    if (!out) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_parse_text: out is NULL");
    *out = NULL;
    if (!text && len) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_parse_text: text is NULL");
    cg_status st = cg_model_new(ctx, filename ? filename : "<text>", &m);
    if (st) return st;
    memset(&p, 0, sizeof p);
    p.text = text ? text : "";
    p.len = len;
    p.line = 1;
    p.loc = m;
    p.m = m;
    p.keep_comments = 1;
    st = parse_file(&p);
    parser_free(&p);
    if (st) {
        cg_model_free(m);
        return as_parse(st);
    }
    *out = m;
    return CG_OK;
}

cg_status cg_parse_attr_list(const char *text, cg_node *n) {
    cg_model where;
    parser p;
    if (!n) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_parse_attr_list: node is NULL");
    if (!text) return CG_OK;
    memset(&where, 0, sizeof where);
    where.filename = (char *)"<attrs>";
    memset(&p, 0, sizeof p);
    p.text = text;
    p.len = strlen(text);
    p.line = 1;
    p.loc = &where;
    /* names in int lists are the model's symbolic dims */
    p.m = n->graph ? n->graph->model : NULL;
    int n0 = n->n_attrs;
    cg_status st = next_nl(&p);
    while (!st && p.tok.kind != T_EOF) {
        if ((st = parse_attr(&p, n))) break;
        if (p.tok.kind == T_COMMA) st = next_nl(&p);
        else if (p.tok.kind != T_EOF) st = expected(&p, "',' or the end of the attribute list");
    }
    parser_free(&p);
    if (st) {
        /* Leave the node as it was. */
        for (int i = n0; i < n->n_attrs; i++) cg_attr_clear(&n->attrs[i]);
        n->n_attrs = n0;
    }
    return as_parse(st);
}

/* ------------------------------------------------------------------ */
/* Public entry points                                                 */

cg_status cg_model_parse(cg_context *ctx, const char *text, size_t len, const char *filename, cg_model **out) {
    if (out) *out = NULL;
    if (!ctx) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_model_parse: ctx is NULL");
    if (!out) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_model_parse: out is NULL");
    if (!text && len) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_model_parse: text is NULL");
    return cg_parse_text(ctx, text, len, filename, out);
}

cg_status cg_model_load(cg_context *ctx, const char *path, cg_model **out) {
    if (out) *out = NULL;
    if (!ctx) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_model_load: ctx is NULL");
    if (!path) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_model_load: path is NULL");
    if (!out) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_model_load: out is NULL");
    /* Through cg_read_file: a FIFO or device named here is refused, not
     * waited on or read forever, and a graph text has a size cap. */
    char *buf;
    size_t len;
    cg_status rs = cg_read_file(path, CG_MAX_TEXT_FILE, &buf, &len);
    if (rs) return rs;
    cg_status st = cg_parse_text(ctx, buf, len, path, out);
    free(buf);
    return st;
}
