"""One file of the handler's bytecode, served to ``import`` by a meta-path finder.

Each module imported through the normal path finder costs ~0.2 M instructions of importlib's
Python-level machinery (a directory scan, the source's stat, the ``.pyc``'s open, read and
validation) before its code runs; the init imports ~35 of ours. Measured: cold init 188.6 M
instructions with the bundle, 193.5 M without (−2.5 %; digits, ``cold_instructions``' method,
Python 3.11). The image writes every module's
code into one file at build time (``python -m handler.bundle``, after ``compileall``);
``handler.app`` calls ``install`` before its imports, and each handler module then comes from
that file: a dictionary look-up, the check a timestamp ``.pyc`` makes (the ``.py``'s size and
mtime, one ``os.stat``) and one ``os.pread`` of its code (read per module, not all at install:
a buffer of the whole file costs a page fault per 4 KB, ~10 µs each on these VMs). ``remove``
(after the init) closes it; later imports take the normal path. The ``.py`` files stay the source
of truth: a module whose source changed or is gone, or a bundle that is missing, unreadable or
written by another Python, is not served from it; that module imports the normal way.

File: an 8-byte little-endian length, then the marshalled header ``(MAGIC_NUMBER, FORMAT,
{module name: Entry}, codes' length)``, then each module's marshalled code object, back to back.
A file of another length is not used.
"""

from __future__ import annotations

import _frozen_importlib_external
import marshal
import os
import sys
from _frozen_importlib import ModuleSpec

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType
    from typing import BinaryIO

    # source and its .pyc (relative to the package), is a package, source size and mtime_ns,
    # code offset and length
    Entry = tuple[str, str, bool, int, int, int, int]

PACKAGE = os.path.dirname(os.path.abspath(__file__))
FORMAT = 1
_MAGIC = _frozen_importlib_external.MAGIC_NUMBER  # the interpreter's bytecode version
_SELF = ("handler", "handler.app", "handler.bundle")  # imported before it is installed


class _Finder:
    """``sys.meta_path``'s first entry, and the loader of what it finds."""

    def __init__(self, package: str, modules: dict[str, Entry], file: BinaryIO,
                 start: int) -> None:
        self.package, self.modules, self.file, self.start = package, modules, file, start

    def find_spec(self, name: str, path: object = None,
                  target: object = None) -> ModuleSpec | None:
        entry = self.modules.pop(name, None)  # served once: a reload takes the normal path
        if entry is None:
            return None
        source, cached, is_package, size, mtime_ns, offset, length = entry
        source = os.path.join(self.package, source)
        try:
            st = os.stat(source)
        except OSError:
            return None
        if st.st_size != size or st.st_mtime_ns != mtime_ns:  # edited since the build
            return None
        # (a loader by its methods: importlib.abc's base class stays off the cold path)
        spec = ModuleSpec(name, self, origin=source,  # type: ignore[arg-type]
                          is_package=is_package)
        spec.has_location = True  # __file__ is the source, as the path finder sets it
        spec.cached = os.path.join(self.package, cached)  # (unset: computed in Python)
        if is_package:
            spec.submodule_search_locations = [os.path.dirname(source)]
        spec.loader_state = (self.start + offset, length)
        return spec

    def create_module(self, spec: ModuleSpec) -> None:
        return None  # the default module object

    def exec_module(self, module: ModuleType) -> None:
        spec = module.__spec__
        assert spec is not None  # (find_spec made it)
        offset, length = spec.loader_state
        exec(marshal.loads(os.pread(self.file.fileno(), length, offset)), module.__dict__)


def path_of(package: str) -> str:
    """Where the bundle of the handler package at ``package`` lives (for this interpreter)."""
    return os.path.join(package, "__pycache__", f"bundle.{sys.implementation.cache_tag}.bin")


def install(path: str | None = None) -> bool:
    """Serve the handler's modules from the bundle (default: this package's) until ``remove``;
    False (nothing installed) when there is none usable."""
    path = path or path_of(PACKAGE)
    try:
        fh = open(path, "rb")  # noqa: SIM115  (open until ``remove``)
    except OSError:
        return False
    try:
        size = os.fstat(fh.fileno()).st_size
        end = 8 + int.from_bytes(fh.read(8), "little")
        if end > size:
            raise EOFError(path)
        magic, version, modules, length = marshal.loads(fh.read(end - 8))
        usable = (magic, version) == (_MAGIC, FORMAT) and size == end + length
    except (OSError, EOFError, ValueError, TypeError):  # (a short tuple is a ValueError)
        usable = False
    if not usable:
        fh.close()
        return False
    package = os.path.dirname(os.path.dirname(path))  # (the bundle is in its __pycache__)
    sys.meta_path.insert(0, _Finder(package, modules, fh, end))
    return True


def remove() -> None:
    """Stop serving from the bundle and close it (the init is done: ``handler.app``)."""
    for finder in [f for f in sys.meta_path if isinstance(f, _Finder)]:
        sys.meta_path.remove(finder)
        finder.file.close()


def _module_name(relative: str) -> str:
    parts = relative[:-3].split(os.sep)
    return ".".join(["handler", *(parts[:-1] if parts[-1] == "__init__" else parts)])


def write(package: str = PACKAGE) -> str:
    """Compile every module of the handler package at ``package`` into its bundle, as
    ``compileall`` compiles each (its ``.py`` path as the code's file name); the bundle's path."""
    from importlib.util import cache_from_source  # build time only

    package = os.path.abspath(package)
    modules: dict[str, Entry] = {}
    codes = bytearray()
    for folder, dirs, files in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for file in sorted(f for f in files if f.endswith(".py")):
            source = os.path.join(folder, file)
            relative = os.path.relpath(source, package)
            name = _module_name(relative)
            if name in _SELF:
                continue
            st = os.stat(source)  # before the read: a later edit then shows as a mismatch
            with open(source, "rb") as fh:
                code = marshal.dumps(compile(fh.read(), source, "exec", dont_inherit=True))
            modules[name] = (relative, os.path.relpath(cache_from_source(source), package),
                             file == "__init__.py", st.st_size, st.st_mtime_ns, len(codes),
                             len(code))
            codes += code
    header = marshal.dumps((_MAGIC, FORMAT, modules, len(codes)))
    path = path_of(package)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    partial = f"{path}.{os.getpid()}"
    with open(partial, "wb") as fh:
        fh.write(len(header).to_bytes(8, "little") + header + codes)
    os.replace(partial, path)  # never a half-written bundle
    return path


if __name__ == "__main__":  # python -m handler.bundle [PACKAGE]: the image's build step
    print(write(*sys.argv[1:2]))
