/* tabq plugins: the installed dialect plugins as tabq_connect finds them (tabq/plugins.h). */
#include <stdio.h>
#include <string.h>
#include <tabq/plugins.h>

#include "common.h"

static const tabq_opt opts[] = {
    {"no-load", NULL, "read manifests and file names only: load no plugin's code", false},
    {NULL, NULL, NULL, false},
};

static void abi_text(uint32_t abi, char *buf, size_t cap) {
  if (abi)
    snprintf(buf, cap, "%u.%u", (unsigned)(abi >> 16), (unsigned)(abi & 0xffffu));
  else
    snprintf(buf, cap, "-");
}

static void forms_text(unsigned forms, char *buf, size_t cap) {
  snprintf(buf, cap, "%s%s%s", forms & TABQ_FORM_ROWLOCK ? "rowlock " : "",
           forms & TABQ_FORM_LEASE ? "lease " : "", forms & TABQ_FORM_ADVISORY ? "advisory " : "");
  size_t n = strlen(buf);
  if (n)
    buf[n - 1] = '\0';
}

static json_t *strings(const char *const *list) {
  json_t *arr = json_array();
  for (size_t i = 0; list && list[i]; i++)
    json_array_append_new(arr, json_string(list[i]));
  return arr;
}

static json_t *as_json(const tabq_plugin_list *l) {
  json_t *doc = json_object(), *folders = json_array(), *plugins = json_array(),
         *schemes = json_array();
  for (size_t i = 0; i < tabq_plugin_list_folder_count(l); i++) {
    bool missing;
    const char *f = tabq_plugin_list_folder(l, i, &missing);
    json_array_append_new(folders, json_pack("{s:s,s:b}", "path", f, "exists", !missing));
  }
  for (size_t i = 0; i < tabq_plugin_list_count(l); i++) {
    const tabq_plugin_info *p = tabq_plugin_list_get(l, i);
    char abi[16], forms[40];
    json_t *o = json_pack("{s:s,s:s,s:s?,s:s,s:o,s:b}", "name", p->name, "file", p->path,
                          "manifest", p->manifest, "folder", p->folder, "schemes",
                          strings(p->schemes), "exists", p->exists);
    if (p->manifest_abi) {
      abi_text(p->manifest_abi, abi, sizeof abi);
      json_object_set_new(o, "manifest_abi", json_string(abi));
    }
    json_object_set_new(o, "loaded", json_boolean(p->loaded));
    if (p->loaded) {
      abi_text(p->abi, abi, sizeof abi);
      forms_text(p->forms, forms, sizeof forms);
      json_object_set_new(o, "abi", json_string(abi));
      json_object_set_new(o, "forms", json_string(forms));
      json_object_set_new(o, "interfaces", strings(p->interfaces));
      json_object_set_new(o, "notifications", json_boolean(p->notifications));
      if (p->driver_from)
        json_object_set_new(o, "driver_from", json_string(p->driver_from));
    } else if (p->load_error) {
      json_object_set_new(o, "refused", json_string(p->load_error));
    }
    json_array_append_new(plugins, o);
  }
  for (size_t k = 0; k < tabq_plugin_list_scheme_count(l); k++) {
    const tabq_scheme_info *s = tabq_plugin_list_scheme(l, k);
    json_t *o = json_pack("{s:s}", "scheme", s->scheme), *shadowed = json_array();
    if (s->chosen >= 0)
      json_object_set_new(o, "file", json_string(tabq_plugin_list_get(l, s->chosen)->path));
    else
      json_object_set_new(o, "refused", json_string(s->refused ? s->refused : ""));
    for (size_t j = 0; j < s->nshadowed; j++)
      json_array_append_new(shadowed, json_string(tabq_plugin_list_get(l, s->shadowed[j])->path));
    json_object_set_new(o, "shadows", shadowed);
    json_array_append_new(schemes, o);
  }
  json_object_set_new(doc, "folders", folders);
  json_object_set_new(doc, "plugins", plugins);
  json_object_set_new(doc, "schemes", schemes);
  return doc;
}

