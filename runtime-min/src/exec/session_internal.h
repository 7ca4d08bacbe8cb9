/* kiln runtime-min: what the governor (src/governor) and the module library (src/module)
 * reach inside a session. Internal. The session calls them through pointers, so an app that
 * uses neither links none of their code. */
#ifndef KILN_EXEC_SESSION_INTERNAL_H_
#define KILN_EXEC_SESSION_INTERNAL_H_

#include <stdint.h>

#include "kiln/kiln.h"

typedef struct kiln_session_pacer_s {
  void (*before)(void *user);  /* before each decode: wait out the idle time */
  /* after each decode: its compute time and the threads it ran on */
  void (*after)(void *user, kiln_session_t *session, double compute_s, uint32_t threads);
  /* the session forgets the pacer (detached, or the session is destroyed) */
  void (*detach)(void *user);
  void *user;
} kiln_session_pacer_t;

/* NULL detaches (calling the old pacer's detach). */
void kiln_session_set_pacer(kiln_session_t *session, const kiln_session_pacer_t *pacer);
/* The pool's threads (the most a decode can use). */
uint32_t kiln_session_max_threads(const kiln_session_t *session);
/* Runs the next forward passes on n threads (clamped to 1..max, and to the cores the
 * placement has); returns the count used. */
uint32_t kiln_session_use_threads(kiln_session_t *session, uint32_t n);
/* A pinned session (options.pin_threads) moves its threads onto the cores after the `skip`
 * fastest (at least one core kept); returns the skip applied, 0 when the session is not
 * pinned. */
uint32_t kiln_session_place_threads(kiln_session_t *session, uint32_t skip);

/* What the module library set on a session (kiln/module.h). */
typedef struct kiln_session_modules_s {
  const uint8_t *weights;  /* what the code reads; NULL: the artifact's weights */
  const int32_t *banned;   /* token ids whose logits are set to -inf after each forward */
  uint32_t n_banned;       /* (each < the vocabulary) */
  void (*destroy)(void *user); /* the session is destroyed */
  void *user;
} kiln_session_modules_t;

/* Replaces the record (nothing is called on the old one: the owner keeps it). Call between
 * forward passes only. */
void kiln_session_set_modules(kiln_session_t *session, const kiln_session_modules_t *modules);
const kiln_session_modules_t *kiln_session_modules(const kiln_session_t *session);
const kiln_artifact_t *kiln_session_artifact(const kiln_session_t *session);

#endif /* KILN_EXEC_SESSION_INTERNAL_H_ */
