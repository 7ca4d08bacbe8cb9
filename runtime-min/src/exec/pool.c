/* The thread pool; see pool.h for the protocol. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_setaffinity, gettid */
#endif
#include "pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../platform/error.h"

#define KILN_POOL_SPINS 4096 /* busy polls (~50 us) before yielding the core */
#define KILN_POOL_YIELDS 64  /* polls with sched_yield before a worker sleeps */

/* The tasks a thread has left of the current job: [lo, hi) packed as lo | hi << 32. The
 * owner takes from the front, thieves from the back, both by compare-and-swap. Each on
 * lines of its own (128 bytes: adjacent-line prefetchers pair 64-byte lines), so a
 * thread's takes stay in its own cache until someone steals. */
typedef struct {
  _Alignas(128) atomic_uint_fast64_t range;
  pid_t tid; /* the worker's kernel thread id, for pinning */
} slot_t;

struct kiln_pool_s {
  kiln_allocator_t alloc;
  uint32_t n_threads;
  uint32_t n_workers;          /* started */
  /* Threads that take part in jobs (kiln_pool_set_active): the caller and workers 1..
   * active-1; the others park on cv until they are wanted again. Written by the caller
   * between jobs only. */
  atomic_uint active;
  pthread_t *threads;
  slot_t *slots;               /* n_threads: the caller's is 0, worker i's is i + 1 */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pthread_cond_t ack;          /* a worker parked or left the park */
  uint32_t parked;             /* under mu */
  /* The job: written by the caller before gen is incremented, read by workers after. */
  kiln_task_fn_t fn;
  void *arg;
  int32_t n_tasks;
  atomic_uint started;         /* workers that have taken their slot number */
  atomic_uint tids_known;      /* workers that have written their tid */
  int caller_cpu;              /* kiln_pool_pin: the caller's core in jobs, -1: none */
  cpu_set_t caller_saved;      /* the caller's affinity outside kiln_pool_enter/leave */
  int caller_pinned;
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

/* The front (owner) or back (thief) task of a slot, or -1 when it has none left. */
static int32_t take(slot_t *s, int back) {
  uint_fast64_t r = atomic_load_explicit(&s->range, memory_order_relaxed);
  for (;;) {
    const uint32_t lo = (uint32_t)r, hi = (uint32_t)(r >> 32);
    if (lo >= hi)
      return -1;
    const uint_fast64_t next = back ? r - ((uint_fast64_t)1 << 32) : r + 1;
    if (atomic_compare_exchange_weak_explicit(&s->range, &r, next, memory_order_relaxed,
                                              memory_order_relaxed))
      return (int32_t)(back ? hi - 1 : lo);
  }
}

/* Thread `self` runs its own contiguous share of the tasks in order - one forward stream
 * of weights, as a static split would - then takes the others' last tasks, so a thread
 * slowed for a while (a busy core, the hypervisor) is helped instead of waited for. Ranges
 * only shrink, so one pass over the others leaves no task untaken. */
static void run_tasks(kiln_pool_t *p, uint32_t self) {
  const int32_t n = p->n_tasks;
  for (int32_t i; (i = take(&p->slots[self], 0)) >= 0;)
    p->fn(p->arg, i, n);
  const uint32_t t = atomic_load_explicit(&p->active, memory_order_relaxed);
  for (uint32_t k = 1; k < t; ++k) {
    slot_t *victim = &p->slots[(self + k) % t];
    for (int32_t i; (i = take(victim, 1)) >= 0;)
      p->fn(p->arg, i, n);
  }
}

/* Returns the next job's number, or `seen` when this worker left the active set. */
static unsigned wait_job(kiln_pool_t *p, unsigned seen, uint32_t self) {
  for (int spin = 0; spin < KILN_POOL_SPINS + KILN_POOL_YIELDS; ++spin) {
    unsigned g = atomic_load_explicit(&p->gen, memory_order_acquire);
    if (g != seen)
      return g;
    if (self >= atomic_load_explicit(&p->active, memory_order_relaxed))
      return seen;
    if (spin < KILN_POOL_SPINS)
      cpu_relax();
    else
      sched_yield(); /* more threads than free cores: let the others run */
  }
  pthread_mutex_lock(&p->mu);
  atomic_fetch_add(&p->sleeping, 1);
  unsigned g;
  while ((g = atomic_load(&p->gen)) == seen && self < atomic_load(&p->active))
    pthread_cond_wait(&p->cv, &p->mu);
  atomic_fetch_sub(&p->sleeping, 1);
  pthread_mutex_unlock(&p->mu);
  return g;
}

/* Off the core until kiln_pool_set_active wants this worker again (or stop); the handshake
 * on `parked` lets set_active return only when every worker is where it belongs, so no
 * job is published while one is on its way in or out. */
static unsigned park(kiln_pool_t *p, uint32_t self) {
  pthread_mutex_lock(&p->mu);
  ++p->parked;
  pthread_cond_broadcast(&p->ack);
  while (self >= atomic_load(&p->active) && !atomic_load(&p->stop))
    pthread_cond_wait(&p->cv, &p->mu);
  --p->parked;
  const unsigned seen = atomic_load(&p->gen);
  pthread_cond_broadcast(&p->ack);
  pthread_mutex_unlock(&p->mu);
  return seen;
}

static void *worker_main(void *arg) {
  kiln_pool_t *p = arg;
  const uint32_t self = atomic_fetch_add_explicit(&p->started, 1, memory_order_relaxed) + 1;
  p->slots[self].tid = (pid_t)syscall(SYS_gettid);
  atomic_fetch_add_explicit(&p->tids_known, 1, memory_order_release);
  unsigned seen = 0; /* gen starts at 0; no job is published before every worker exists */
  for (;;) {
    seen = wait_job(p, seen, self);
    if (atomic_load_explicit(&p->stop, memory_order_acquire))
      return NULL;
    if (self >= atomic_load_explicit(&p->active, memory_order_relaxed)) {
      seen = park(p, self);
      continue;
    }
    run_tasks(p, self);
    atomic_fetch_sub_explicit(&p->pending, 1, memory_order_release);
  }
}

/* Publishes a job (or the stop request) to every worker. */
static void publish(kiln_pool_t *p, uint32_t workers) {
  atomic_store_explicit(&p->pending, workers, memory_order_relaxed);
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
  const uint32_t active = p ? atomic_load_explicit(&p->active, memory_order_relaxed) : 1;
  if (!p || active <= 1 || n_tasks == 1) {
    for (int32_t i = 0; i < n_tasks; ++i)
      fn(arg, i, n_tasks);
    return;
  }
  p->fn = fn;
  p->arg = arg;
  p->n_tasks = n_tasks;
  const uint64_t n = (uint64_t)n_tasks, t = active;
  for (uint64_t i = 0; i < t; ++i) /* even contiguous shares; publish() orders the stores */
    atomic_store_explicit(&p->slots[i].range, n * i / t | (n * (i + 1) / t) << 32,
                          memory_order_relaxed);
  publish(p, active - 1);
  run_tasks(p, 0);
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
  publish(p, p->n_workers);
  pthread_mutex_lock(&p->mu); /* the parked workers too */
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
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
  p->caller_cpu = -1;
  atomic_init(&p->active, n_threads);
  if (n_threads > 1) {
    p->threads = kiln_mem_alloc(alloc, (n_threads - 1) * sizeof *p->threads, 64,
                                "the thread pool", err);
    p->slots = p->threads ? kiln_mem_alloc(alloc, n_threads * sizeof *p->slots,
                                           _Alignof(slot_t), "the thread pool", err)
                          : NULL;
    if (!p->slots) {
      if (p->threads)
        kiln_mem_free(alloc, p->threads, (n_threads - 1) * sizeof *p->threads);
      kiln_mem_free(alloc, p, sizeof *p);
      return err ? err->status : KILN_STATUS_OUT_OF_MEMORY;
    }
    memset(p->slots, 0, n_threads * sizeof *p->slots);
  }
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv, NULL);
  pthread_cond_init(&p->ack, NULL);
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
  pthread_cond_destroy(&p->ack);
  pthread_mutex_destroy(&p->mu);
  kiln_allocator_t alloc = p->alloc;
  kiln_mem_free(&alloc, p->threads, (p->n_threads - 1) * sizeof *p->threads);
  kiln_mem_free(&alloc, p->slots, p->n_threads * sizeof *p->slots);
  kiln_mem_free(&alloc, p, sizeof *p);
}

