#!/usr/bin/env bash
# The README's tour with curl: numbers, a first message, a scheduled message
# and its cancellation, an AI call, reading records and conversations. Each
# step uses the ids the previous answers gave, and the tour stops (exit 1) at
# the first answer whose status is not the one the contract promises.
# Usage: PARLEY_API_KEY=parley_live_… [PARLEY_URL=http://localhost:8787] examples/curl/quickstart.sh
set -euo pipefail
URL="${PARLEY_URL:-http://localhost:8787}"
KEY="${PARLEY_API_KEY:?set PARLEY_API_KEY to the live key printed by pnpm start or by pnpm -s parley demo}"
BODY="$(mktemp)"
trap 'rm -f "$BODY"' EXIT

# call EXPECTED METHOD PATH [JSON]: prints the answer; stops unless its status is EXPECTED.
# A JSON body gets a fresh Idempotency-Key, so running the tour twice sends twice.
call() {
  local expected=$1 method=$2 path=$3 json=${4:-}
  local args=(-sS -o "$BODY" -w '%{http_code}' -X "$method" -H "Authorization: Bearer $KEY")
  if [ -n "$json" ]; then
    args+=(-H "Content-Type: application/json" -H "Idempotency-Key: quickstart-$(date +%s)-$RANDOM$RANDOM" -d "$json")
  fi
  local status
  status=$(curl "${args[@]}" "$URL$path")
  cat "$BODY"; echo
  if [ "$status" != "$expected" ]; then
    echo "!! $method $path answered $status, expected $expected" >&2
    exit 1
  fi
}

# field PATH: a value from the last answer, e.g. field id or field items.0.sid.
field() {
  node -e '
    const value = process.argv[2].split(".").reduce((v, k) => (v == null ? v : v[k]), JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")));
    if (value == null) { console.error("!! the answer has no " + process.argv[2]); process.exit(1) }
    console.log(typeof value === "object" ? JSON.stringify(value) : value)' "$BODY" "$1"
}

echo "== numbers"
call 200 GET /api/v1/numbers
FROM=$(field items.0.sid)

echo "== a first message"
call 202 POST /api/v1/messages "{\"to\":\"+14155550123\",\"fromNumberSid\":\"$FROM\",\"body\":\"Hello from Parley\"}"
MESSAGE_ID=$(field id)

echo "== read it back"
call 200 GET "/api/v1/messages/$MESSAGE_ID"

echo "== schedule one for 10 minutes from now, then cancel it"
AT=$(node -e 'console.log(new Date(Date.now() + 600000).toISOString())')
call 202 POST /api/v1/messages "{\"to\":\"+14155550123\",\"fromNumberSid\":\"$FROM\",\"body\":\"Later\",\"scheduledFor\":\"$AT\"}"
SCHEDULED_ID=$(field id)
call 200 POST "/api/v1/messages/$SCHEDULED_ID/cancel"

echo "== an AI call"
call 202 POST /api/v1/ai-calls "{\"to\":\"+14155550123\",\"fromNumberSid\":\"$FROM\",\"botId\":\"bot_sales\",\"mode\":\"deliver_specific_message\",\"purposeMessage\":\"Confirm tomorrow's 10am demo\"}"
CALL_ID=$(field id)
call 200 GET "/api/v1/ai-calls/$CALL_ID"

echo "== conversations"
call 200 GET /api/v1/conversations
