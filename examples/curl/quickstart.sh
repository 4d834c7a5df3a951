#!/usr/bin/env bash
# The README's tour with curl: numbers, a first message, a scheduled message
# and its cancellation, an AI call, reading records and conversations.
# Usage: PARLEY_API_KEY=parley_live_… [PARLEY_URL=http://localhost:8787] examples/curl/quickstart.sh
set -euo pipefail
URL="${PARLEY_URL:-http://localhost:8787}"
KEY="${PARLEY_API_KEY:?set PARLEY_API_KEY to a key printed by the server or by pnpm parley demo}"
auth=(-H "Authorization: Bearer $KEY")
json=(-H "Content-Type: application/json")
field() { node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const v=JSON.parse(s)[process.argv[1]];console.log(typeof v==="object"?JSON.stringify(v):v)})' "$1"; }

echo "== numbers"; curl -sS "${auth[@]}" "$URL/api/v1/numbers"; echo
FROM=$(curl -sS "${auth[@]}" "$URL/api/v1/numbers" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).items[0].sid))')

echo "== a first message"
ACK=$(curl -sS -X POST "${auth[@]}" "${json[@]}" -H "Idempotency-Key: quickstart-$(date +%s%N)" \
  -d "{\"to\":\"+14155550123\",\"fromNumberSid\":\"$FROM\",\"body\":\"Hello from Parley\"}" "$URL/api/v1/messages")
echo "$ACK"; ID=$(echo "$ACK" | field id)

echo "== read it back"; curl -sS "${auth[@]}" "$URL/api/v1/messages/$ID"; echo

echo "== schedule one for 10 minutes from now, then cancel it"
AT=$(node -e 'console.log(new Date(Date.now()+600000).toISOString())')
SACK=$(curl -sS -X POST "${auth[@]}" "${json[@]}" -H "Idempotency-Key: quickstart-s-$(date +%s%N)" \
  -d "{\"to\":\"+14155550123\",\"fromNumberSid\":\"$FROM\",\"body\":\"Later\",\"scheduledFor\":\"$AT\"}" "$URL/api/v1/messages")
echo "$SACK"; SID=$(echo "$SACK" | field id)
curl -sS -X POST "${auth[@]}" "$URL/api/v1/messages/$SID/cancel"; echo

echo "== an AI call"
curl -sS -X POST "${auth[@]}" "${json[@]}" -H "Idempotency-Key: quickstart-c-$(date +%s%N)" \
  -d "{\"to\":\"+14155550123\",\"fromNumberSid\":\"$FROM\",\"botId\":\"bot_sales\",\"mode\":\"deliver_specific_message\",\"purposeMessage\":\"Confirm tomorrow's 10am demo\"}" \
  "$URL/api/v1/ai-calls"; echo

echo "== conversations"; curl -sS "${auth[@]}" "$URL/api/v1/conversations"; echo
