"""The code runs on every Python Lambda runs it on: 3.11 here, 3.12 in the image and the
SnapStart zip, 3.13 on Managed Instances. Interpreters other than this one cannot be installed on
these machines, so handler/, warmer/ and onnx_lambda/ are read (AST) for what 3.12 and 3.13
removed, or made warn (an error under the suite's ``filterwarnings = error``).

The lists are taken from the "Removed" and "Deprecated" sections of What's New In Python 3.12
and 3.13 (python/cpython Doc/whatsnew/3.12.rst and 3.13.rst); only what a reading of the source
can find is listed: a removed module, a removed module-level name, a method name no other API
uses, and a few calls whose deprecated form shows in their arguments.
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from onnx_lambda.source_tree import root

PACKAGES = ("handler", "warmer", "onnx_lambda", "benchmarks")

REMOVED_MODULES = {
    # 3.12 (PEP 594, PEP 632 and importlib's cleanup)
    **dict.fromkeys(("asynchat", "asyncore", "distutils", "imp", "smtpd"), "removed in 3.12"),
    # 3.13 (PEP 594's remaining "dead batteries", lib2to3, tkinter.tix)
    **dict.fromkeys(("aifc", "audioop", "cgi", "cgitb", "chunk", "crypt", "imghdr", "mailcap",
                     "msilib", "nis", "nntplib", "ossaudiodev", "pipes", "sndhdr", "spwd",
                     "sunau", "telnetlib", "uu", "xdrlib", "lib2to3", "tkinter.tix",
                     "typing.io", "typing.re"), "removed in 3.13"),
}

# dotted names, as imported or reached from an imported module
REMOVED_NAMES = {
    **dict.fromkeys((
        "configparser.SafeConfigParser", "importlib.abc.Finder", "importlib.util.set_package",
        "importlib.util.set_loader", "importlib.util.module_for_loader", "pkgutil.ImpImporter",
        "pkgutil.ImpLoader", "io.OpenWrapper", "locale.format", "sqlite3.enable_shared_cache",
        "sqlite3.OptimizedUnicode", "ssl.RAND_pseudo_bytes", "ssl.match_hostname",
        "ssl.wrap_socket", "unittest._TextTestResult"), "removed in 3.12"),
    **dict.fromkeys((
        "configparser.LegacyInterpolation", "locale.resetlocale", "re.template", "re.TEMPLATE",
        "re.T", "unittest.findTestCases", "unittest.makeSuite", "unittest.getTestCaseNames",
        "webbrowser.MacOSX", "opcode.is_pseudo", "opcode.MIN_PSEUDO_OPCODE",
        "opcode.MAX_PSEUDO_OPCODE", "opcode.ENABLE_SPECIALIZATION"), "removed in 3.13"),
    **dict.fromkeys((
        "asyncio.get_event_loop",  # (warns when no loop is set; get_running_loop instead)
        "datetime.datetime.utcnow", "datetime.datetime.utcfromtimestamp",
        "ast.Num", "ast.Str", "ast.Bytes", "ast.NameConstant", "ast.Ellipsis",
        "typing.ByteString", "collections.abc.ByteString", "pkgutil.find_loader",
        "pkgutil.get_loader", "calendar.January", "calendar.February", "sys.last_type",
        "sys.last_value", "sys.last_traceback"), "warns from 3.12"),
    **dict.fromkeys((
        "ctypes.SetPointerType", "glob.glob0", "glob.glob1", "platform.java_ver",
        "typing.no_type_check_decorator"), "warns from 3.13"),
}

# attribute names of removed (or newly warning) methods that no other common API uses
REMOVED_METHODS = {
    **dict.fromkeys((
        "failUnless", "failIf", "failUnlessEqual", "failIfEqual", "failUnlessAlmostEqual",
        "failIfAlmostEqual", "failUnlessRaises", "assertEquals", "assertNotEquals",
        "assertAlmostEquals", "assertNotAlmostEquals", "assertRegexpMatches",
        "assertRaisesRegexp", "assertNotRegexpMatches", "assertDictContainsSubset", "readfp",
        "find_module", "find_loader", "module_repr"), "removed in 3.12"),
    **dict.fromkeys(("settiltangle", "usageExit"), "removed in 3.13"),
    **dict.fromkeys(("utcnow", "utcfromtimestamp", "co_lnotab"), "warns from 3.12"),
}


def _dotted(node: ast.expr, aliases: dict[str, str]) -> str | None:
    """``a.b.c`` with ``a`` replaced by what it was imported as; None for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in aliases:
        return None
    return ".".join([aliases[node.id], *reversed(parts)])


def _module_problem(name: str) -> str | None:
    parts = name.split(".")
    for end in range(1, len(parts) + 1):
        prefix = ".".join(parts[:end])
        if prefix in REMOVED_MODULES:
            return f"module {prefix}: {REMOVED_MODULES[prefix]}"
        if prefix in REMOVED_NAMES:
            return f"{prefix}: {REMOVED_NAMES[prefix]}"
    return None


