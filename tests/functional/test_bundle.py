"""``handler.bundle``: the init's modules come from the one-file bytecode the image writes (and
only the init's: the finder is gone after it, the file closed), and the ``.py`` files stay the
source of truth (an edited module, a missing, corrupt or foreign
bundle: the normal import, the same answers). Each case is a fresh interpreter on a copy of the
handler package, started as Lambda starts one (``python -S``, no venv hooks)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.cold import interpreter
from handler import bundle
from onnx_lambda.source_tree import root
from onnx_lambda.tiny_models import linear

# which loader served each handler module, the first answer of the handler, whether a bundle
# finder is left and the file descriptors open after the init
PROBE = (
    "import json, sys\n"
    "import handler.app as app\n"
    "event = {'version': '2.0', 'rawPath': '/predict', 'body': json.dumps({'inputs': [[1, 2, 3, "
    "4]]}), 'requestContext': {'http': {'method': 'POST', 'path': '/predict'}}, 'headers': {}}\n"
    "answer = app.handler(event, None)\n"
    "import handler.codecs.v2  # after the init (a V2 request would load it)\n"
    "loaders = {name: type(m.__spec__.loader).__name__ for name, m in sys.modules.items()\n"
    "           if name.startswith('handler')}\n"
    "import os\n"
    "left = [type(f).__name__ for f in sys.meta_path if type(f).__name__ == '_Finder']\n"
    "fds = [f'/proc/self/fd/{fd}' for fd in os.listdir('/proc/self/fd')]\n"
    "files = [os.readlink(fd) for fd in fds if os.path.lexists(fd)]  # (not listdir's own)\n"
    "print(json.dumps([loaders, answer['statusCode'], json.loads(answer['body']), left,\n"
    "                  [f for f in files if f.endswith('.bin')]]))\n")


@pytest.fixture()
def task_root(tmp_path: Path) -> Path:
    """A task root with a copy of the handler package (no bytecode caches)."""
    shutil.copytree(root() / "handler", tmp_path / "handler",
                    ignore=shutil.ignore_patterns("__pycache__", "Dockerfile"))
    linear(tmp_path / "linear.onnx")
    return tmp_path


def _python(task: Path, program: str) -> subprocess.CompletedProcess[str]:
    """``program`` in a fresh interpreter whose task root is ``task`` (not the checkout)."""
    prefix, path = interpreter()
    path["PYTHONPATH"] = os.pathsep.join([str(task), *path["PYTHONPATH"].split(os.pathsep)[1:]])
    env = {**os.environ, **path, "ONNX_LAMBDA_MODEL": str(task / "linear.onnx"),
           "ONNX_LAMBDA_LOG_LEVEL": "error"}
    return subprocess.run([*prefix, "-c", program], env=env, cwd=task, capture_output=True,
                          text=True)


def _run(task: Path, method: str = "POST") -> tuple[dict[str, str], int, dict]:
    done = _python(task, PROBE.replace("'POST'", repr(method)))
    assert done.returncode == 0, done.stderr
    loaders, status, body, finders_left, bundles_open = json.loads(done.stdout.splitlines()[-1])
    assert finders_left == [] and bundles_open == []  # only the init is served from it
    return loaders, status, body


def _write(task: Path) -> Path:
    done = subprocess.run([sys.executable, "-m", "handler.bundle", str(task / "handler")],
                          cwd=task, check=True, capture_output=True, text=True)
    return Path(done.stdout.strip())


def test_the_init_imports_our_modules_from_the_bundle(task_root: Path) -> None:
    without, status, body = _run(task_root)
    assert set(without.values()) == {"SourceFileLoader"}
    path = _write(task_root)
    assert path == Path(bundle.path_of(str(task_root / "handler")))
    served, status_after, body_after = _run(task_root)
    assert (status_after, body_after) == (status, body) and status == 200
    assert served.keys() == without.keys()  # the same modules, nothing more at init
    from_files = {name for name, loader in served.items() if loader != "_Finder"}
    # only what is imported before it is installed, and the V2 codec's, after the init
    assert from_files - set(bundle._SELF) <= {n for n in served if n.startswith("handler.codecs.")}
    assert served["handler.service"] == "_Finder"


def test_an_edited_module_imports_from_its_source(task_root: Path) -> None:
    _write(task_root)
    routes = task_root / "handler" / "routes.py"
    source = routes.read_text(encoding="utf-8")
    edited = source.replace('("/predict", {"POST": Route(', '("/predict", {"PUT": Route("predict", '
                            '"handler.api.predict:predict", OURS), "POST": Route(')
    assert edited != source  # (the table's /predict row, as written)
    routes.write_text(edited, encoding="utf-8")
    served, status, _ = _run(task_root, "PUT")
    assert status == 200  # only the edited routes allow PUT: the .py ran, not the stale code
    assert served["handler.routes"] == "SourceFileLoader"
    assert served["handler.service"] == "_Finder"


@pytest.mark.parametrize("damage", ["truncated", "garbage", "other python", "empty"])
def test_a_bad_bundle_is_ignored(task_root: Path, damage: str) -> None:
    path = _write(task_root)
    data = path.read_bytes()
    if damage == "truncated":
        path.write_bytes(data[:len(data) // 3])
    elif damage == "garbage":
        path.write_bytes(os.urandom(4096))
    elif damage == "other python":
        magic = bundle._MAGIC
        path.write_bytes(data.replace(magic, bytes([magic[0] ^ 1]) + magic[1:], 1))
    else:
        path.write_bytes(b"")
    served, status, _ = _run(task_root)
    assert status == 200
    assert set(served.values()) == {"SourceFileLoader"}


def test_a_deleted_module_is_an_import_error_as_without_the_bundle(task_root: Path) -> None:
    _write(task_root)
    (task_root / "handler" / "ping.py").unlink()
    done = _python(task_root, "import handler.app")
    assert done.returncode == 1
    assert "ImportError: cannot import name 'ping' from 'handler'" in done.stderr
