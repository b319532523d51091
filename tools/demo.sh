#!/bin/sh
# make demo: vx end to end against the fake Google Cloud, on any machine.
# Starts the fake on a free port, mints a service-account key from it, copies
# examples/quickstart into a temporary git repository, and runs plan, apply,
# a clock jump, plan again and log, printing each command first.
set -eu
VX=${1:?usage: demo.sh PATH-TO-vx}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/vx-demo.XXXXXX")
FAKE_PID=
cleanup() {
	[ -n "$FAKE_PID" ] && kill "$FAKE_PID" 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

say() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }
run() { say "$*"; "$@"; }

python3 "$ROOT/tests/fakegcp/fakegcp.py" --port 0 --ready-file "$TMP/ready" >"$TMP/fake.log" 2>&1 &
FAKE_PID=$!
i=0
while [ ! -s "$TMP/ready" ]; do
	i=$((i + 1))
	if [ $i -gt 300 ] || ! kill -0 "$FAKE_PID" 2>/dev/null; then
		echo "demo: the fake Google Cloud did not start:" >&2
		cat "$TMP/fake.log" >&2
		exit 1
	fi
	sleep 0.1
done
URL=$(cat "$TMP/ready")
echo "Fake Google Cloud listening at $URL"

# The fake keeps this machine's time; its jobs run for 10 (virtual) minutes, within the
# quickstart's 30m timeout, and the clock jump below ends them.
python3 -c "import urllib.request,sys; urllib.request.urlopen(urllib.request.Request(sys.argv[1]+'/_fake/timings', data=b'{\"running_seconds\": 600}', method='POST', headers={'Content-Type':'application/json'}))" "$URL"

# A service-account key as Google issues it; the fake verifies its JWTs.
python3 - "$URL" "$TMP/key.json" <<'PY'
import json, sys, urllib.request
url, out = sys.argv[1], sys.argv[2]
req = urllib.request.Request(url + "/_fake/service-accounts", data=b'{"project": "my-project"}',
                             method="POST", headers={"Content-Type": "application/json"})
key = json.load(urllib.request.urlopen(req))
with open(out, "w") as f:
    json.dump(key, f)
PY
chmod 600 "$TMP/key.json"

export GOOGLE_APPLICATION_CREDENTIALS="$TMP/key.json"
export CLOUDSDK_API_ENDPOINT_OVERRIDES_AIPLATFORM="$URL/v1/"
export CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE="$URL/compute/v1/"
export CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDQUOTAS="$URL/v1/"
export CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE="$URL/storage/v1/"
export CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDRESOURCEMANAGER="$URL/v3/"
export CLOUDSDK_API_ENDPOINT_OVERRIDES_SERVICEUSAGE="$URL/serviceusage/v1/"
export CLOUDSDK_API_ENDPOINT_OVERRIDES_IAM="$URL/iam/v1/"
export CLOUDSDK_API_ENDPOINT_OVERRIDES_LOGGING="$URL/v2/"
export METADATA_SERVER_DETECTION=none
export CLOUDSDK_CONFIG="$TMP/gcloud"
unset GOOGLE_OAUTH_ACCESS_TOKEN GOOGLE_CLOUD_PROJECT CLOUDSDK_CORE_PROJECT 2>/dev/null || true

mkdir -p "$TMP/repo"
cp -r "$ROOT/examples/quickstart" "$TMP/repo/quickstart"
cd "$TMP/repo"
git init -q -b main .
git -c user.name=demo -c user.email=demo@example.com add -A
git -c user.name=demo -c user.email=demo@example.com commit -q -m "quickstart stack"
export GIT_AUTHOR_NAME=demo GIT_AUTHOR_EMAIL=demo@example.com
export GIT_COMMITTER_NAME=demo GIT_COMMITTER_EMAIL=demo@example.com

run "$VX" validate quickstart
run "$VX" plan quickstart
run "$VX" apply quickstart -auto-approve
say "(the fake's clock moves on an hour: the job runs and finishes)"
python3 -c "import urllib.request,sys; urllib.request.urlopen(urllib.request.Request(sys.argv[1]+'/_fake/clock', data=b'{\"advance_seconds\": 3600}', method='POST', headers={'Content-Type':'application/json'}))" "$URL"
run "$VX" plan quickstart -detailed-exitcode
run "$VX" apply quickstart -auto-approve
run "$VX" log -C quickstart
run git log --oneline vx/state/quickstart
printf '\nDemo done: the job was created once, seen to finish, and recorded in git.\n'
