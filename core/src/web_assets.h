/* The dashboard's page, script and stylesheet (core/web/), compiled into the library by
 * core/web/embed.cmake as NUL-terminated text. */
#ifndef TABQ_WEB_ASSETS_H
#define TABQ_WEB_ASSETS_H

extern const unsigned char tabq__web_index_html[];
extern const unsigned char tabq__web_app_js[];
extern const unsigned char tabq__web_style_css[];

#endif
