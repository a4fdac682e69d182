#include "core/cpu.h"

#include <unistd.h>

#include "sprout.h"

int sp_cpu_count(void) {
    /* a default, not a request: a machine with more cores than a thread
     * pool holds gets the most it holds */
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return cpus < 1 ? 1 : cpus > SPROUT_MAX_THREADS ? SPROUT_MAX_THREADS : (int)cpus;
}
