/* kiln runtime-min: what the governor (src/governor) reaches inside a session. Internal.
 * The session calls the pacer through pointers, so an app that never attaches a governor
 * links none of its code. */
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
/* Runs the next forward passes on n threads (clamped to 1..max); returns the count used. */
uint32_t kiln_session_use_threads(kiln_session_t *session, uint32_t n);

#endif /* KILN_EXEC_SESSION_INTERNAL_H_ */
