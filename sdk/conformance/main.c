/* tabq-conformance: one suite, written once against the public API and the plugin ABI, that
 * defines a correct dialect. Exit 0: every test run passed (skips allowed); 1: a test failed;
 * 2: it could not start (usage, a plugin it cannot load, a URL it cannot reach, no DDL). */
#include <CUnit/CUnit.h>
#include <CUnit/TestRun.h>
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit.h"
#include "report.h"

kit_state kit;

static const char usage[] =
    "usage: tabq-conformance (--plugin FILE | --scheme S) --url URL [--form rowlock|lease|advisory]"
    " [--ddl sqlite|postgres|mysql|FILE] [--junit FILE] [--only NAME] [--smoke] [--skip NAME]...;"
    " tabq-conformance --list"
    " prints each test's feature, forms and name";

const char *form_name(tabq_form f) {
  return f == TABQ_FORM_ROWLOCK ? "rowlock" : f == TABQ_FORM_ADVISORY ? "advisory" : "lease";
}

static tabq_form form_of(const char *name) {
  if (!strcmp(name, "rowlock"))
    return TABQ_FORM_ROWLOCK;
  if (!strcmp(name, "lease"))
    return TABQ_FORM_LEASE;
  if (!strcmp(name, "advisory"))
    return TABQ_FORM_ADVISORY;
  return 0;
}

/* The URL as printed: a password is masked, line breaks of a driver's message are spaces. */
static void shown_url(const char *url, char *out, size_t cap) {
  const char *at = strchr(url, '@'), *scheme_end = strstr(url, "://");
  const char *colon = scheme_end ? strchr(scheme_end + 3, ':') : NULL;
  if (at && colon && colon < at)
    snprintf(out, cap, "%.*s:***%s", (int)(colon - url), url, at);
  else
    snprintf(out, cap, "%s", url);
}

/* Cannot start: one line, exit 2. */
static _Noreturn void cannot_start(const char *fmt, ...) {
  char line[1536];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  for (char *p = line; *p; p++)
    if (*p == '\n' || *p == '\r' || *p == '\t')
      *p = ' ';
  size_t n = strlen(line);
  while (n && line[n - 1] == ' ')
    line[--n] = '\0';
  fprintf(stderr, "tabq-conformance: %s\n", line);
  exit(2);
}

static void list_tests(void);

#define MAX_SKIPS 8

typedef struct args {
  const char *plugin, *scheme, *url, *form, *ddl, *junit, *only, *child, *table;
  bool smoke;                      /* the smoke tests alone (KIT_SMOKE) */
  const char *skip[MAX_SKIPS + 1]; /* NULL-terminated */
  int nskip;
} args;

static args parse_args(int argc, char **argv) {
  args a = {0};
  for (int i = 1; i < argc; i++) {
    const char **slot = NULL;
    if (!strcmp(argv[i], "--plugin"))
      slot = &a.plugin;
    else if (!strcmp(argv[i], "--scheme"))
      slot = &a.scheme;
    else if (!strcmp(argv[i], "--url"))
      slot = &a.url;
    else if (!strcmp(argv[i], "--form"))
      slot = &a.form;
    else if (!strcmp(argv[i], "--ddl"))
      slot = &a.ddl;
    else if (!strcmp(argv[i], "--junit"))
      slot = &a.junit;
    else if (!strcmp(argv[i], "--only"))
      slot = &a.only;
    else if (!strcmp(argv[i], "--child"))
      slot = &a.child;
    else if (!strcmp(argv[i], "--table"))
      slot = &a.table;
    else if (!strcmp(argv[i], "--skip") && a.nskip < MAX_SKIPS)
      slot = &a.skip[a.nskip++];
    else if (!strcmp(argv[i], "--smoke")) {
      a.smoke = true;
      continue;
    } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      puts(usage);
      exit(0);
    } else if (!strcmp(argv[i], "--list")) {
      list_tests();
      exit(0);
    }
    if (!slot || i + 1 == argc)
      cannot_start("%s '%s'; %s", slot ? "no value after" : "unknown argument", argv[i], usage);
    *slot = argv[++i];
  }
  if (!a.url || (!a.child && !a.plugin == !a.scheme))
    cannot_start("%s", usage);
  if (a.form && !form_of(a.form))
    cannot_start("--form is rowlock, lease or advisory, not '%s'", a.form);
  return a;
}

