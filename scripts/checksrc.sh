#!/usr/bin/env bash
# A small checksrc (after curl's): mechanical rules a reviewer should not
# have to spot by eye. Exit 1 with file:line for every breach.
set -u
cd "$(dirname "$0")/.."

status=0
report() { echo "checksrc: $1"; status=1; }

c_files=$(git ls-files '*.c' '*.h' 2>/dev/null || find . -name '*.[ch]' -not -path './build*')

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

# 3. Credential headers are never logged.
while IFS= read -r hit; do
  [ -n "$hit" ] && report "$hit: a log/print call names a credential header"
done < <(grep -niE '(printf|log|trace|puts)[^;]*(X-API-KEY|X-Access-Token|Authorization)' $c_files |
         grep -viE 'snprintf|abx_buf_appendf|curl_slist_append')

[ $status -eq 0 ] && echo "checksrc: $(printf '%s\n' $c_files | wc -l) files clean"
exit $status
