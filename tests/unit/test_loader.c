/* The loader's refusals, each against a deliberately broken plugin from tests/fixtures, and
 * the unknown scheme. TABQ_PLUGIN_PATH points at the fixtures; the build's own plugins are
 * found beside libtabq. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <tabq/dialect.h>
#include <tabq/tabq.h>

#include "cunit_main.h"

static tabq_error err;

static int connect_to(const char *url) {
  tabq_broker *b = NULL;
  int rc = tabq_connect(url, NULL, &b, &err);
  if (b)
    tabq_close(b);
  return rc;
}

static void mentions(const char *needle) {
  if (!strstr(err.message, needle))
    fprintf(stderr, "\nmessage '%s' lacks '%s'\n", err.message, needle);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, needle));
}

static void unknown_scheme_lists_installed(void) {
  CU_ASSERT_EQUAL(connect_to("nosuchdb://somewhere/x"), TABQ_BACKEND);
  CU_ASSERT_EQUAL(err.code, TABQ_BACKEND);
  mentions("'nosuchdb'");
  mentions("sqlite"); /* the installed schemes are listed */
  mentions("wellformed");
}

static void url_without_scheme(void) {
  CU_ASSERT_EQUAL(connect_to("jobs.db"), TABQ_BACKEND);
  mentions("no scheme");
}

static void dlopen_rejection_has_dlerror(void) {
  CU_ASSERT_EQUAL(connect_to("notelf:x"), TABQ_PLUGIN);
  mentions("notelf.so");
  mentions("cannot load plugin");
  /* glibc's dlerror text for a file that is not ELF */
  CU_ASSERT(strstr(err.message, "ELF") || strstr(err.message, "too short"));
}

static void missing_entry_symbol(void) {
  CU_ASSERT_EQUAL(connect_to("noentry:x"), TABQ_PLUGIN);
  mentions("noentry.so");
  mentions("tabq_plugin_entry");
}

static void abi_mismatch_names_both_versions(void) {
  CU_ASSERT_EQUAL(connect_to("badabi:x"), TABQ_PLUGIN);
  mentions("badabi.so");
  mentions("ABI 2.0");
  char host_abi[32];
  snprintf(host_abi, sizeof host_abi, "ABI %d.%d", TABQ_ABI_MAJOR, TABQ_ABI_MINOR);
  mentions(host_abi);
}

static void missing_member_is_named(void) {
  CU_ASSERT_EQUAL(connect_to("nomember:x"), TABQ_PLUGIN);
  mentions("nomember.so");
  mentions("Lease");
  mentions("'extend'");
}

static void entry_refusing_host(void) {
  CU_ASSERT_EQUAL(connect_to("refuses:x"), TABQ_PLUGIN);
  mentions("refuses.so");
  mentions("refused");
}

static void wellformed_plugin_loads_then_connect_fails(void) {
  /* Loading succeeds; its driver cannot connect, which is a BACKEND failure, not PLUGIN. */
  CU_ASSERT_EQUAL(connect_to("wellformed:x"), TABQ_BACKEND);
}

static void sqlite_loads_from_build_tree(void) {
  char path[] = "/tmp/tabq-loader-XXXXXX";
  int fd = mkstemp(path);
  CU_ASSERT_FATAL(fd >= 0);
  close(fd);
  char url[64];
  snprintf(url, sizeof url, "sqlite:%s", path);
  tabq_broker *b = NULL;
  CU_ASSERT_EQUAL(tabq_connect(url, NULL, &b, &err), TABQ_OK);
  if (b) {
    CU_ASSERT_STRING_EQUAL(tabq_dialect_name(b), "sqlite");
    CU_ASSERT_PTR_NOT_NULL(strstr(tabq_dialect_path(b), "sqlite.so"));
    tabq_close(b);
  }
  unlink(path);
}

int register_tests(void) {
  static CU_TestInfo tests[] = {
      {"unknown scheme lists installed schemes", unknown_scheme_lists_installed},
      {"URL without a scheme", url_without_scheme},
      {"file dlopen rejects, with dlerror", dlopen_rejection_has_dlerror},
      {"missing entry symbol", missing_entry_symbol},
      {"ABI mismatch names both versions and the file", abi_mismatch_names_both_versions},
      {"interface lacking a member names it", missing_member_is_named},
      {"entry refusing the host ABI", entry_refusing_host},
      {"well-formed plugin loads", wellformed_plugin_loads_then_connect_fails},
      {"sqlite plugin loads from the build tree", sqlite_loads_from_build_tree},
      CU_TEST_INFO_NULL,
  };
  ADD_SUITE("loader", NULL, NULL, tests);
  return 0;
}