/* Probes the plugin, checks the URL with the plugin's driver and with a broker, loads the DDL. */
static void start(const args *a) {
  char why[1024], url[1024];
  shown_url(a->url, url, sizeof url);
  int rc = a->plugin ? probe_file(a->plugin, &kit.plugin, why, sizeof why)
                     : probe_scheme(a->scheme, &kit.plugin, why, sizeof why);
  if (rc)
    cannot_start("%s", why);
  const tabq_plugin *p = kit.plugin.desc;
  const char *colon = strchr(a->url, ':');
  char scheme[64];
  snprintf(scheme, sizeof scheme, "%.*s", colon ? (int)(colon - a->url) : 0, a->url);
  bool served = false;
  for (const char *const *s = p->schemes; *s; s++)
    served |= !strcmp(*s, scheme);
  if (!served || (a->scheme && strcmp(a->scheme, scheme)))
    cannot_start("the URL %s has scheme '%s', which plugin %s (%s) does not serve", url, scheme,
                 kit.plugin.path, p->name);
  const char *family = a->ddl ? a->ddl : ddl_family_for(p->name);
  if (!family)
    family = ddl_family_for(p->driver_from);
  if (!family)
    cannot_start("no built-in DDL for plugin %s (%s): give --ddl FILE", kit.plugin.path, p->name);
  if (ddl_load(family, &kit.ddl, why, sizeof why))
    cannot_start("%s", why);
  if (a->plugin) {
    /* The broker must load this very file: its folder goes first on the search path. */
    char path[PATH_MAX * 2 + 2];
    const char *old = getenv("TABQ_PLUGIN_PATH");
    snprintf(path, sizeof path, "%.*s%s%s", (int)(strrchr(kit.plugin.path, '/') - kit.plugin.path),
             kit.plugin.path, old && *old ? ":" : "", old && *old ? old : "");
    setenv("TABQ_PLUGIN_PATH", path, 1);
  }
  kit.url = a->url;
  const char *rest = strchr(a->url, ':');
  if (kit.plugin.driver_scheme[0] && rest)
    snprintf(kit.driver_url, sizeof kit.driver_url, "%s%s", kit.plugin.driver_scheme, rest);
  else
    snprintf(kit.driver_url, sizeof kit.driver_url, "%s", a->url);
  tabq_conn *conn = NULL;
  probe_clear_failure();
  if ((rc = kit.plugin.driver->connect(kit.driver_url, &conn)))
    cannot_start("cannot reach %s: %s", url,
                 probe_last_failure()[0] ? probe_last_failure() : tabq_code_name((tabq_code)rc));
  const tabq_driver_v1 *d = kit.plugin.driver;
  kit.per_transaction = TABQ_HAS_MEMBER(d, tabq_driver_v1, session_scope) && d->session_scope &&
                        d->session_scope(conn) == TABQ_SESSION_PER_TRANSACTION;
  kit.plugin.driver->close(conn);
  tabq_broker *b;
  tabq_error err;
  if (tabq_connect(a->url, NULL, &b, &err))
    cannot_start("cannot connect a broker to %s: %s", url, err.message);
  char loaded[PATH_MAX];
  if (!realpath(tabq_dialect_path(b), loaded) || strcmp(loaded, kit.plugin.path))
    cannot_start("the broker for %s loaded %s, not the plugin %s", url, tabq_dialect_path(b),
                 kit.plugin.path);
  tabq_close(b);
  printf("tabq-conformance: plugin %s (%s, ABI %u.%u, driver %s), %s, DDL %s\n", kit.plugin.path,
         p->name, TABQ_ABI_MAJOR_OF(p->abi), TABQ_ABI_MINOR_OF(p->abi),
         p->driver ? "its own" : p->driver_from, url, kit.ddl.name);
}

static int set_rowlock(void) {
  kit.form = TABQ_FORM_ROWLOCK;
  return 0;
}
static int set_lease(void) {
  kit.form = TABQ_FORM_LEASE;
  return 0;
}
static int set_advisory(void) {
  kit.form = TABQ_FORM_ADVISORY;
  return 0;
}

