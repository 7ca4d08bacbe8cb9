/* kiln runtime-min: status codes.
 *
 * Every fallible function returns kiln_status_t; 0 is success. Codes come from one
 * X-macro so that names and messages cannot drift apart.
 */
#ifndef KILN_STATUS_H_
#define KILN_STATUS_H_

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_STATUS_LIST(X)                                                     \
  X(OK, "ok")                                                                  \
  X(INVALID_ARGUMENT, "invalid argument")                                      \
  X(OUT_OF_RANGE, "value out of range")                                        \
  X(UNSUPPORTED, "unsupported")                                                \
  X(CORRUPT, "corrupt or truncated data")                                      \
  X(OUT_OF_MEMORY, "out of memory")                                            \
  X(BUFFER_TOO_SMALL, "output buffer too small")                               \
  X(IO_ERROR, "i/o error")                                                     \
  X(BAD_SIGNATURE, "missing or invalid signature")

typedef enum kiln_status_e {
#define KILN_STATUS_ENUM_(name, msg) KILN_STATUS_##name,
  KILN_STATUS_LIST(KILN_STATUS_ENUM_)
#undef KILN_STATUS_ENUM_
  KILN_STATUS_COUNT_
} kiln_status_t;

/* Human-readable message for a status code; never NULL. */
const char *kiln_status_message(kiln_status_t status);

#define KILN_RETURN_IF_ERROR(expr)                                             \
  do {                                                                         \
    kiln_status_t kiln_status_tmp_ = (expr);                                   \
    if (kiln_status_tmp_ != KILN_STATUS_OK)                                    \
      return kiln_status_tmp_;                                                 \
  } while (0)

#ifdef __cplusplus
}
#endif

#endif /* KILN_STATUS_H_ */
