/* A service with HTTP listeners of tabq's own, for their tests, driven line by line on stdin:
 *   listen_service FILE URL ACKS FAILS
 * makes its table (LISTEN_DDL in the environment, statements split on ';'), publishes ACKS rows
 * its handler acks and FAILS it fails (each dead-lettered at its second attempt), waits until
 * every row is settled, prints "drained", then answers each command with one line:
 *   metrics ADDRESS [remote] [token T] [basic USER PASSWORD]  -> "port N" or "error CODE message"
 *   web ADDRESS [...the same]                                  (tabq_web_listen)
 *   shutdown   tabq_shutdown(): the listeners answer 503 from now on -> "shut down"
 *   quit       every listener stopped, then the broker closed, in the order docs ask -> "bye" */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tabq/app.h>
#include <tabq/metrics.h>
#include <tabq/web.h>

static tabq_outcome work(tabq_delivery *d, void *user) {
  (void)user;
  size_t len;
  const char *p = tabq_delivery_payload(d, &len);
  return len == 4 && !memcmp(p, "fail", 4) ? tabq_retry() : tabq_ack();
}

static int setup(tabq_broker *b, const tabq_app *app, int acks, int fails) {
  tabq_error err;
  const char *ddl = getenv("LISTEN_DDL");
  char *copy = ddl ? strdup(ddl) : NULL, *save = NULL;
  for (char *sql = copy ? strtok_r(copy, ";", &save) : NULL; sql; sql = strtok_r(NULL, ";", &save))
    if (tabq_exec(b, sql, &err)) { /* one statement a call, as MySQL needs */
      fprintf(stderr, "listen_service: LISTEN_DDL: %s\n", err.message);
      free(copy);
      return 2;
    }
  free(copy);
  for (int i = 0; i < acks + fails; i++) {
    tabq_message m = TABQ_MESSAGE_INIT;
    m.group = "work";
    m.payload = i < acks ? "ack_" : "fail";
    m.payload_len = 4;
    if (tabq_publish(b, tabq_app_table(app, 0), &m, &err)) {
      fprintf(stderr, "listen_service: publish: %s\n", err.message);
      return 2;
    }
  }
  return 0;
}

/* "ADDRESS [remote] [token T] [basic USER PASSWORD]" into options. */
static const char *parse(char *rest, tabq_listen_options *o) {
  char *save = NULL, *address = strtok_r(rest, " \n", &save);
  for (char *w = strtok_r(NULL, " \n", &save); w; w = strtok_r(NULL, " \n", &save)) {
    if (!strcmp(w, "remote"))
      o->allow_remote = true;
    else if (!strcmp(w, "token"))
      o->bearer_token = strtok_r(NULL, " \n", &save);
    else if (!strcmp(w, "basic")) {
      o->basic_user = strtok_r(NULL, " \n", &save);
      o->basic_password = strtok_r(NULL, " \n", &save);
    }
  }
  return address ? address : "";
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: listen_service FILE URL ACKS FAILS\n");
    return 2;
  }
  tabq_app *app;
  tabq_broker *b;
  tabq_subscription *s;
  tabq_error err;
  if (tabq_app_load(argv[1], &app, &err) || tabq_connect(argv[2], NULL, &b, &err)) {
    fprintf(stderr, "listen_service: %s\n", err.message);
    return 2;
  }
  int acks = atoi(argv[3]), fails = atoi(argv[4]);
  if (setup(b, app, acks, fails))
    return 2;
  tabq_subscription_options o = *tabq_app_subscription_options(app, 0);
  o.handler = work;
  if (tabq_subscribe(b, tabq_app_table(app, 0), &o, &s, &err)) {
    fprintf(stderr, "listen_service: subscribe: %s\n", err.message);
    return 2;
  }
  for (;;) {
    tabq_stats st;
    tabq_subscription_stats(s, &st, sizeof st);
    if (st.acked + st.dead_lettered >= (uint64_t)(acks + fails))
      break;
    usleep(10 * 1000);
  }
  printf("drained\n");
  fflush(stdout);
  tabq_http_listener *listeners[16];
  size_t n = 0;
  char line[512];
  while (fgets(line, sizeof line, stdin)) {
    char *rest = strchr(line, ' ');
    if (rest)
      *rest++ = '\0';
    else
      line[strcspn(line, "\n")] = '\0';
    if ((!strcmp(line, "metrics") || !strcmp(line, "web")) && rest && n < 16) {
      tabq_listen_options lo = TABQ_LISTEN_OPTIONS_INIT;
      const char *address = parse(rest, &lo);
      int rc = !strcmp(line, "web") ? tabq_web_listen(b, app, address, &lo, &listeners[n], &err)
                                    : tabq_metrics_listen(b, address, &lo, &listeners[n], &err);
      if (rc)
        printf("error %s %s\n", tabq_code_name(err.code), err.message);
      else
        printf("port %d\n", tabq_http_port(listeners[n++]));
    } else if (!strcmp(line, "shutdown")) {
      tabq_shutdown(b);
      printf("shut down\n");
    } else if (!strcmp(line, "quit")) {
      break;
    } else {
      printf("error INVALID unknown command '%s'\n", line);
    }
    fflush(stdout);
  }
  for (size_t i = 0; i < n; i++)
    tabq_http_stop(listeners[i]);
  tabq_close(b);
  tabq_app_free(app);
  printf("bye\n");
  return 0;
}
