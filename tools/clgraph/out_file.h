/* Output files of the clgraph tool (heat maps, plots, attention JSON, the
 * copies `quantize` makes) written whole or not at all, through the
 * library's cg_out_file: a full disk or a failed write leaves no empty or
 * cut file behind, and the old file, if any, as it was. The calls keep
 * errno for the callers' messages. */
#ifndef CG_TOOLS_OUT_FILE_H
#define CG_TOOLS_OUT_FILE_H

#include <stdio.h>

#include "clgraph/clgraph.h"

typedef struct cli_file {
    cg_out_file *h;
    FILE *f;
} cli_file;

/* A stream for `path` ("w" semantics); NULL with errno set on failure. */
FILE *cli_file_open(cli_file *o, const char *path);

/* Flushes and closes the stream and, when every write succeeded, moves the
 * file onto its path; otherwise the temporary file is removed. 0, or the
 * errno value of the first failure. */
int cli_file_commit(cli_file *o);

/* Closes the stream and removes the temporary file. */
void cli_file_abort(cli_file *o);

#endif
