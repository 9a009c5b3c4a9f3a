/* libFuzzer target for the graph text format: parse, then print, then parse
 * the printed text again and print it: the two prints must be identical
 * (the printed form is a fixed point). Also feeds the input to the
 * attribute-list parser. Failures must give one-line located messages.
 * Built by -Dfuzz=true (tests/fuzz/meson.build). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clgraph/clgraph.h"
#include "ir.h"

static void check_message(const char *prefix) {
    const char *e = cg_last_error();
    if (strchr(e, '\n') || strncmp(e, prefix, strlen(prefix)) != 0) {
        fprintf(stderr, "bad message: %s\n", e);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    cg_model *m1 = NULL, *m2 = NULL;
    char *s1 = NULL, *s2 = NULL;

    /* Attribute lists: a NUL-terminated copy on a bare node. */
    char *z = malloc(size + 1);
    if (!z) return 0;
    memcpy(z, data, size);
    z[size] = 0;
    cg_node *n = calloc(1, sizeof *n);
    if (!n) abort();
    cg_status st = cg_parse_attr_list(z, n);
    if (st == CG_ERR_PARSE) check_message("<attrs>:");
    else if (st != CG_OK) abort();
    for (int i = 0; i < n->n_attrs; i++) cg_attr_clear(&n->attrs[i]);
    if (st != CG_OK && n->n_attrs != 0) abort(); /* failures leave the node unchanged */
    free(n->attrs);
    free(n);
    free(z);

    st = cg_parse_text(NULL, (const char *)data, size, "fuzz", &m1);
    if (st != CG_OK) {
        if (st != CG_ERR_PARSE || m1) abort();
        check_message("fuzz");
        return 0;
    }
    if (cg_print_text(m1, &s1) != CG_OK) {
        fprintf(stderr, "parsed text does not print: %s\n", cg_last_error());
        abort();
    }
    if (cg_parse_text(NULL, s1, strlen(s1), "printed", &m2) != CG_OK) {
        fprintf(stderr, "printed text does not parse: %s\n%s\n", cg_last_error(), s1);
        abort();
    }
    if (cg_print_text(m2, &s2) != CG_OK) abort();
    if (strcmp(s1, s2) != 0) {
        fprintf(stderr, "not a fixed point:\n%s\n---\n%s\n", s1, s2);
        abort();
    }
    free(s1);
    free(s2);
    cg_model_free(m1);
    cg_model_free(m2);
    return 0;
}
