/* What the machine offers: its processor count. */
#ifndef SPROUT_CORE_CPU_H
#define SPROUT_CORE_CPU_H

/* The processors online (1 if unknown, at most SPROUT_MAX_THREADS): the
 * thread count used when the caller asks for "all cores" (<= 0). */
int sp_cpu_count(void);

#endif
