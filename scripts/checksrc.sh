#!/usr/bin/env bash
# A small checksrc (after curl's): mechanical rules a reviewer should not
# have to spot by eye. Exit 1 with file:line for every breach.
set -u
cd "$(dirname "$0")/.."

status=0
report() { echo "checksrc: $1"; status=1; }

# Tracked files and new ones not ignored yet; a file deleted but not yet
# committed is skipped.
c_files=$( { git ls-files --cached --others --exclude-standard '*.c' '*.h' 2>/dev/null ||
             find . -name '*.[ch]' -not -path './build*'; } | sort -u |
           while IFS= read -r f; do [ -f "$f" ] && printf '%s\n' "$f"; done)

# 1. Unbounded or unchecked libc calls.
while IFS= read -r hit; do
  [ -n "$hit" ] && report "$hit: unbounded/unchecked call (use snprintf, memcpy with lengths, strtol)"
done < <(grep -nE '(^|[^_[:alnum:]])(sprintf|vsprintf|strcpy|strcat|gets|atoi|atol|atoll|strtok)[[:space:]]*\(' $c_files |
         grep -vE '^[^:]+:[0-9]+:[[:space:]]*(/?\*|//)')

# 2. The runner writes to the terminal only through runtime/output/out.c, which
#    masks secrets. Direct stdio on fd 1/2 in host/ and bindings/ bypasses it.
runner_files=$(printf '%s\n' $c_files | grep -E '^(host|bindings)/' || true)
if [ -n "$runner_files" ]; then
  while IFS= read -r hit; do
    [ -n "$hit" ] && report "$hit: direct output bypasses the masker (use abx_out_*)"
  done < <(grep -nE '(^|[^_[:alnum:]])(printf|puts|putchar|perror)[[:space:]]*\(|f(printf|puts|write|putc)[[:space:]]*\([^;]*\b(stdout|stderr)\b|write[[:space:]]*\([[:space:]]*(1|2|STDOUT_FILENO|STDERR_FILENO)[[:space:]]*,' $runner_files)
fi

# 2b. abx-local and abx-envd write to the terminal only through
#     abx-local/common/log.c (abxl_log*, abxl_out, abxl_usage), so that every
#     diagnostic names its program and reaches stderr as one line.
local_files=$(printf '%s\n' $c_files | grep -E '^abx-local/' | grep -vxF 'abx-local/common/log.c' || true)
if [ -n "$local_files" ]; then
  while IFS= read -r hit; do
    [ -n "$hit" ] && report "$hit: direct output in abx-local (use abxl_log/abxl_out from log.h)"
  done < <(grep -nE '(^|[^_[:alnum:]])(v?printf|puts|putchar|perror)[[:space:]]*\(|(v?fprintf|fputs|fputc|fwrite|putc)[[:space:]]*\([^;]*\b(stdout|stderr)\b|(write|dprintf)[[:space:]]*\([[:space:]]*(1|2|STDOUT_FILENO|STDERR_FILENO)[[:space:]]*,' $local_files |
           grep -vE '^[^:]+:[0-9]+:[[:space:]]*(/?\*|//)')
fi

# 3. Credential headers are never logged.
while IFS= read -r hit; do
  [ -n "$hit" ] && report "$hit: a log/print call names a credential header"
done < <(grep -niE '(printf|log|trace|puts)[^;]*(X-API-KEY|X-Access-Token|Authorization)' $c_files |
         grep -viE 'snprintf|abx_buf_appendf|curl_slist_append')

# 4. No line of C over 100 columns (characters, not bytes, where the
#    locale allows).
while IFS= read -r hit; do
  [ -n "$hit" ] && report "$hit: line over 100 columns"
done < <(LC_ALL=C.UTF-8 grep -noE '^.{101,}' $c_files 2>/dev/null | cut -d: -f1,2)

[ $status -eq 0 ] && echo "checksrc: $(printf '%s\n' $c_files | wc -l) files clean"
exit $status
