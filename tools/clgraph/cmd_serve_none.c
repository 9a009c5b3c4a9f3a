/* clgraph serve in a build without libmicrohttpd (-Dserve=disabled, or
 * libmicrohttpd-dev missing). */
#include <stdio.h>

#include "cli.h"

int cli_serve(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "clgraph serve: this clgraph was built without libmicrohttpd (install libmicrohttpd-dev and "
                    "rebuild, or see README.md, \"Build options\")\n");
    return CLI_FAIL;
}
