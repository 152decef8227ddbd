/* The loader: how it finds plugins (manifests and file names, never by loading a stranger), and
 * its refusals, each against a deliberately broken plugin from tests/fixtures or a folder the
 * test makes. ctest points TABQ_PLUGIN_PATH at the fixtures' refusals/ folder; the other
 * scenarios are its sibling folders, and each test sets TABQ_PLUGIN_PATH before it connects (the
 * loader reads it at every connect). The build's own plugins are found beside libtabq. */
#define _GNU_SOURCE /* nftw's FTW_DEPTH */
#include <elf.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <link.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <tabq/sys/dialect.h>
#include <tabq/tabq.h>

#include "cunit_main.h"

static tabq_error err;
static char refusals[PATH_MAX], conflict[PATH_MAX + 16], strangers[PATH_MAX + 16];
static char scratch[] = "/tmp/tabq-loader-XXXXXX"; /* folders the tests make, removed at the end */

static int connect_in(const char *plugin_path, const char *url) {
  setenv("TABQ_PLUGIN_PATH", plugin_path, 1);
  tabq_broker *b = NULL;
  int rc = tabq_connect(url, NULL, &b, &err);
  if (b)
    tabq_close(b);
  return rc;
}

static int connect_to(const char *url) {
  return connect_in(refusals, url);
}

static void mentions(const char *needle) {
  if (!strstr(err.message, needle))
    fprintf(stderr, "\nmessage '%s' lacks '%s'\n", err.message, needle);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, needle));
}

/* A path under the scratch folder. */
static const char *in_scratch(const char *name) {
  static char path[4][PATH_MAX];
  static unsigned next;
  char *p = path[next++ % 4];
  snprintf(p, PATH_MAX, "%s/%s", scratch, name);
  return p;
}

static void make_dir(const char *path, mode_t mode) {
  CU_ASSERT_FATAL(mkdir(path, 0700) == 0);
  CU_ASSERT_FATAL(chmod(path, mode) == 0); /* chmod, so the umask does not decide */
}

static void write_file(const char *path, const void *data, size_t len, mode_t mode) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  CU_ASSERT_FATAL(fd >= 0);
  CU_ASSERT_FATAL(write(fd, data, len) == (ssize_t)len);
  close(fd);
  CU_ASSERT_FATAL(chmod(path, mode) == 0);
}

static void copy_file(const char *from, const char *to, mode_t mode) {
  static char data[1 << 20];
  int fd = open(from, O_RDONLY);
  CU_ASSERT_FATAL(fd >= 0);
  ssize_t n = read(fd, data, sizeof data);
  close(fd);
  CU_ASSERT_FATAL(n > 0 && n < (ssize_t)sizeof data);
  write_file(to, data, (size_t)n, mode);
}

/* <dir>/<name> from the fixtures' refusals/ folder into `dir`. */
static void copy_fixture(const char *name, const char *dir, mode_t mode) {
  char from[2 * PATH_MAX], to[2 * PATH_MAX];
  snprintf(from, sizeof from, "%s/%s", refusals, name);
  snprintf(to, sizeof to, "%s/%s", dir, name);
  copy_file(from, to, mode);
}

static void write_text(const char *path, const char *text) {
  write_file(path, text, strlen(text), 0644);
}

static bool exists(const char *path) {
  return access(path, F_OK) == 0;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  return remove(path);
}

static int suite_init(void) {
  const char *fixtures = getenv("TABQ_PLUGIN_PATH");
  if (!fixtures || !mkdtemp(scratch))
    return -1;
  snprintf(refusals, sizeof refusals, "%s", fixtures);
  char *slash = strrchr(fixtures, '/');
  if (!slash)
    return -1;
  int len = (int)(slash - fixtures);
  snprintf(conflict, sizeof conflict, "%.*s/conflict", len, fixtures);
  snprintf(strangers, sizeof strangers, "%.*s/strangers", len, fixtures);
  return 0;
}

/* The later suites run only where the first made the scratch folder. */
static int scratch_made(void) {
  return strstr(scratch, "XXXXXX") ? -1 : 0;
}

static int suite_clean(void) {
  return nftw(scratch, remove_one, 8, FTW_DEPTH | FTW_PHYS);
}

/* ---- Finding a plugin ------------------------------------------------------------------- */

