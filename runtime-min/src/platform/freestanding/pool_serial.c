/* The thread pool (../../exec/pool.h) for programs without threads (the freestanding
 * Hexagon build): one thread, tasks run in order on the caller. More threads are refused
 * with a message rather than silently run on one. */
#include "../../exec/pool.h"

#include <string.h>

#include "../error.h"

struct kiln_pool_s {
  kiln_allocator_t alloc;
};

kiln_status_t kiln_pool_create(uint32_t n_threads, const kiln_allocator_t *alloc,
                               kiln_pool_t **out_pool, kiln_error_t *err) {
  *out_pool = NULL;
  if (n_threads != 1)
    return kiln_error_set(err, KILN_STATUS_INVALID_ARGUMENT,
                          "n_threads %u: this freestanding runtime has no threads (use 1)",
                          n_threads);
  kiln_pool_t *p = kiln_mem_alloc(alloc, sizeof *p, 64, "the thread pool", err);
  if (!p)
    return err ? err->status : KILN_STATUS_OUT_OF_MEMORY;
  p->alloc = *alloc;
  *out_pool = p;
  return KILN_STATUS_OK;
}

void kiln_pool_destroy(kiln_pool_t *p) {
  if (!p)
    return;
  kiln_allocator_t alloc = p->alloc;
  kiln_mem_free(&alloc, p, sizeof *p);
}

uint32_t kiln_pool_threads(const kiln_pool_t *p) { (void)p; return 1; }

void kiln_pool_parallel_for(void *pool, kiln_task_fn_t fn, void *arg, int32_t n_tasks) {
  (void)pool;
  for (int32_t i = 0; i < n_tasks; ++i)
    fn(arg, i, n_tasks);
}

uint32_t kiln_pool_set_active(kiln_pool_t *p, uint32_t n) { (void)p; (void)n; return 1; }

uint32_t kiln_pool_pin(kiln_pool_t *p, const int32_t *cpus, uint32_t n) {
  (void)p;
  (void)cpus;
  (void)n;
  return 0;
}
void kiln_pool_enter(kiln_pool_t *p) { (void)p; }
void kiln_pool_leave(kiln_pool_t *p) { (void)p; }
uint32_t kiln_pool_set_nice(kiln_pool_t *p, int nice) {
  (void)p;
  (void)nice;
  return 0;
}
