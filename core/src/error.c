/* Error codes' names and texts, the error record, and the thread's last plugin report. */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const code_names[] = {
#define NAME_(name, text) #name,
    TABQ_CODE_LIST(NAME_)
#undef NAME_
};
static const char *const code_texts[] = {
#define TEXT_(name, text) text,
    TABQ_CODE_LIST(TEXT_)
#undef TEXT_
};

const char *tabq_code_name(tabq_code code) {
  return (unsigned)code < TABQ_CODE_COUNT_ ? code_names[code] : "UNKNOWN";
}

const char *tabq_strerror(tabq_code code) {
  return (unsigned)code < TABQ_CODE_COUNT_ ? code_texts[code] : "unknown error code";
}

/* What the plugin said last on this thread. A plugin reports, then returns the code. */
static _Thread_local struct {
  int code;
  char message[512];
  char sqlstate[8];
  long native;
  unsigned position;
} last_report;

int tabq__plugin_fail_v(int code, const char *sqlstate, long native, const char *fmt, va_list ap) {
  last_report.code = code;
  vsnprintf(last_report.message, sizeof last_report.message, fmt, ap);
  snprintf(last_report.sqlstate, sizeof last_report.sqlstate, "%s", sqlstate ? sqlstate : "");
  last_report.native = native;
  last_report.position = 0;
  return code;
}

void tabq__plugin_fail_position(unsigned position) {
  last_report.position = position;
}

void tabq__err_clear(tabq_error *e) {
  if (e)
    memset(e, 0, sizeof *e);
}

static void set_place(tabq_error *e, const char *table, const char *statement) {
  snprintf(e->table, sizeof e->table, "%s", table ? table : "");
  snprintf(e->statement, sizeof e->statement, "%s", statement ? statement : "");
}

int tabq__err_set(tabq_error *e, int code, const char *table, const char *statement,
                  const char *fmt, ...) {
  if (!e)
    return code;
  e->code = (tabq_code)code;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->message, sizeof e->message, fmt, ap);
  va_end(ap);
  e->sqlstate[0] = '\0';
  e->native = 0;
  e->position = 0;
  e->duplicate_id = 0;
  set_place(e, table, statement);
  return code;
}

int tabq__err_from_plugin(tabq_error *e, int code, const char *table, const char *statement) {
  if (!e)
    return code;
  e->code = (tabq_code)code;
  if (last_report.code == code && last_report.message[0]) {
    memcpy(e->message, last_report.message, sizeof e->message);
    memcpy(e->sqlstate, last_report.sqlstate, sizeof e->sqlstate);
    e->native = last_report.native;
    e->position = last_report.position;
  } else {
    snprintf(e->message, sizeof e->message, "the dialect failed with %s and said nothing more",
             tabq_code_name((tabq_code)code));
    e->sqlstate[0] = '\0';
    e->native = 0;
    e->position = 0;
  }
  last_report.code = 0;
  last_report.message[0] = '\0';
  last_report.position = 0;
  e->duplicate_id = 0;
  set_place(e, table, statement);
  return code;
}
