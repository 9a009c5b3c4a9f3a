/* Whole-or-nothing output files of the clgraph tool (out_file.h). */
#include "out_file.h"

#include <errno.h>

FILE *cli_file_open(cli_file *o, const char *path) {
    o->f = NULL;
    if (cg_out_file_open(path, &o->h)) return NULL;
    return o->f = cg_out_file_stream(o->h);
}

int cli_file_commit(cli_file *o) {
    cg_status st = cg_out_file_commit(o->h);
    o->h = NULL;
    o->f = NULL;
    return st ? (errno ? errno : EIO) : 0;
}

void cli_file_abort(cli_file *o) {
    cg_out_file_abort(o->h);
    o->h = NULL;
    o->f = NULL;
}
