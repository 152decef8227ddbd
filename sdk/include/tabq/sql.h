/* tabq — the plugin SDK's headers moved to tabq/sys/ (services include tabq/, dialects
 * tabq/sys/). This name stays so that a dialect written against an older SDK still compiles. */
#include <tabq/sys/sql.h>
