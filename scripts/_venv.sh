# Sourced by scripts/*: create or refresh .venv so every entry point is idempotent.
# Installs again only when pyproject.toml or a requirements file it reads (layers/) changes, or
# when the caller needs an extra the venv lacks (a stamp keeps the hash and the installed extras;
# an extra that includes others, as pyproject.toml's `test` does, counts as those too).
# ONNX_LAMBDA_NO_INSTALL=1: never install; stop with a message when the venv is not ready.
# The installer is uv (from PyPI, into the venv): it resolves as pip does here (pip's own settings,
# its config files and PIP_* variables, are passed on) and unpacks and compiles in parallel, a
# fraction of pip's minutes; pip installs instead when uv cannot be had (ONNX_LAMBDA_PIP=1 forces it).
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
case "$have" in *,test,*) have="$have,serve,build,build-llm,plan,client,bench," ;; esac
case "$have" in *,build-llm,*) have="$have,build," ;; esac
case "$have" in *,bench,*) have="$have,plan,build,client,serve," ;; esac
case "$have" in *,plan,*) have="$have,serve," ;; esac
missing=""
for extra in ${EXTRAS//,/ }; do
    case "$have" in *",$extra,"*) ;; *) missing="$missing $extra" ;; esac
done

# pip's settings as uv's options: uv reads no pip.conf, and without them it would miss the
# wheels a machine keeps on disk (the CPU build of torch) and its constraints.
uv_options() {
    "$VENV/bin/python" -m pip config list 2>/dev/null | while IFS= read -r line; do
        value="${line#*=}"; value="${value#\'}"; value="${value%\'}"
        case "${line%%=*}" in
            *.find-links) for v in $value; do echo "--find-links=$v"; done ;;
            *.extra-index-url) for v in $value; do echo "--extra-index-url=$v"; done ;;
            *.index-url) echo "--index-url=$value" ;;
            *.constraint) for v in $value; do echo "--constraint=$v"; done ;;
        esac
    done | sort -u
}

install() {  # install "$@" (requirement specifiers) into the venv
    if [ "${ONNX_LAMBDA_PIP:-0}" != "1" ] && "$VENV/bin/python" -m pip install -q uv; then
        mapfile -t options < <(uv_options)
        # unsafe-best-match: every index is searched for the best version, as pip does;
        # --compile-bytecode: as pip does (PYTHONDONTWRITEBYTECODE=1 on these machines would
        # otherwise make every test process compile its imports again)
        if "$VENV/bin/uv" pip install -q --python "$VENV/bin/python" --compile-bytecode \
                --index-strategy unsafe-best-match "${options[@]}" pip "$@"; then
            return 0
        fi
        echo "==> uv failed; installing with pip"
    fi
    "$VENV/bin/python" -m pip install -q --upgrade pip
    "$VENV/bin/python" -m pip install -q "$@"
}

if [ "$HAVE_HASH" != "$HASH" ] || [ -n "$missing" ]; then
    if [ "${ONNX_LAMBDA_NO_INSTALL:-0}" = "1" ]; then
        echo "error: $VENV needs installing (extras:${missing:- none missing; pyproject.toml" \
            "or layers/ changed}) and ONNX_LAMBDA_NO_INSTALL=1" >&2
        exit 3
    fi
    [ "$HAVE_HASH" = "$HASH" ] && EXTRAS="$HAVE_EXTRAS,$EXTRAS"  # keep what is there
    echo "==> installing onnx-lambda[$EXTRAS] into .venv"
    install -e "$ROOT[$EXTRAS]"
    echo "$HASH $EXTRAS" > "$STAMP"
fi
export PATH="$VENV/bin:$PATH"
export SAM_CLI_TELEMETRY=0
cd "$ROOT"
