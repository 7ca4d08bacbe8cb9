#include "kiln/status.h"

const char *kiln_status_message(kiln_status_t status) {
  switch (status) {
#define KILN_STATUS_CASE_(name, msg)                                           \
  case KILN_STATUS_##name:                                                     \
    return msg;
    KILN_STATUS_LIST(KILN_STATUS_CASE_)
#undef KILN_STATUS_CASE_
  default:
    return "unknown status";
  }
}
