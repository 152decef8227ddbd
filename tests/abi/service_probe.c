/* A stand-in for libtabq in abi_check_cases (test_abi_check.sh): a few of tabq.h's functions,
 * whose signatures reach the service API's structs, built in a second against altered copies
 * of the headers. PROBE_* macros give the altered builds their own functions. */
#define TABQ_BUILDING_LIBRARY /* TABQ_API exports, as in libtabq */
#include <tabq/tabq.h>

#ifndef PROBE_STATS_SIZE
#define PROBE_STATS_SIZE size_t
#endif

TABQ_API int tabq_connect(const char *url, const tabq_broker_options *options, tabq_broker **out,
                          tabq_error *err) {
  (void)url, (void)options, (void)out, (void)err;
  return 0;
}

TABQ_API int tabq_subscribe(tabq_broker *b, const tabq_table *table,
                            const tabq_subscription_options *options, tabq_subscription **out,
                            tabq_error *err) {
  (void)b, (void)table, (void)options, (void)out, (void)err;
  return 0;
}

TABQ_API int tabq_publish(tabq_broker *b, const tabq_table *table, const tabq_message *m,
                          tabq_error *err) {
  (void)b, (void)table, (void)m, (void)err;
  return 0;
}

TABQ_API void tabq_subscription_stats(const tabq_subscription *s, tabq_stats *out,
                                      PROBE_STATS_SIZE size) {
  (void)s, (void)out, (void)size;
}

TABQ_API int tabq_delivery_settle(tabq_delivery *d, tabq_outcome outcome, tabq_error *err) {
  (void)d, (void)outcome, (void)err;
  return 0;
}

#ifndef PROBE_WITHOUT_STRERROR
TABQ_API const char *tabq_strerror(tabq_code code) {
  (void)code;
  return "";
}
#endif

#ifdef PROBE_ADDED_FUNCTION
TABQ_API int tabq_probe_added(void);
TABQ_API int tabq_probe_added(void) {
  return 0;
}
#endif
