# Sourced by scripts/*: create or refresh .venv so every entry point is idempotent.
# Reinstalls only when pyproject.toml or the runtime requirements change (a stamp keeps their hash).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
EXTRAS="${ONNX_LAMBDA_EXTRAS:-test}"
PY="${PYTHON:-python3}"
if [ ! -x "$VENV/bin/python" ]; then
    echo "==> creating $VENV"
    "$PY" -m venv "$VENV"
fi
STAMP="$VENV/.onnx-lambda-stamp"
WANT="$EXTRAS $(cat "$ROOT/pyproject.toml" "$ROOT/layers/requirements.txt" | sha256sum | cut -d' ' -f1)"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$WANT" ]; then
    echo "==> installing onnx-lambda[$EXTRAS] into .venv"
    "$VENV/bin/python" -m pip install -q --upgrade pip
    "$VENV/bin/python" -m pip install -q -e "$ROOT[$EXTRAS]"
    echo "$WANT" > "$STAMP"
fi
export PATH="$VENV/bin:$PATH"
export SAM_CLI_TELEMETRY=0
cd "$ROOT"
