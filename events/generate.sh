#!/usr/bin/env bash
# Regenerate the sample events for `sam local invoke -e events/NAME.json` with SAM CLI's own
# generators (real API Gateway / EventBridge shapes); only path, method and body are ours.
# The body is the first image of scikit-learn's digits set (a "0"), the input of models/digits.
# warmer-ping.json is the warm-up ping of docs/architecture.md (a direct invoke: no generator).
set -euo pipefail
cd "$(dirname "$0")"
SAM="${SAM:-../.venv/bin/sam}"
export SAM_CLI_TELEMETRY=0
PIXELS='[0.0, 0.0, 5.0, 13.0, 9.0, 1.0, 0.0, 0.0, 0.0, 0.0, 13.0, 15.0, 10.0, 15.0, 5.0, 0.0, 0.0, 3.0, 15.0, 2.0, 0.0, 11.0, 8.0, 0.0, 0.0, 4.0, 12.0, 0.0, 0.0, 8.0, 8.0, 0.0, 0.0, 5.0, 8.0, 0.0, 0.0, 9.0, 8.0, 0.0, 0.0, 4.0, 11.0, 0.0, 1.0, 12.0, 7.0, 0.0, 0.0, 2.0, 14.0, 5.0, 10.0, 12.0, 0.0, 0.0, 0.0, 0.0, 6.0, 13.0, 10.0, 0.0, 0.0, 0.0]'
SIMPLE="{\"inputs\": [$PIXELS]}"
V2="{\"inputs\": [{\"name\": \"input\", \"shape\": [1, 64], \"datatype\": \"FP32\", \"data\": $PIXELS}]}"
event() { "$SAM" local generate-event "$@"; }
event apigateway http-api-proxy --method POST --path predict --body "$SIMPLE" > http-api-predict.json
event apigateway http-api-proxy --method POST --path v2/models/digits/infer --body "$V2" > http-api-v2-infer.json
event apigateway http-api-proxy --method GET --path health --body "" > http-api-health.json
event cloudwatch scheduled-event > scheduled.json
echo '{"warmer": true, "holdMs": 100}' > warmer-ping.json