static void unknown_scheme_lists_installed(void) {
  CU_ASSERT_EQUAL(connect_to("nosuchdb://somewhere/x"), TABQ_BACKEND);
  CU_ASSERT_EQUAL(err.code, TABQ_BACKEND);
  mentions("'nosuchdb'");
  mentions("sqlite");     /* from the build's manifests, beside libtabq */
  mentions("wellformed"); /* from a fixture's manifest */
  mentions("truncated");  /* from a file name: truncated.so has no manifest */
  mentions(refusals);     /* the folders searched */
}

static void url_without_scheme(void) {
  CU_ASSERT_EQUAL(connect_to("jobs.db"), TABQ_BACKEND);
  mentions("no scheme");
}

static void wellformed_plugin_loads_then_connect_fails(void) {
  /* Loading succeeds; its driver cannot connect, which is a BACKEND failure, not PLUGIN. */
  CU_ASSERT_EQUAL(connect_to("wellformed:x"), TABQ_BACKEND);
}

static void sqlite_loads_from_build_tree(void) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s", in_scratch("jobs.db"));
  char url[PATH_MAX + 8];
  snprintf(url, sizeof url, "sqlite:%s", path);
  setenv("TABQ_PLUGIN_PATH", refusals, 1);
  tabq_broker *b = NULL;
  CU_ASSERT_EQUAL(tabq_connect(url, NULL, &b, &err), TABQ_OK);
  if (b) {
    CU_ASSERT_STRING_EQUAL(tabq_dialect_name(b), "sqlite");
    CU_ASSERT_PTR_NOT_NULL(strstr(tabq_dialect_path(b), "sqlite.so"));
    tabq_close(b);
  }
  unlink(path);
}

/* Looking for one scheme loads only the plugin chosen for it: a library with a constructor
 * beside it never runs, not for a plugin's second scheme and not for an unknown scheme. */
static void looking_up_never_runs_a_stranger(void) {
  const char *marker = in_scratch("constructor-ran");
  setenv("TABQ_TEST_CONSTRUCTOR_MARKER", marker, 1);
  CU_ASSERT_EQUAL(connect_in(strangers, "nextdoor:x"), TABQ_BACKEND); /* neighbour.so loads */
  CU_ASSERT_EQUAL(connect_in(strangers, "nosuchdb:x"), TABQ_BACKEND);
  mentions("stranger"); /* listed by its file name, not loaded */
  mentions("nextdoor");
  CU_ASSERT_FALSE(exists(marker));
  /* The marker works: asked for by name, the stranger is loaded, and refused. */
  CU_ASSERT_EQUAL(connect_in(strangers, "stranger:x"), TABQ_PLUGIN);
  mentions("stranger.so");
  CU_ASSERT_TRUE(exists(marker));
  unsetenv("TABQ_TEST_CONSTRUCTOR_MARKER");
}

/* One file reached twice, through a folder written two ways or a symlinked folder, is one
 * plugin, not two claiming its scheme. */
static void same_file_twice_is_no_conflict(void) {
  char path[3 * PATH_MAX];
  snprintf(path, sizeof path, "%s:%s/", refusals, refusals);
  CU_ASSERT_EQUAL(connect_in(path, "wellformed:x"), TABQ_BACKEND);
  const char *link = in_scratch("link");
  CU_ASSERT_FATAL(symlink(refusals, link) == 0);
  snprintf(path, sizeof path, "%s:%s", refusals, link);
  CU_ASSERT_EQUAL(connect_in(path, "wellformed:x"), TABQ_BACKEND);
}

static char log_text[4096];

static void keep_log(int level, const char *message, void *user) {
  (void)level, (void)user;
  size_t len = strlen(log_text);
  snprintf(log_text + len, sizeof log_text - len, "%s\n", message);
}

/* The same dialect in two folders (an installed copy and a build tree's, say) is no conflict:
 * the first folder in search order wins, as PATH does, and the log at connect names the file
 * chosen and the one it shadows. */
