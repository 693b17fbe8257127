#!/bin/bash
# Builds the python-hello template (agent-sandbox-server) for FC Agent
# Sandbox: the image (linux/amd64, from fc/Dockerfile), a local check of
# it, the push to your ACR Enterprise Edition registry, and the template,
# created from the image with the E2B SDK (e2b==2.31.0). Steps and
# assumptions: docs/fc-server-template.md.
#
#   fc/build.sh [options] REGION IMAGE TEMPLATE
#
#   REGION    region of the sandboxes, the base image, the registry and the
#             template: cn-beijing cn-shanghai cn-hangzhou cn-shenzhen
#             cn-hongkong ap-southeast-1 us-east-1 us-west-1
#   IMAGE     REGISTRY/NAMESPACE/REPOSITORY[:TAG] in your ACR Enterprise
#             Edition instance of REGION; without a tag, a UTC time stamp
#             (never push other content under a tag FC has used)
#   TEMPLATE  name of the template to create; the suite looks for
#             E2E_SERVER_TEMPLATE, default python-hello
#
# Options:
#   --pull-image REF   the address FC pulls the image from when it is not
#                      IMAGE, e.g. the instance's VPC endpoint (same
#                      repository and tag)
#   --cpu N            vCPUs of the template (default 2)
#   --memory-mb N      memory of the template in MB (default 2048)
#   --build-mode MODE  sends X-E2B-Template-Build-Mode: MODE (builder or
#                      direct); default: none, FC's default
#   --no-push          build and check the image, push nothing, create nothing
#   --print            print the commands and the Python snippet, run nothing
#
# The template is created with ABX_SANDBOX_API_KEY (or E2B_API_KEY) on
# ABX_SANDBOX_BASE_URL / ABX_SANDBOX_DOMAIN (or E2B_API_URL / E2B_DOMAIN),
# by default https://api.REGION.e2b.fc.aliyuncs.com and
# REGION.e2b.fc.aliyuncs.com. Log in to the registry (docker login) first.
set -euo pipefail

SDK_VERSION=2.31.0
REGIONS="cn-beijing cn-shanghai cn-hangzhou cn-shenzhen cn-hongkong ap-southeast-1 us-east-1 us-west-1"

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
context=$(dirname "$here")          # the template folder: the build context
dockerfile=$here/Dockerfile

usage() {
    sed -n '8,33p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}
die() {
    echo "build.sh: $*" >&2
    exit 1
}

pull_image='' cpu=2 memory_mb=2048 build_mode='' push=1 print=0
args=()
while [ $# -gt 0 ]; do
    case $1 in
    --pull-image | --cpu | --memory-mb | --build-mode)
        [ $# -ge 2 ] || usage
        case $1 in
        --pull-image) pull_image=$2 ;;
        --cpu) cpu=$2 ;;
        --memory-mb) memory_mb=$2 ;;
        --build-mode) build_mode=$2 ;;
        esac
        shift 2
        ;;
    --no-push) push=0; shift ;;
    --print) print=1; shift ;;
    -h | --help) usage ;;
    -*) echo "build.sh: unknown option $1" >&2; usage ;;
    *) args+=("$1"); shift ;;
    esac
done
[ ${#args[@]} -eq 3 ] || usage
region=${args[0]} image=${args[1]} template=${args[2]}

case " $REGIONS " in
*" $region "*) ;;
*) die "unknown region '$region' (one of: $REGIONS)" ;;
esac
case $image in
*@*) die "IMAGE takes a tag, not a digest: $image" ;;
*/*) ;;
*) die "IMAGE is REGISTRY/NAMESPACE/REPOSITORY[:TAG], got '$image'" ;;
esac
case ${image##*/} in
*:*) ;;
*) image=$image:$(date -u +%Y%m%d-%H%M%S) ;;
esac
[ -n "$pull_image" ] || pull_image=$image
case $build_mode in
'' | builder | direct) ;;
*) die "--build-mode is builder or direct, got '$build_mode'" ;;
esac
case $cpu$memory_mb in
*[!0-9]*) die "--cpu and --memory-mb take whole numbers" ;;
esac
[[ $template =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]] || die "bad template name '$template'"

# The base image, from the Dockerfile's FROM with REGION substituted.
from=$(sed -n 's/^FROM[[:space:]]\{1,\}\([^[:space:]]*\).*/\1/p' "$dockerfile" | head -n 1)
# shellcheck disable=SC2016  # the literal ${REGION} of the Dockerfile
base=${from//'${REGION}'/$region}

# template.json's start user, cwd and ready port, for the local check.
read -r t_user t_cwd t_port < <(python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))
print(t["start"]["user"], t["start"]["cwd"], t["ready"]["port"])' "$context/template.json")

api_key=${ABX_SANDBOX_API_KEY:-${E2B_API_KEY:-}}
domain=${ABX_SANDBOX_DOMAIN:-${E2B_DOMAIN:-$region.e2b.fc.aliyuncs.com}}
api_url=${ABX_SANDBOX_BASE_URL:-${E2B_API_URL:-https://api.$domain}}
case $domain in
"$region".* | "$region"-vpc.*) ;;
*) echo "build.sh: warning: domain $domain is not of region $region (key, URL, domain and template must share a region)" >&2 ;;
esac

