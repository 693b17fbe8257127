#!/bin/bash
# Entry point of the python-hello image for FC Agent Sandbox
# (docs/fc-server-template.md). Starts the template's server in the
# background as template.json's `start` says -- the command run by
# `/bin/bash -l -c`, as that user, in that directory, as abx-local's envd
# runs it -- then execs the base image's own start-up, given after `--`,
# which then keeps this process's PID (1 in the sandbox).
#
#   start.sh --user USER --cwd DIR --cmd COMMAND -- START-UP [ARG...]
#
# The server's output goes to $ABX_SERVER_LOG (default
# /var/log/agent-sandbox-server.log, /tmp/agent-sandbox-server.log when
# that is not writable). A server that cannot be started is reported there
# and on stderr; the base start-up runs all the same, so the sandbox and
# its envd come up and the failure shows in the server's tests.
set -u

usage() {
    echo "start.sh: $*" >&2
    echo "usage: start.sh --user USER --cwd DIR --cmd COMMAND -- START-UP [ARG...]" >&2
    exit 2
}

user='' cwd='' cmd=''
while [ $# -gt 0 ]; do
    case $1 in
    --user | --cwd | --cmd)
        [ $# -ge 2 ] || usage "$1 needs a value"
        case $1 in
        --user) user=$2 ;;
        --cwd) cwd=$2 ;;
        --cmd) cmd=$2 ;;
        esac
        shift 2
        ;;
    --)
        shift
        break
        ;;
    *) usage "unknown argument: $1" ;;
    esac
done
if [ -z "$user" ] || [ -z "$cwd" ] || [ -z "$cmd" ]; then
    usage "--user, --cwd and --cmd are required"
fi
# Without the base image's start-up the sandbox has neither envd nor the
# gateway: refuse to start one that nothing can reach.
[ $# -gt 0 ] || usage "no start-up after --: the base image's ENTRYPOINT and CMD"

log=${ABX_SERVER_LOG:-/var/log/agent-sandbox-server.log}
if ! { : >>"$log"; } 2>/dev/null; then
    log=/tmp/agent-sandbox-server.log
fi

note() {
    echo "start.sh: $*" >&2
    echo "start.sh: $*" >>"$log" 2>/dev/null
}

as_user=() can_start=1
if [ "$(id -u)" = 0 ]; then
    as_user=(runuser -u "$user" --)
elif [ "$(id -un)" != "$user" ]; then
    can_start=0
    note "running as $(id -un), not root: cannot start the server as $user"
fi

if [ "$can_start" = 1 ]; then
    (
        cd "$cwd" || exit 1
        exec ${as_user[@]+"${as_user[@]}"} /bin/bash -l -c "$cmd"
    ) </dev/null >>"$log" 2>&1 &
    note "server started (pid $!, user $user, cwd $cwd), output in $log"
fi

exec "$@"