static void as_text(const tabq_plugin_list *l) {
  printf("folders searched, in order:\n");
  for (size_t i = 0; i < tabq_plugin_list_folder_count(l); i++) {
    bool missing;
    const char *f = tabq_plugin_list_folder(l, i, &missing);
    printf("  %zu  %s%s\n", i + 1, f, missing ? "  (missing)" : "");
  }
  for (size_t i = 0; i < tabq_plugin_list_count(l); i++) {
    const tabq_plugin_info *p = tabq_plugin_list_get(l, i);
    char abi[16], forms[40], schemes[256] = "";
    for (size_t s = 0; p->schemes && p->schemes[s]; s++)
      snprintf(schemes + strlen(schemes), sizeof schemes - strlen(schemes), "%s%s:", s ? " " : "",
               p->schemes[s]);
    printf("\n%s\n  file        %s%s\n", p->name, p->path, p->exists ? "" : "  (missing)");
    if (p->manifest) {
      abi_text(p->manifest_abi, abi, sizeof abi);
      printf("  manifest    %s (ABI %s)\n", p->manifest, abi);
    } else {
      printf("  manifest    none: found by its file name\n");
    }
    printf("  schemes     %s\n", *schemes ? schemes : "none");
    if (p->loaded) {
      abi_text(p->abi, abi, sizeof abi);
      forms_text(p->forms, forms, sizeof forms);
      printf("  ABI         %s\n  forms       %s\n  interfaces ", abi, forms);
      for (size_t k = 0; p->interfaces && p->interfaces[k]; k++)
        printf(" %s", p->interfaces[k]);
      printf("\n  notify      %s\n", p->notifications ? "LISTEN/NOTIFY wake-ups" : "no");
      if (p->driver_from)
        printf("  driver      borrowed from %s\n", p->driver_from);
    } else if (p->load_error) {
      printf("  refused     %s\n", p->load_error);
    }
  }
  printf("\nschemes:\n");
  for (size_t k = 0; k < tabq_plugin_list_scheme_count(l); k++) {
    const tabq_scheme_info *s = tabq_plugin_list_scheme(l, k);
    if (s->chosen < 0) {
      printf("  %-10s refused: %s\n", s->scheme, s->refused ? s->refused : "");
      continue;
    }
    printf("  %-10s %s\n", s->scheme, tabq_plugin_list_get(l, s->chosen)->path);
    for (size_t j = 0; j < s->nshadowed; j++)
      printf("  %-10s   shadows %s\n", "", tabq_plugin_list_get(l, s->shadowed[j])->path);
  }
}

static int run(tabq_args *a) {
  tabq_plugin_list *l;
  tabq_error err;
  progress(a, "reading the plugin folders");
  if (tabq_plugin_list_read(opt(a, "no-load") ? 0 : TABQ_PLUGINS_LOAD, &l, &err))
    return fail_err(a, EXIT_USAGE, "reading the plugins", &err);
  progress_done(a);
  bool refused = false;
  for (size_t i = 0; i < tabq_plugin_list_count(l); i++) {
    const tabq_plugin_info *p = tabq_plugin_list_get(l, i);
    refused |= !p->exists || (p->load_error != NULL);
  }
  for (size_t k = 0; k < tabq_plugin_list_scheme_count(l); k++)
    refused |= tabq_plugin_list_scheme(l, k)->chosen < 0;
  if (a->json)
    print_json(as_json(l));
  else
    as_text(l);
  tabq_plugin_list_free(l);
  return refused ? EXIT_FOUND : EXIT_DONE;
}

const tabq_cmd tabq_cmd_plugins = {
    .name = "plugins",
    .summary = "list the installed dialect plugins and which one serves each URL scheme",
    .synopsis = "tabq plugins [--no-load] [--json]",
    .description =
        "    Lists the folders tabq_connect searches (TABQ_PLUGIN_PATH, then tabq-1/ beside\n"
        "    libtabq), every plugin file found there with its manifest, the URL schemes it\n"
        "    claims, and, once loaded and checked as tabq_connect checks it, its ABI version,\n"
        "    the claim forms it builds and its interfaces. Then each scheme: the file that\n"
        "    wins it (the first claimant in search order) and the later files it shadows.\n"
        "    Loading runs each plugin's code in this process; --no-load reads files only.\n"
        "    Exit 1 when a plugin is refused, a manifest names a missing file, or a scheme\n"
        "    is refused (two files of one folder claim it).\n",
    .opts = opts,
    .max_operands = 0,
    .run = run,
};