/* Each group with the feature its tests count under unless they name their own. */
static const struct {
  const char *feature;
  const kit_test *tests;
} groups[] = {
    {"outcomes: ack, retry, retry_after, drop", outcome_tests},
    {"claims: one row, many rows, the shared pool", claim_tests},
    {"leases: extensions, lost leases", lease_tests},
    {"crashes: a killed process's rows return", crash_tests},
    {"FIFO groups", fifo_tests},
    {"custom events", custom_tests},
    {"publish_many", publish_tests},
    {"transactions of the service's own (publish in a transaction)", transaction_tests},
    {"decode policy and codecs", decode_tests},
    {"partition keys and workers_by_key", partition_tests},
    {"prefetch", prefetch_tests},
    {"a table with every role at once", every_role_tests},
    {"schema rendered by the dialect, and the statement check", schema_tests},
    {"unique jobs", unique_tests},
    {"deadlines", deadline_tests},
    {"pause and resume across brokers", pause_tests},
    {"cancel a job", cancel_tests},
    {"periodic jobs", schedule_tests},
    {"retention", retention_tests},
    {"concurrency limits", concurrency_tests},
};

/* --list: one line a test, "feature<TAB>forms<TAB>name", for the README's matrix. */
static void list_tests(void) {
  static const tabq_form all[] = {TABQ_FORM_ROWLOCK, TABQ_FORM_LEASE, TABQ_FORM_ADVISORY};
  for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++)
    for (const kit_test *t = groups[g].tests; t->name; t++) {
      printf("%s\t", t->feature ? t->feature : groups[g].feature);
      const char *sep = "";
      for (size_t i = 0; i < 3; i++)
        if (t->forms & all[i]) {
          printf("%s%s", sep, form_name(all[i]));
          sep = ",";
        }
      printf("\t%s\n", t->name);
    }
}

static const char *interface_of(tabq_form f) {
  return f == TABQ_FORM_ROWLOCK ? "RowLock" : f == TABQ_FORM_LEASE ? "Lease" : "Advisory";
}

/* The first of `skip` that `name` contains, else NULL. */
static const char *skipped(const char *name, const char *const *skip) {
  for (; *skip; skip++)
    if (strstr(name, *skip))
      return *skip;
  return NULL;
}

/* One CUnit suite per form; a test the plugin cannot serve, or left out by --skip, is reported
 * as skipped instead. */
static void register_form(tabq_form form, const char *only, bool smoke, const char *const *skip) {
  const char *name = form_name(form);
  if (!(kit.plugin.forms & form)) {
    char why[96];
    snprintf(why, sizeof why, "%s: the plugin declares no %s interface", name, interface_of(form));
    report_skip(name, "(form)", why);
    return;
  }
  if (form == TABQ_FORM_ADVISORY && kit.per_transaction) {
    report_skip(name, "(form)",
                "advisory: the URL declares a transaction pooler, through which the advisory form "
                "cannot hold (its locks belong to a server session)");
    return;
  }
  int (*init)(void) = form == TABQ_FORM_ROWLOCK ? set_rowlock
                      : form == TABQ_FORM_LEASE ? set_lease
                                                : set_advisory;
  CU_pSuite suite = CU_add_suite_with_setup_and_teardown(name, init, NULL, NULL, end_test);
  if (!suite)
    cannot_start("CUnit: %s", CU_get_error_msg());
  for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++)
    for (const kit_test *t = groups[g].tests; t->name; t++) {
      if (!(t->forms & form) || (only && !strstr(t->name, only)) ||
          (smoke && !(t->forms & KIT_SMOKE)))
        continue;
      kit.form = form;
      const char *why = t->needs ? t->needs() : NULL;
      if (!why && skipped(t->name, skip))
        why = "left out by --skip";
      if (why)
        report_skip(name, t->name, why);
      else if (!CU_add_test(suite, t->name, t->run))
        cannot_start("CUnit: %s (%s)", CU_get_error_msg(), t->name);
    }
}

int main(int argc, char **argv) {
  /* A line at a time: a dialect that crashes the kit still leaves the report up to its crash. */
  setvbuf(stdout, NULL, _IOLBF, 0);
  args a = parse_args(argc, argv);
  if (a.child)
    return child_main(a.child, a.url, a.form ? form_of(a.form) : TABQ_FORM_LEASE,
                      a.table ? a.table : "jobs");
  start(&a);
  if (CU_initialize_registry() != CUE_SUCCESS)
    cannot_start("CUnit: %s", CU_get_error_msg());
  report_begin();
  static const tabq_form all[] = {TABQ_FORM_ROWLOCK, TABQ_FORM_LEASE, TABQ_FORM_ADVISORY};
  for (size_t i = 0; i < 3; i++)
    if (!a.form || form_of(a.form) == all[i])
      register_form(all[i], a.only, a.smoke, a.skip);
  CU_run_all_tests();
  CU_cleanup_registry();
  return report_end(a.junit) ? 0 : 1;
}
