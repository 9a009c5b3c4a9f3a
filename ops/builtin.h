/* The built-in operators, as one plugin descriptor: the registry admits them
 * through the same ABI and checks as a third-party plugin. */
#ifndef CG_OPS_BUILTIN_H
#define CG_OPS_BUILTIN_H

#include "clgraph/plugin.h"

/* The built-in operators' plugin descriptor (static; never NULL). */
const cg_plugin_desc *cg_builtin_plugin(void);

#endif
