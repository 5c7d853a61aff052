#!/usr/bin/env bash
# Renders a seatsaga report page in headless Chromium and checks that its charts were drawn
# without script errors. Not part of `make test` (it needs Chromium, which it installs from
# Debian when missing).
#
#   scripts/check-report.sh [reports/demo.html] [screenshot.png]
#
# The page's own script sets data-report-state="rendered" and data-charts=<n> on <html> after
# drawing; any error sets data-report-state="error". The check reads the DOM Chromium dumps after
# running the page, then takes a screenshot for a person to look at.
set -euo pipefail
cd "$(dirname "$0")/.."

report=${1:-reports/demo.html}
shot=${2:-${report%.html}.png}
if [[ ! -f $report ]]; then
  echo "check-report: $report does not exist; run \`make demo\` (or go run ./infra/local demo) first" >&2
  exit 2
fi

browser=$(command -v chromium || command -v chromium-browser || true)
if [[ -z $browser ]]; then
  echo "check-report: installing Debian chromium" >&2
  if [[ $(id -u) -eq 0 ]]; then sudo=; else sudo=sudo; fi
  $sudo apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >&2
  browser=$(command -v chromium)
fi

profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
  --disable-background-networking --disable-component-update --disable-sync
  --user-data-dir="$profile" --virtual-time-budget=5000)
url="file://$(realpath "$report")"

dom=$(timeout 120 "$browser" "${flags[@]}" --dump-dom "$url" 2>"$profile/stderr.log") || {
  echo "check-report: chromium failed:" >&2
  tail -20 "$profile/stderr.log" >&2
  exit 1
}

html_tag=$(grep -o '<html[^>]*>' <<<"$dom" | head -1)
state=$(sed -n 's/.*data-report-state="\([a-z]*\)".*/\1/p' <<<"$html_tag")
charts=$(sed -n 's/.*data-charts="\([0-9]*\)".*/\1/p' <<<"$html_tag")
errors=$(grep -o '<div id="report-errors">[^<]*' <<<"$dom" | sed 's/<div id="report-errors">//')
console_errors=$(grep -iE 'Uncaught|SyntaxError|TypeError|ReferenceError' "$profile/stderr.log" || true)

echo "check-report: $report: state=${state:-none} charts=${charts:-0}"
fail=0
if [[ $state != rendered ]]; then
  echo "check-report: FAIL: the page did not finish drawing (state=${state:-none}) ${errors}" >&2
  fail=1
fi
if [[ -z $charts || $charts -lt 3 ]]; then
  echo "check-report: FAIL: only ${charts:-0} charts drawn" >&2
  fail=1
fi
if ! grep -q '<svg id="graph"' <<<"$dom"; then
  echo "check-report: FAIL: no state-machine graph in the page" >&2
  fail=1
fi
if [[ -n $console_errors ]]; then
  echo "check-report: FAIL: console errors:" >&2
  echo "$console_errors" >&2
  fail=1
fi

timeout 120 "$browser" "${flags[@]}" --hide-scrollbars --window-size=1280,2600 \
  --screenshot="$(realpath -m "$shot")" "$url" 2>>"$profile/stderr.log" >/dev/null || true
if [[ -s $shot ]]; then
  echo "check-report: screenshot $shot"
else
  echo "check-report: FAIL: no screenshot" >&2
  fail=1
fi
if [[ $fail -ne 0 ]]; then exit 1; fi
echo "check-report: PASS"