static void first_folder_wins(void) {
  char built[PATH_MAX], built_dir[PATH_MAX];
  setenv("TABQ_PLUGIN_PATH", refusals, 1);
  CU_ASSERT_EQUAL_FATAL(tabq_plugin_for_scheme("sqlite", built, sizeof built, &err), TABQ_OK);
  snprintf(built_dir, sizeof built_dir, "%s", built);
  *strrchr(built_dir, '/') = '\0';
  const char *first = in_scratch("first");
  make_dir(first, 0755);
  char from[2 * PATH_MAX], to[2 * PATH_MAX];
  const char *files[] = {"sqlite.so", "sqlite.tabq-plugin"};
  for (int i = 0; i < 2; i++) {
    snprintf(from, sizeof from, "%s/%s", built_dir, files[i]);
    snprintf(to, sizeof to, "%s/%s", first, files[i]);
    copy_file(from, to, 0644);
  }
  setenv("TABQ_PLUGIN_PATH", first, 1);
  char url[PATH_MAX + 8];
  snprintf(url, sizeof url, "sqlite:%s", in_scratch("first.db"));
  tabq_broker_options o = TABQ_BROKER_OPTIONS_INIT;
  o.log = keep_log;
  o.log_level = TABQ_LOG_INFO;
  log_text[0] = '\0';
  tabq_broker *b = NULL;
  CU_ASSERT_EQUAL_FATAL(tabq_connect(url, &o, &b, &err), TABQ_OK);
  CU_ASSERT_PTR_NOT_NULL(strstr(tabq_dialect_path(b), first));
  tabq_close(b);
  if (!strstr(log_text, "shadows") || !strstr(log_text, built) || !strstr(log_text, first))
    fprintf(stderr, "\nlog: %s\n", log_text);
  CU_ASSERT_PTR_NOT_NULL(strstr(log_text, "shadows"));
  CU_ASSERT_PTR_NOT_NULL(strstr(log_text, built));
  CU_ASSERT_PTR_NOT_NULL(strstr(log_text, first));
}

/* ---- Refusals of a chosen plugin --------------------------------------------------------- */

static void dlopen_rejection_has_dlerror(void) {
  CU_ASSERT_EQUAL(connect_to("needslib:x"), TABQ_PLUGIN);
  mentions("needslib.so");
  mentions("cannot load plugin");
  mentions("libtabq_fixture_gone.so"); /* dlerror's text */
}

static void not_elf_refused_before_dlopen(void) {
  CU_ASSERT_EQUAL(connect_to("notelf:x"), TABQ_PLUGIN);
  mentions("notelf.so");
  mentions("not an ELF shared object");
}

static void truncated_plugin_refused(void) {
  CU_ASSERT_EQUAL(connect_to("truncated:x"), TABQ_PLUGIN);
  mentions("truncated.so");
  mentions("is truncated: it has 4096 bytes");
}

/* A copy of wellformed.so with `n` bytes at `offset` of its ELF header changed. */
static void patched_copy(const char *dir, size_t offset, const void *bytes, size_t n) {
  copy_fixture("wellformed.so", dir, 0755);
  char path[2 * PATH_MAX];
  snprintf(path, sizeof path, "%s/wellformed.so", dir);
  int fd = open(path, O_WRONLY);
  CU_ASSERT_FATAL(fd >= 0);
  CU_ASSERT_FATAL(pwrite(fd, bytes, n, (off_t)offset) == (ssize_t)n);
  close(fd);
}

static void elf_header_of_another_kind_refused(void) {
  const char *dir = in_scratch("patched");
  make_dir(dir, 0755);
  copy_fixture("wellformed.tabq-plugin", dir, 0644);
  ElfW(Ehdr) h;
  char path[2 * PATH_MAX];
  snprintf(path, sizeof path, "%s/wellformed.so", refusals);
  int fd = open(path, O_RDONLY);
  CU_ASSERT_FATAL(fd >= 0 && read(fd, &h, sizeof h) == (ssize_t)sizeof h);
  close(fd);
  uint16_t machine = h.e_machine == EM_X86_64 ? EM_AARCH64 : EM_X86_64;
  patched_copy(dir, offsetof(ElfW(Ehdr), e_machine), &machine, sizeof machine);
  CU_ASSERT_EQUAL(connect_in(dir, "wellformed:x"), TABQ_PLUGIN);
  mentions("patched/wellformed.so");
  mentions("is built for ELF machine");
  unsigned char class = h.e_ident[EI_CLASS] == ELFCLASS64 ? ELFCLASS32 : ELFCLASS64;
  patched_copy(dir, EI_CLASS, &class, 1);
  CU_ASSERT_EQUAL(connect_in(dir, "wellformed:x"), TABQ_PLUGIN);
  mentions("-bit ELF object");
  uint16_t type = ET_EXEC;
  patched_copy(dir, offsetof(ElfW(Ehdr), e_type), &type, sizeof type);
  CU_ASSERT_EQUAL(connect_in(dir, "wellformed:x"), TABQ_PLUGIN);
  mentions("not a shared object");
  /* Unpatched, the copy loads. */
  copy_fixture("wellformed.so", dir, 0755);
  CU_ASSERT_EQUAL(connect_in(dir, "wellformed:x"), TABQ_BACKEND);
}