# The Python snippet that creates the template: FC takes image-based
# templates only (build steps are refused with 400).
snippet() {
    local headers=''
    [ -z "$build_mode" ] || headers="
    api_headers={\"X-E2B-Template-Build-Mode\": \"$build_mode\"},"
    cat <<EOF
# pip install e2b==$SDK_VERSION; env: E2B_API_KEY, E2B_API_URL, E2B_DOMAIN
from importlib.metadata import version
from e2b import Template

assert version("e2b") == "$SDK_VERSION", "e2b " + version("e2b") + ", want $SDK_VERSION"
info = Template.build(
    Template().from_image("$pull_image"),
    name="$template",
    cpu_count=$cpu,
    memory_mb=$memory_mb,$headers
    on_build_logs=lambda entry: print(getattr(entry, "message", entry), flush=True),
)
print("template", info.name, "id", info.template_id, "build", info.build_id)
EOF
}

# The image's start-up check, a Python script run inside the image through
# its own ENTRYPOINT (the server started, then this instead of the base
# start-up): the server answers as template.json says.
image_check() {
    cat <<EOF
import json, sys, time, urllib.request
for _ in range(150):
    try:
        d = json.load(urllib.request.urlopen("http://127.0.0.1:$t_port/system/info", timeout=2))
        break
    except Exception:
        time.sleep(0.2)
else:
    print("the server did not answer on $t_port; its log:", flush=True)
    for log in ("/var/log/agent-sandbox-server.log", "/tmp/agent-sandbox-server.log"):
        try:
            print(open(log).read(), flush=True)
        except OSError:
            pass
    sys.exit(1)
want = {"user": "$t_user", "uid": 1000, "cwd": "$t_cwd", "home": "/home/$t_user", "port": $t_port}
got = {k: d.get(k) for k in want}
if got != want:
    sys.exit("the server answers %s, want %s" % (got, want))
print("server answers on $t_port as $t_user in $t_cwd")
EOF
}

if [ "$print" = 1 ]; then
    cat <<EOF
# base image: $base
docker pull --platform linux/amd64 $base
docker buildx build --platform linux/amd64 --provenance=false --sbom=false --load \\
    --build-arg REGION=$region -f $dockerfile -t $image $context
# check: linux/amd64; the image's CMD is the base image's ENTRYPOINT + CMD;
# the server answers on $t_port (user $t_user, cwd $t_cwd)
docker push $image
# then, with the pinned SDK (E2B_API_URL=$api_url E2B_DOMAIN=$domain):
EOF
    snippet
    exit 0
fi

command -v docker >/dev/null || die "docker not found"
if [ "$push" = 1 ]; then
    [ -n "$api_key" ] || die "no API key: set ABX_SANDBOX_API_KEY (or E2B_API_KEY), or use --no-push"
fi

echo "== base image $base"
docker pull --platform linux/amd64 "$base"

echo "== build $image (linux/amd64)"
if docker buildx version >/dev/null 2>&1; then
    docker buildx build --platform linux/amd64 --provenance=false --sbom=false --load \
        --build-arg "REGION=$region" -f "$dockerfile" -t "$image" "$context"
else
    docker build --platform linux/amd64 --build-arg "REGION=$region" \
        -f "$dockerfile" -t "$image" "$context"
fi

echo "== check"
platform=$(docker image inspect -f '{{.Os}}/{{.Architecture}}' "$image")
[ "$platform" = linux/amd64 ] || die "the image is $platform, FC needs linux/amd64"
base_startup=$(docker image inspect -f '{{json .Config.Entrypoint}}{{"\n"}}{{json .Config.Cmd}}' "$base")
image_cmd=$(docker image inspect -f '{{json .Config.Cmd}}' "$image")
python3 - "$base_startup" "$image_cmd" <<'EOF' || die "edit CMD in fc/Dockerfile to the base image's start-up"
import json, sys
entrypoint, cmd = sys.argv[1].split("\n")
want = (json.loads(entrypoint) or []) + (json.loads(cmd) or [])
got = json.loads(sys.argv[2]) or []
if want != got:
    print("the base image starts with %s, the image's CMD is %s" % (want, got), file=sys.stderr)
    sys.exit(1)
print("start-up after the server: %s (the base image's)" % got)
EOF
image_check | docker run --rm -i --platform linux/amd64 "$image" python3 -

if [ "$push" = 0 ]; then
    echo "== built $image (not pushed)"
    exit 0
fi

echo "== push $image"
docker push "$image"

echo "== template $template from $pull_image (e2b==$SDK_VERSION)"
venv=${XDG_CACHE_HOME:-$HOME/.cache}/abx-e2e/e2b-$SDK_VERSION
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv" || die "python3 -m venv failed (Debian: apt-get install python3-venv)"
fi
"$venv/bin/pip" install --quiet "e2b==$SDK_VERSION"
snippet | E2B_API_KEY=$api_key E2B_API_URL=$api_url E2B_DOMAIN=$domain "$venv/bin/python" -
echo "== done: set E2E_SERVER_TEMPLATE=$template (unless it is python-hello), then run"
echo "   abx-e2e doctor && abx-e2e tests-lua/test_06_server_sdk.lua"
