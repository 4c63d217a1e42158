"""Build failures: each kind has its own exit code so scripts can tell them apart."""

from __future__ import annotations


class BuildError(Exception):
    """A build that cannot produce an artifact. Nothing is left in the output folder."""

    exit_code = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidModelError(BuildError):
    """Not an ONNX file, or an ONNX graph that does not validate."""

    exit_code = 3


class UnsupportedOpsError(BuildError):
    """Operators onnxruntime's CPU provider cannot run."""

    exit_code = 4


class AccuracyGateError(BuildError):
    """The quantized model differs too much from the reference on the sample inputs."""

    exit_code = 5


class OutputError(BuildError):
    """The output folder cannot be written."""

    exit_code = 6
