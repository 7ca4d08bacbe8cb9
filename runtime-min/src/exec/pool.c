/* The thread pool; see pool.h for the protocol. */
#include "pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#include "../platform/error.h"

#define KILN_POOL_SPINS 4096 /* busy polls (~50 us) before yielding the core */
#define KILN_POOL_YIELDS 64  /* polls with sched_yield before a worker sleeps */

struct kiln_pool_s {
  kiln_allocator_t alloc;
  uint32_t n_threads;
  uint32_t n_workers;          /* started */
  pthread_t *threads;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  /* The job: written by the caller before gen is incremented, read by workers after. */
  kiln_task_fn_t fn;
  void *arg;
  int32_t n_tasks;
  atomic_int next;             /* next task index */
  atomic_uint gen;             /* job number */
  atomic_uint pending;         /* workers not yet done with the current job */
  atomic_uint sleeping;
  atomic_int stop;
};

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ volatile("yield");
#endif
}

static void run_tasks(kiln_pool_t *p) {
  const int32_t n = p->n_tasks;
  for (int32_t i; (i = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed)) < n;)
    p->fn(p->arg, i, n);
}

static unsigned wait_job(kiln_pool_t *p, unsigned seen) {
  for (int spin = 0; spin < KILN_POOL_SPINS + KILN_POOL_YIELDS; ++spin) {
    unsigned g = atomic_load_explicit(&p->gen, memory_order_acquire);
    if (g != seen)
      return g;
    if (spin < KILN_POOL_SPINS)
      cpu_relax();
    else
      sched_yield(); /* more threads than free cores: let the others run */
  }
  pthread_mutex_lock(&p->mu);
  atomic_fetch_add(&p->sleeping, 1);
  unsigned g;
  while ((g = atomic_load(&p->gen)) == seen)
    pthread_cond_wait(&p->cv, &p->mu);
  atomic_fetch_sub(&p->sleeping, 1);
  pthread_mutex_unlock(&p->mu);
  return g;
}

static void *worker_main(void *arg) {
  kiln_pool_t *p = arg;
  unsigned seen = 0; /* gen starts at 0; no job is published before every worker exists */
  for (;;) {
    seen = wait_job(p, seen);
    if (atomic_load_explicit(&p->stop, memory_order_acquire))
      return NULL;
    run_tasks(p);
    atomic_fetch_sub_explicit(&p->pending, 1, memory_order_release);
  }
}

/* Publishes a job (or the stop request) to every worker. */
static void publish(kiln_pool_t *p) {
  atomic_store_explicit(&p->pending, p->n_workers, memory_order_relaxed);
  atomic_fetch_add(&p->gen, 1); /* seq_cst: pairs with the workers' sleeping/gen check */
  if (atomic_load(&p->sleeping)) {
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
  }
}

void kiln_pool_parallel_for(void *pool, kiln_task_fn_t fn, void *arg, int32_t n_tasks) {
  kiln_pool_t *p = pool;
  if (n_tasks <= 0)
    return;
  if (!p || p->n_workers == 0 || n_tasks == 1) {
    for (int32_t i = 0; i < n_tasks; ++i)
      fn(arg, i, n_tasks);
    return;
  }
  p->fn = fn;
  p->arg = arg;
  p->n_tasks = n_tasks;
  atomic_store_explicit(&p->next, 0, memory_order_relaxed);
  publish(p);
  run_tasks(p);
  for (unsigned spin = 0; atomic_load_explicit(&p->pending, memory_order_acquire) != 0; ++spin) {
    if (spin < KILN_POOL_SPINS)
      cpu_relax();
    else
      sched_yield(); /* a worker lost its core: let it finish */
  }
}

static void stop_workers(kiln_pool_t *p) {
  if (p->n_workers == 0)
    return;
  atomic_store_explicit(&p->stop, 1, memory_order_release);
  publish(p);
  for (uint32_t i = 0; i < p->n_workers; ++i)
    pthread_join(p->threads[i], NULL);
  p->n_workers = 0;
}

kiln_status_t kiln_pool_create(uint32_t n_threads, const kiln_allocator_t *alloc,
                               kiln_pool_t **out_pool, kiln_error_t *err) {
  *out_pool = NULL;
  if (n_threads < 1 || n_threads > 1024)
    return kiln_error_set(err, KILN_STATUS_INVALID_ARGUMENT,
                          "n_threads %u is outside 1..1024", n_threads);
  kiln_pool_t *p = kiln_mem_alloc(alloc, sizeof *p, 64, "the thread pool", err);
  if (!p)
    return err ? err->status : KILN_STATUS_OUT_OF_MEMORY;
  memset(p, 0, sizeof *p);
  p->alloc = *alloc;
  p->n_threads = n_threads;
  if (n_threads > 1) {
    p->threads = kiln_mem_alloc(alloc, (n_threads - 1) * sizeof *p->threads, 64,
                                "the thread pool", err);
    if (!p->threads) {
      kiln_mem_free(alloc, p, sizeof *p);
      return err ? err->status : KILN_STATUS_OUT_OF_MEMORY;
    }
  }
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv, NULL);
  for (uint32_t i = 0; i + 1 < n_threads; ++i) {
    int rc = pthread_create(&p->threads[i], NULL, worker_main, p);
    if (rc != 0) {
      kiln_pool_destroy(p);
      return kiln_error_set(err, KILN_STATUS_OUT_OF_MEMORY,
                            "cannot start worker thread %u of %u: %s", i + 1, n_threads - 1,
                            strerror(rc));
    }
    p->n_workers = i + 1;
  }
  *out_pool = p;
  return KILN_STATUS_OK;
}

void kiln_pool_destroy(kiln_pool_t *p) {
  if (!p)
    return;
  stop_workers(p);
  pthread_cond_destroy(&p->cv);
  pthread_mutex_destroy(&p->mu);
  kiln_allocator_t alloc = p->alloc;
  kiln_mem_free(&alloc, p->threads, (p->n_threads - 1) * sizeof *p->threads);
  kiln_mem_free(&alloc, p, sizeof *p);
}

uint32_t kiln_pool_threads(const kiln_pool_t *p) { return p ? p->n_threads : 1; }