uint32_t kiln_pool_threads(const kiln_pool_t *p) { return p ? p->n_threads : 1; }

uint32_t kiln_pool_set_active(kiln_pool_t *p, uint32_t n) {
  if (!p)
    return 1;
  if (n < 1)
    n = 1;
  if (n > p->n_threads)
    n = p->n_threads;
  pthread_mutex_lock(&p->mu);
  atomic_store(&p->active, n);
  pthread_cond_broadcast(&p->cv);
  const uint32_t out = p->n_workers + 1 > n ? p->n_workers + 1 - n : 0;
  while (p->parked != out)
    pthread_cond_wait(&p->ack, &p->mu);
  pthread_mutex_unlock(&p->mu);
  return n;
}

static int pin_tid(pid_t tid, int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  return sched_setaffinity(tid, sizeof one, &one) == 0;
}

uint32_t kiln_pool_pin(kiln_pool_t *p, const int32_t *cpus, uint32_t n) {
  if (!p || !cpus || n == 0)
    return 0;
  while (atomic_load_explicit(&p->tids_known, memory_order_acquire) != p->n_workers)
    sched_yield(); /* workers write their tid first thing; this waits microseconds */
  uint32_t pinned = 0;
  for (uint32_t i = 1; i < n && i <= p->n_workers; ++i)
    pinned += (uint32_t)pin_tid(p->slots[i].tid, cpus[i]);
  cpu_set_t probe; /* the caller is pinned per call; check once that the OS allows it */
  if (sched_getaffinity(0, sizeof probe, &probe) == 0 && CPU_ISSET(cpus[0], &probe)) {
    p->caller_cpu = cpus[0];
    ++pinned;
  }
  return pinned;
}

void kiln_pool_enter(kiln_pool_t *p) {
  if (!p || p->caller_cpu < 0)
    return;
  p->caller_pinned = sched_getaffinity(0, sizeof p->caller_saved, &p->caller_saved) == 0 &&
                     pin_tid(0, p->caller_cpu);
}

void kiln_pool_leave(kiln_pool_t *p) {
  if (!p || !p->caller_pinned)
    return;
  sched_setaffinity(0, sizeof p->caller_saved, &p->caller_saved);
  p->caller_pinned = 0;
}

uint32_t kiln_pool_set_nice(kiln_pool_t *p, int nice) {
  if (!p)
    return 0;
  while (atomic_load_explicit(&p->tids_known, memory_order_acquire) != p->n_workers)
    sched_yield();
  uint32_t applied = 0;
  for (uint32_t i = 1; i <= p->n_workers; ++i) /* Linux: per thread, by its tid */
    applied += (uint32_t)(setpriority(PRIO_PROCESS, (id_t)p->slots[i].tid, nice) == 0);
  return applied;
}
