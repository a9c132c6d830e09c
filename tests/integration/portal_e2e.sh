#!/usr/bin/env bash
# The portal end to end: Playwright (npm playwright-core) drives Debian's Chromium,
# headless, against the real daemon: sign in, request GPUs from templates, see a
# request wait with its reason and start when an admin raises the quota, live logs,
# cancel, API keys against the gateway, admin-only pages, CSRF refusals, trusted-proxy
# sign-in. Screenshots of every page go to build/portal-screenshots/ (not committed).
# Skips (with a "skip:" line) only when Chromium cannot run at all.
source "$(dirname "$0")/lib.sh"
PORTAL=$ROOT/tests/portal
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}

# Can the browser start at all? (a missing package, or a machine where it cannot run)
if ! [[ -x "$CHROMIUM" ]] || ! timeout 60 "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run \
      --disable-background-networking --disable-component-update --disable-sync \
      --user-data-dir="$TMP/chromium-probe" --dump-dom about:blank >/dev/null 2>&1; then
  echo "skip: $CHROMIUM cannot run here (install the Debian package chromium: scripts/install-deps.sh)"
  finish
  exit $?
fi
# The deploy-model step runs the stand-in for vLLM from {bindir}, the daemon's folder:
# where pods cannot reach the checkout (lib.sh's PODS_BIN), the daemon runs from there too.
# (with the shim it starts every pod through, which it finds beside itself)
if [[ -n "${PODS_BIN:-}" ]]; then
  cp "$GPUAAS_BIN" "$(dirname "$GPUAAS_BIN")/gpuaas-shim" "$PODS_BIN/" && GPUAAS_BIN=$PODS_BIN/gpuaas
fi
if ! "$PORTAL/install.sh"; then fail "npm install of playwright-core (tests/portal/install.sh)"; finish; exit 1; fi

cfg=$(write_config portal "$ROOT/examples/demo/node.yaml" "$PORTAL/fixtures/queues.yaml" "$PORTAL/fixtures/portal-config.yaml" \
      "$ROOT"/examples/templates/*.yaml)
start_daemon "$cfg" || { fail "daemon start"; finish; exit 1; }
# The gateway's Tier, when this build has the gateway (else the Models page must say it is absent),
# and a Model served by the gateway's stand-in for vLLM (build/fake-openai) for the playground.
api POST /api/v1/apply --data-binary @"$PORTAL/fixtures/tier.yaml" >/dev/null 2>&1 || true
E2E_MODEL=""
if start_fake up --tokens 8 --token-ms 5; then
  printf 'apiVersion: gpuaas.dev/v1alpha1\nkind: Model\nmetadata: {name: fake}\nspec: {servedNames: [fake-model], tiers: [default], url: "http://127.0.0.1:%s/v1"}\n' \
    "$(cat "$TMP/up.port")" > "$TMP/model.yaml"
  [[ $(status_of "$(api POST /api/v1/apply --data-binary @"$TMP/model.yaml")") == 200 ]] && E2E_MODEL=fake-model
  # a tier open only to team-b, and a model only it opens: alice (team-a) must not see either
  printf 'apiVersion: gpuaas.dev/v1alpha1\nkind: Tier\nmetadata: {name: vision-only}\nspec: {limits: {requestsPerMinute: 60}, namespaces: [team-b]}\n---\n' > "$TMP/secret.yaml"
  printf 'apiVersion: gpuaas.dev/v1alpha1\nkind: Model\nmetadata: {name: secret}\nspec: {servedNames: [secret-llm], tiers: [vision-only], url: "http://127.0.0.1:%s/v1"}\n' \
    "$(cat "$TMP/up.port")" >> "$TMP/secret.yaml"
  [[ $(status_of "$(api POST /api/v1/apply --data-binary @"$TMP/secret.yaml")") == 200 ]] || fail "apply the team-b tier and model"
fi

SHOTS_DIR=$ROOT/build/portal-screenshots
mkdir -p "$SHOTS_DIR"
t0=$(date +%s)
out=$(cd "$PORTAL" && GPUAAS_SERVER=$GPUAAS_SERVER ADMIN_TOKEN=$ADMIN_TOKEN SHOTS_DIR=$SHOTS_DIR CHROMIUM=$CHROMIUM E2E_MODEL=$E2E_MODEL \
      timeout 420 node e2e.js 2>&1)
rc=$?
# re-print the browser test's lines so that they count as ours
while IFS= read -r line; do
  case "$line" in
    "ok "*) ok "portal: ${line#ok }" ;;
    "FAIL "*) fail "portal: ${line#FAIL }" ;;
    *) echo "$line" ;;
  esac
done <<<"$out"
if ((rc != 0)) && ! grep -q '^FAIL ' <<<"$out"; then fail "portal: e2e.js exited with $rc"; fi
echo "  browser test: $(( $(date +%s) - t0 )) s; screenshots in $SHOTS_DIR"

# The daemon must not have logged a secret, and (the sanitizer build) must stop clean.
stop_daemon
check "no password in the daemon log" bash -c "! grep -q 'correct horse' '$TMP/serve.log'"
check "no sanitizer report from the daemon" bash -c "! grep -qE 'Sanitizer|runtime error' '$TMP/serve.log'"
finish
