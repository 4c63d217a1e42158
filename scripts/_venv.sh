# Sourced by scripts/*: create or refresh .venv so every entry point is idempotent.
# Installs again only when pyproject.toml or a requirements file it reads (layers/) changes, or
# when the caller needs an extra the venv lacks (a stamp keeps the hash and the installed extras;
# an extra that includes others, as pyproject.toml's `test` does, counts as those too).
# ONNX_LAMBDA_NO_INSTALL=1: never install; stop with a message when the venv is not ready.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
EXTRAS="${ONNX_LAMBDA_EXTRAS:-${EXTRAS_DEFAULT:-serve,build,client}}"
PY="${PYTHON:-python3}"
if [ ! -x "$VENV/bin/python" ]; then
    echo "==> creating $VENV"
    "$PY" -m venv "$VENV"
fi
STAMP="$VENV/.onnx-lambda-stamp"
HASH="$(cat "$ROOT/pyproject.toml" "$ROOT/layers/requirements.txt" "$ROOT/layers/requirements-numpy.txt" \
    | sha256sum | cut -d' ' -f1)"
read -r HAVE_HASH HAVE_EXTRAS 2>/dev/null < "$STAMP" || { HAVE_HASH=""; HAVE_EXTRAS=""; }
# the extras pyproject.toml's own extras include (onnx-lambda[...] entries), as installed
have=",$HAVE_EXTRAS,"
case "$have" in *,test,*) have="$have,serve,build,plan,client,bench," ;; esac
case "$have" in *,bench,*) have="$have,plan,build,client,serve," ;; esac
case "$have" in *,plan,*) have="$have,serve," ;; esac
missing=""
for extra in ${EXTRAS//,/ }; do
    case "$have" in *",$extra,"*) ;; *) missing="$missing $extra" ;; esac
done
if [ "$HAVE_HASH" != "$HASH" ] || [ -n "$missing" ]; then
    if [ "${ONNX_LAMBDA_NO_INSTALL:-0}" = "1" ]; then
        echo "error: $VENV needs installing (extras:${missing:- none missing; pyproject.toml" \
            "or layers/ changed}) and ONNX_LAMBDA_NO_INSTALL=1" >&2
        exit 3
    fi
    [ "$HAVE_HASH" = "$HASH" ] && EXTRAS="$HAVE_EXTRAS,$EXTRAS"  # keep what is there
    echo "==> installing onnx-lambda[$EXTRAS] into .venv"
    "$VENV/bin/python" -m pip install -q --upgrade pip
    "$VENV/bin/python" -m pip install -q -e "$ROOT[$EXTRAS]"
    echo "$HASH $EXTRAS" > "$STAMP"
fi
export PATH="$VENV/bin:$PATH"
export SAM_CLI_TELEMETRY=0
cd "$ROOT"
