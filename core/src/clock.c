#include "clock.h"

int64_t tabq__now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t tabq__mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct timespec tabq__deadline_ms(int64_t mono_ms_at) {
  struct timespec ts = {.tv_sec = mono_ms_at / 1000, .tv_nsec = (mono_ms_at % 1000) * 1000000};
  return ts;
}
