/* kiln runtime-min: the thread pool behind kiln_exec_ctx_t.parallel_for. Internal.
 *
 * n_threads - 1 workers are created up front; the calling thread is the n-th. A call
 * splits the tasks into one contiguous share per thread and publishes the job with one
 * atomic increment; each thread runs its share in order, then takes the last tasks of the
 * others' shares until none is left, and the call returns when every worker has checked
 * out of the job. Between jobs workers spin briefly (a decode step issues many small jobs
 * back to back), then sleep on a condition variable. With 1 thread parallel_for is a plain
 * loop. */
#ifndef KILN_EXEC_POOL_H_
#define KILN_EXEC_POOL_H_

#include <stdint.h>

#include "kiln/abi.h"
#include "kiln/kiln.h"

typedef struct kiln_pool_s kiln_pool_t;

kiln_status_t kiln_pool_create(uint32_t n_threads, const kiln_allocator_t *alloc,
                               kiln_pool_t **out_pool, kiln_error_t *err);
void kiln_pool_destroy(kiln_pool_t *pool);
uint32_t kiln_pool_threads(const kiln_pool_t *pool);
/* Jobs from now on run on the caller and the first n - 1 workers (n clamped to
 * 1..threads); the others park off their cores until wanted. Call between jobs, from the
 * thread that calls parallel_for; returns once every worker is parked or back. Returns n. */
uint32_t kiln_pool_set_active(kiln_pool_t *pool, uint32_t n);

/* Pins worker i to core cpus[i] (1 <= i < n) and makes cpus[0] the caller's core between
 * kiln_pool_enter and _leave (the caller's own affinity is restored after each call).
 * Returns how many threads are pinned (the OS may refuse some). */
uint32_t kiln_pool_pin(kiln_pool_t *pool, const int32_t *cpus, uint32_t n);
void kiln_pool_enter(kiln_pool_t *pool);
/* Sets the workers' nice value (Linux and Android: per thread); returns how many the OS
 * allowed (a lower value than the process's needs a privilege most apps lack). */
uint32_t kiln_pool_set_nice(kiln_pool_t *pool, int nice);
void kiln_pool_leave(kiln_pool_t *pool);

/* A kiln_parallel_for_fn_t; pool is a kiln_pool_t *. Not reentrant: fn must not call it. */
void kiln_pool_parallel_for(void *pool, kiln_task_fn_t fn, void *arg, int32_t n_tasks);

#endif /* KILN_EXEC_POOL_H_ */
