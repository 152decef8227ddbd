/* The dashboard's JSON endpoints (docs/dashboard.md): the counts, a queue's rows, and the two
 * writing actions, each one admin call (tabq/admin.h). The site (web.c) routes to them, and has
 * checked a POST's CSRF token first. */
#ifndef TABQ_WEB_API_H
#define TABQ_WEB_API_H

#include <tabq/admin.h>

#include "http_listen.h"

/* GET /api/stats: tabq_admin_stats_read as {"app", "dialect", "time_us", "queues": [...]}. */
void tabq__web_stats(tabq_broker *b, const tabq_app *app, tabq_http_reply *out);
/* GET /api/rows?table=T&queue=Q&kind=due|in_work|dead: {"rows": [...]}. */
void tabq__web_rows(tabq_broker *b, const tabq_app *app, const tabq_http_request *r,
                    tabq_http_reply *out);
/* POST /api/requeue (queue=Q, or every queue): {"moved"}. */
void tabq__web_requeue(tabq_broker *b, const tabq_app *app, const tabq_http_request *r,
                       tabq_http_reply *out);
/* POST /api/purge (older_than_s=N): {"processed", "dead_letters"}. */
void tabq__web_purge(tabq_broker *b, const tabq_app *app, const tabq_http_request *r,
                     tabq_http_reply *out);

#endif
