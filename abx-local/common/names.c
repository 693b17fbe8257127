/* Names taken from clients (names.h). */
#include <string.h>

#include "names.h"

bool abxl_env_name(const char *k)
{
    if (!((k[0] >= 'A' && k[0] <= 'Z') || (k[0] >= 'a' && k[0] <= 'z') || k[0] == '_'))
        return false;
    return strspn(k, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") ==
           strlen(k);
}
