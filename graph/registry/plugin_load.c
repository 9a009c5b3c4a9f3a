/* dlopen-based plugin loading; every failure names the path and says why. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "read_file.h"
#include "registry.h"

cg_status cg_plugin_load_path(cg_context *ctx, const char *path) {
    /* dlopen would wait on a FIFO for a writer: a path (not a bare name
     * dlopen looks up) must be a regular file, checked without blocking. */
    if (strchr(path, '/')) {
        struct stat sb;
        int fd = cg_open_regular_quiet(path, O_RDONLY, 0, &sb);
        if (fd < 0 && !errno)
            return cg_error(CG_ERR_PLUGIN, "%s: cannot load plugin: not a regular file (%s)", path,
                            cg_file_kind(sb.st_mode));
        if (fd >= 0) close(fd);
    }
    dlerror();
    /* RTLD_LOCAL keeps one plugin's symbols from resolving another's. */
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        const char *why = dlerror();
        /* dlopen looks a name without a slash up on the library path, never
         * in the current directory: `--plugin libx.so` beside the file fails
         * with a bare "No such file". */
        if (!strchr(path, '/'))
            return cg_error(CG_ERR_PLUGIN,
                            "%s: cannot load plugin: %s (a name without a '/' is searched for on the library "
                            "path, LD_LIBRARY_PATH and the system's directories, not in the current directory: "
                            "write ./%s for a file here)",
                            path, why ? why : "unknown error", path);
        return cg_error(CG_ERR_PLUGIN, "%s: cannot load plugin: %s", path, why ? why : "unknown error");
    }
    dlerror();
    void *sym = dlsym(dl, CG_PLUGIN_ENTRY_SYMBOL);
    if (!sym) {
        dlclose(dl);
        return cg_error(CG_ERR_PLUGIN, "%s: not a clgraph plugin (no '%s' symbol)", path, CG_PLUGIN_ENTRY_SYMBOL);
    }
    cg_plugin_entry_fn entry;
    /* POSIX guarantees object and function pointers convert for dlsym. */
    *(void **)(&entry) = sym;
    const cg_plugin_desc *desc = entry();
    cg_status st = cg_registry_add_plugin(ctx, desc, path, dl);
    if (st) dlclose(dl);
    return st;
}

void cg_plugin_unload(void *dl) {
    if (dl) dlclose(dl);
}
