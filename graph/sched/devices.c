/* The public device listing (clgraph.h: cg_device_count and friends), from
 * the backend interface's device table. */
#include "backend.h"
#include "clgraph/clgraph.h"

int cg_device_count(void) { return cg_dev_count(); }

const char *cg_device_note(void) { return cg_dev_unavailable_reason(); }

const char *cg_device_describe(int i, char *buf, size_t size) {
    const cg_device_info *info = cg_dev_info_at(i);
    if (!info) return NULL;
    if (buf && size) cg_dev_describe(i, buf, size);
    return info->name;
}