static void entry_as_data_object_refused(void) {
  /* Called, it would crash this process. */
  CU_ASSERT_EQUAL(connect_to("entrydata:x"), TABQ_PLUGIN);
  mentions("entrydata.so");
  mentions("'tabq_plugin_entry' is a data object");
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

/* A plugin may need members of a newer minor than this core has: refused, both versions named. */
static void newer_minor_is_refused(void) {
  CU_ASSERT_EQUAL(connect_to("newerminor:x"), TABQ_PLUGIN);
  mentions("newerminor");
  char plugin_abi[32], host_abi[32];
  snprintf(plugin_abi, sizeof plugin_abi, "%d.%d", TABQ_ABI_MAJOR, TABQ_ABI_MINOR + 1);
  snprintf(host_abi, sizeof host_abi, "%d.%d", TABQ_ABI_MAJOR, TABQ_ABI_MINOR);
  mentions(plugin_abi);
  mentions(host_abi);
}

/* A plugin built as ABI 1.0 (every interface, each table without the members later minors
 * appended: RowLock without claim_one, Advisory without lock_take) loads: its driver is then
 * asked to connect, and that fixture's driver refuses every connect (BACKEND, not PLUGIN). */
static void abi_1_0_plugin_loads(void) {
  CU_ASSERT_EQUAL(connect_to("abi10:x"), TABQ_BACKEND);
  CU_ASSERT_PTR_NULL(strstr(err.message, "abi10.so"));
}

static tabq_outcome never(tabq_delivery *d, void *user) {
  (void)d, (void)user;
  return tabq_ack();
}

/* TABQ_ADVISORY_PROCESS_KEYS: the plugin loads with lock and unlock NULL, and an advisory
 * subscription on it is no longer refused for the flag: it goes on to build its statements (this
 * fixture's begin is unusable, which stops it there). */
static void process_keys_advisory_opens(void) {
  setenv("TABQ_PLUGIN_PATH", refusals, 1);
  tabq_broker *b = NULL;
  CU_ASSERT_EQUAL_FATAL(tabq_connect("processkeys:x", NULL, &b, &err), TABQ_OK);
  static const tabq_table adv = {
      .size = sizeof(tabq_table), .name = "jobs", .id = {"id"}, .advisory_lock = "job-{id}"};
  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.handler = never;
  CU_ASSERT_EQUAL(tabq_subscribe(b, &adv, &o, NULL, &err), TABQ_DIALECT);
  mentions("the dialect's begin is unusable");
  tabq_close(b);
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

static void lying_manifest_refused(void) {
  CU_ASSERT_EQUAL(connect_to("liar:x"), TABQ_PLUGIN);
  mentions("liar.so");
  mentions("liar.tabq-plugin");
  mentions("schemes 'liar'");   /* what the manifest said */
  mentions("schemes 'honest'"); /* what the plugin said */
  /* A scheme is found by what the manifests say, never by loading a plugin to ask it. */
  CU_ASSERT_EQUAL(connect_to("honest:x"), TABQ_BACKEND);
}

static void borrowed_driver_not_installed(void) {
  CU_ASSERT_EQUAL(connect_to("borrower:x"), TABQ_PLUGIN);
  mentions("borrower.so");
  mentions("'absent'");
  mentions("not installed");
}

/* ---- Refusals of the search itself ------------------------------------------------------- */

static void two_plugins_one_scheme_refused(void) {
  CU_ASSERT_EQUAL(connect_in(conflict, "twin:x"), TABQ_PLUGIN);
  mentions("'twin'");
  mentions("one folder");
  mentions("one.so");
  mentions("two.so");
  /* Only the claimed scheme is ambiguous: each plugin's own scheme still loads. */
  CU_ASSERT_EQUAL(connect_in(conflict, "one:x"), TABQ_BACKEND);
}

static void relative_path_entry_refused(void) {
  char path[2 * PATH_MAX];
  snprintf(path, sizeof path, "%s:plugins/here", refusals);
  CU_ASSERT_EQUAL(connect_in(path, "wellformed:x"), TABQ_PLUGIN);
  mentions("'plugins/here'");
  mentions("relative");
}

static void world_writable_folder_refused(void) {
  const char *open_dir = in_scratch("open");
  make_dir(open_dir, 0777);
  CU_ASSERT_EQUAL(connect_in(open_dir, "wellformed:x"), TABQ_PLUGIN);
  mentions(open_dir);
  mentions("writable by every user");
  /* The sticky bit keeps users from removing each other's files, not from adding their own. */
  CU_ASSERT_FATAL(chmod(open_dir, 01777) == 0);
  CU_ASSERT_EQUAL(connect_in(open_dir, "wellformed:x"), TABQ_PLUGIN);
  mentions(open_dir);
}

static void world_writable_file_refused(void) {
  const char *dir = in_scratch("copy");
  make_dir(dir, 0755);
  copy_fixture("wellformed.so", dir, 0666);
  copy_fixture("wellformed.tabq-plugin", dir, 0644);
  CU_ASSERT_EQUAL(connect_in(dir, "wellformed:x"), TABQ_PLUGIN);
  mentions("copy/wellformed.so");
  mentions("writable by every user");
  CU_ASSERT_FATAL(chmod(in_scratch("copy/wellformed.so"), 0755) == 0);
  CU_ASSERT_FATAL(chmod(in_scratch("copy/wellformed.tabq-plugin"), 0666) == 0);
  CU_ASSERT_EQUAL(connect_in(dir, "wellformed:x"), TABQ_PLUGIN);
  mentions("copy/wellformed.tabq-plugin");
  mentions("writable by every user");
  /* The copy itself is sound. */
  CU_ASSERT_FATAL(chmod(in_scratch("copy/wellformed.tabq-plugin"), 0644) == 0);
  CU_ASSERT_EQUAL(connect_in(dir, "wellformed:x"), TABQ_BACKEND);
}

static void malformed_manifest_refused(void) {
  static const struct {
    const char *text, *why;
  } cases[] = {
      {"file = w.so\nschemes = w\n", "'abi' is missing"},
      {"file = w.so\nschemes = w\nabi = 1.1\nversion = 2\n", "line 4: unknown key 'version'"},
      {"file = w.so\nschemes = W\nabi = 1.1\n", "'W' is no URL scheme"},
      {"file = ../w.so\nschemes = w\nabi = 1.1\n", "file must be a file name"},
      {"file = w.so\nschemes = w w\nabi = 1.1\n", "listed twice"},
      {"file = w.so\r\nschemes = w\nabi = 1.1\n", "line 1: control character"},
      {"file = w.so\nfile = w.so\nschemes = w\nabi = 1.1\n", "line 2: 'file' is given twice"},
      {"file = w.so\nschemes = w\nabi = one\n", "abi must be MAJOR.MINOR"},
  };
  const char *dir = in_scratch("malformed");
  make_dir(dir, 0755);
  const char *manifest = in_scratch("malformed/w.tabq-plugin");
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    write_text(manifest, cases[i].text);
    /* Any scheme: a manifest that cannot be read might claim the one asked for. */
    CU_ASSERT_EQUAL(connect_in(dir, "wellformed:x"), TABQ_PLUGIN);
    mentions("malformed/w.tabq-plugin");
    mentions(cases[i].why);
  }
  write_text(manifest, "file = gone.so\nschemes = w\nabi = 1.1\n");
  CU_ASSERT_EQUAL(connect_in(dir, "w:x"), TABQ_PLUGIN);
  mentions("malformed/gone.so");
  mentions("not there");
}

/* A FIFO named like a manifest or a plugin would block a reader forever. */
static void fifo_does_not_hang(void) {
  const char *dir = in_scratch("fifo");
  make_dir(dir, 0755);
  const char *manifest = in_scratch("fifo/w.tabq-plugin");
  CU_ASSERT_FATAL(mkfifo(manifest, 0644) == 0);
  CU_ASSERT_EQUAL(connect_in(dir, "w:x"), TABQ_PLUGIN);
  mentions("fifo/w.tabq-plugin");
  mentions("not a regular file");
  CU_ASSERT_FATAL(unlink(manifest) == 0);
  write_text(manifest, "file = pipe.so\nschemes = w\nabi = 1.1\n");
  CU_ASSERT_FATAL(mkfifo(in_scratch("fifo/pipe.so"), 0644) == 0);
  CU_ASSERT_EQUAL(connect_in(dir, "w:x"), TABQ_PLUGIN);
  mentions("fifo/pipe.so");
  mentions("not a regular file");
}

/* A manifest for another plugin ABI is refused before its file is loaded. */
static void manifest_abi_refused_before_loading(void) {
  const char *dir = in_scratch("future");
  make_dir(dir, 0755);
  char from[sizeof strangers + 16];
  snprintf(from, sizeof from, "%s/stranger.so", strangers);
  copy_file(from, in_scratch("future/stranger.so"), 0755);
  write_text(in_scratch("future/future.tabq-plugin"),
             "# a plugin for a later tabq\nfile = stranger.so\nschemes = future\nabi = 2.0\n");
  const char *marker = in_scratch("future-constructor-ran");
  setenv("TABQ_TEST_CONSTRUCTOR_MARKER", marker, 1);
  CU_ASSERT_EQUAL(connect_in(dir, "future:x"), TABQ_PLUGIN);
  mentions("future/stranger.so");
  mentions("ABI 2.0");
  CU_ASSERT_FALSE(exists(marker));
  unsetenv("TABQ_TEST_CONSTRUCTOR_MARKER");
}

int register_tests(void) {
  static CU_TestInfo finding[] = {
      {"unknown scheme lists installed schemes and folders", unknown_scheme_lists_installed},
      {"URL without a scheme", url_without_scheme},
      {"well-formed plugin loads", wellformed_plugin_loads_then_connect_fails},
      {"sqlite plugin loads from the build tree", sqlite_loads_from_build_tree},
      {"looking a scheme up never runs a stranger's constructor", looking_up_never_runs_a_stranger},
      {"one file reached twice is no conflict", same_file_twice_is_no_conflict},
      {"the same dialect in two folders: the first wins, the log names both", first_folder_wins},
      CU_TEST_INFO_NULL,
  };
  static CU_TestInfo chosen[] = {
      {"file dlopen rejects, with dlerror", dlopen_rejection_has_dlerror},
      {"file that is no ELF object, before dlopen", not_elf_refused_before_dlopen},
      {"truncated plugin, before dlopen", truncated_plugin_refused},
      {"ELF object of another machine, class or type", elf_header_of_another_kind_refused},
      {"entry that is a data object", entry_as_data_object_refused},
      {"missing entry symbol", missing_entry_symbol},
      {"ABI mismatch names both versions and the file", abi_mismatch_names_both_versions},
      {"a newer minor is refused, both versions named", newer_minor_is_refused},
      {"a plugin built as ABI 1.0 loads", abi_1_0_plugin_loads},
      {"an advisory form keeping keys in the process opens past its checks",
       process_keys_advisory_opens},
      {"interface lacking a member names it", missing_member_is_named},
      {"entry refusing the host ABI", entry_refusing_host},
      {"manifest that lies about the schemes", lying_manifest_refused},
      {"driver borrowed from a plugin not installed", borrowed_driver_not_installed},
      CU_TEST_INFO_NULL,
  };
  static CU_TestInfo search[] = {
      {"two plugins claiming one scheme", two_plugins_one_scheme_refused},
      {"relative TABQ_PLUGIN_PATH entry", relative_path_entry_refused},
      {"world-writable plugin folder, sticky or not", world_writable_folder_refused},
      {"world-writable plugin file or manifest", world_writable_file_refused},
      {"malformed manifest", malformed_manifest_refused},
      {"FIFO named like a manifest or a plugin", fifo_does_not_hang},
      {"manifest for another ABI, before loading", manifest_abi_refused_before_loading},
      CU_TEST_INFO_NULL,
  };
  ADD_SUITE("loader: finding plugins", suite_init, NULL, finding);
  ADD_SUITE("loader: refusing the chosen plugin", scratch_made, NULL, chosen);
  ADD_SUITE("loader: refusing the search", scratch_made, suite_clean, search);
  return 0;
}
