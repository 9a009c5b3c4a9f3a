/* Plan statistics (cg_plan_stats, clgraph.h) for code above the scheduler
 * that sums those of several plans (a translator's two decoder steps). */
#ifndef CG_GRAPH_SCHED_PLAN_STATS_H
#define CG_GRAPH_SCHED_PLAN_STATS_H

#include "clgraph/clgraph.h"

/* *total += *s, field by field. */
void cg_plan_stats_add(cg_plan_stats *total, const cg_plan_stats *s);

#endif
