#include "core/cpu.h"

#include <unistd.h>

int sp_cpu_count(void) {
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return cpus > 0 && cpus < 4096 ? (int)cpus : 1;
}
