/* tabq — the dashboard: a page of an app's queues served by tabq itself (docs/dashboard.md),
 * beside its /metrics, on an HTTP listener of tabq's own (tabq/http.h).
 *
 *   tabq_http_listener *l;
 *   if (tabq_web_listen(b, app, "127.0.0.1:8089", NULL, &l, &err) == TABQ_OK) {
 *     ...                  // http://127.0.0.1:8089/  and  http://127.0.0.1:8089/metrics
 *     tabq_http_stop(l);   // before tabq_close(b) and tabq_app_free(app)
 *   }
 *
 * The `tabq web` command is this call on a description file's app. */
#ifndef TABQ_WEB_H
#define TABQ_WEB_H

#include <tabq/admin.h>
#include <tabq/app.h>
#include <tabq/http.h>
#include <tabq/tabq.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Serves, on `address` (as tabq_metrics_listen takes it, loopback unless the options allow
 * otherwise with credentials):
 *   GET  /              the page: each queue's counts (tabq_admin_stats_read), refreshed live,
 *                       and a selected queue's due rows, rows in work and dead letters
 *                       (tabq_admin_rows_read), with requeue and purge buttons
 *   GET  /api/stats     the counts as JSON; GET /api/rows?table=T&queue=Q&kind=due|in_work|dead
 *   POST /api/requeue   (queue=Q) tabq_admin_requeue; POST /api/purge (older_than_s=N)
 *                       tabq_admin_purge; each with the page's CSRF token (csrf=...), else 403
 *                       and nothing changed
 *   GET  /metrics       tabq_metrics_write
 * The CSRF token is random (getrandom), made when the listener starts, and only in the page.
 * `app` and `b` must outlive the listener: tabq_http_stop() comes before tabq_close() and
 * tabq_app_free(). After the broker shuts down every request gets 503. Refusals as
 * tabq_metrics_listen's; TABQ_IO when no random token can be made. */
TABQ_API int tabq_web_listen(tabq_broker *b, const tabq_app *app, const char *address,
                             const tabq_listen_options *options, tabq_http_listener **out,
                             tabq_error *err);

#ifdef __cplusplus
}
#endif

#endif