def problems(source: str, filename: str = "<source>") -> Iterator[str]:
    """What in ``source`` 3.12 or 3.13 removed or made warn, as ``file:line: what``."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an invalid escape, say: a SyntaxWarning from 3.12
        tree = ast.parse(source, filename, feature_version=(3, 11))  # the oldest we support
        compile(tree, filename, "exec", dont_inherit=True)
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):  # the import bindings first: a use may precede it in the walk
        if isinstance(node, ast.Import):
            for alias in node.names:
                aliases[alias.asname or alias.name.partition(".")[0]] = (
                    alias.name if alias.asname else alias.name.partition(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    tar = "tarfile" in aliases.values() or any(v.startswith("tarfile.") for v in aliases.values())
    for node in ast.walk(tree):
        found: str | None = None
        if isinstance(node, ast.Import):
            found = next(filter(None, (_module_problem(a.name) for a in node.names)), None)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found = _module_problem(node.module) or next(filter(None, (
                _module_problem(f"{node.module}.{a.name}") for a in node.names)), None)
        elif isinstance(node, ast.Attribute):
            dotted = _dotted(node, aliases)
            found = _module_problem(dotted) if dotted else None
            if found is None and node.attr in REMOVED_METHODS:
                found = f".{node.attr}: {REMOVED_METHODS[node.attr]}"
        elif isinstance(node, ast.Call):
            found = _call_problem(node, _dotted(node.func, aliases), tar)
        if found:
            yield f"{filename}:{getattr(node, 'lineno', '?')}: {found}"


def _call_problem(call: ast.Call, name: str | None, tar: bool) -> str | None:
    """A call whose deprecated form shows in its arguments (``tar``: the file uses tarfile)."""
    keywords = {k.arg for k in call.keywords}
    if name == "shutil.rmtree" and "onerror" in keywords:
        return "shutil.rmtree(onerror=): warns from 3.12 (onexc=)"
    # count, maxsplit and flags passed by position: warns from 3.13
    if name in ("re.sub", "re.subn") and len(call.args) > 3:
        return f"{name} with count or flags by position: warns from 3.13"
    if name == "re.split" and len(call.args) > 2:
        return "re.split with maxsplit or flags by position: warns from 3.13"
    if (tar and isinstance(call.func, ast.Attribute)
            and call.func.attr in ("extract", "extractall") and "filter" not in keywords):
        return "a tar archive extracted without filter=: warns from 3.12"
    return None


def _sources() -> list[Path]:
    return sorted(path for package in PACKAGES for path in (root() / package).rglob("*.py"))


def test_the_packages_use_nothing_3_12_or_3_13_removed_or_made_warn() -> None:
    assert len(_sources()) > 50  # (the walk found the packages)
    found = [problem for path in _sources()
             for problem in problems(path.read_text(), str(path.relative_to(root())))]
    assert found == []


@pytest.mark.parametrize("source", [
    "import imp",
    "import distutils.core",
    "from distutils import sysconfig",
    "import telnetlib as t",
    "from typing import io",
    "import typing.re",
    "import locale\nlocale.resetlocale()",
    "import locale as l\nl.format('%d', 1)",
    "from unittest import makeSuite",
    "import ssl\nssl.wrap_socket(s)",
    "import importlib.util\nimportlib.util.set_loader(f)",
    "self.assertEquals(1, 1)",
    "parser.readfp(fh)",
    "from datetime import datetime\ndatetime.utcnow()",
    "import datetime\ndatetime.datetime.utcfromtimestamp(0)",
    "import asyncio\nasyncio.get_event_loop()",
    "import shutil\nshutil.rmtree(path, onerror=handler)",
    "import re\nre.sub(a, b, text, 1)",
    "import re\nre.split(a, text, 2)",
    "import tarfile\ntarfile.open(p).extractall(d)",
])
def test_each_kind_of_use_is_found(source: str) -> None:
    assert list(problems(source))


@pytest.mark.parametrize("source", [
    "x = '\\d'",  # an invalid escape sequence: a SyntaxWarning from 3.12
    "type Point = tuple[float, float]",  # 3.12's syntax (PEP 695)
    "def first[T](items: list[T]) -> T: ...",
])
def test_syntax_newer_than_3_11_or_warned_about_is_found(source: str) -> None:
    with pytest.raises((SyntaxError, SyntaxWarning, DeprecationWarning)):
        list(problems(source))


@pytest.mark.parametrize("source", [
    "import re\nre.sub(a, b, text, count=1)\nre.split(a, text, maxsplit=2)",
    "import shutil\nshutil.rmtree(path, onexc=handler)",
    "import tarfile\ntarfile.open(p).extractall(d, filter='data')",
    "import locale\nlocale.setlocale(locale.LC_ALL, '')",
    "from datetime import UTC, datetime\ndatetime.now(UTC)",
    "import asyncio\nasyncio.get_running_loop()",
    "import typing\ntyping.IO",
    "format('%d', 1)",
])
def test_their_replacements_are_not(source: str) -> None:
    assert list(problems(source)) == []
