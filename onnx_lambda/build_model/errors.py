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


class ExampleArgumentError(BuildError):
    """``--example`` / ``--shape`` / ``--dim`` do not fit the model (a bad argument)."""

    exit_code = 2


class NoExampleError(BuildError):
    """No input the model runs on: none given, and none of the ladder's candidates runs."""

    exit_code = 7


class NothingToQuantizeError(BuildError):
    """``--quantize`` asked for, but the graph has no node of the op types to quantize."""

    exit_code = 8


class QuantizeError(BuildError):
    """A quantization method produced a model onnxruntime cannot load or run (exit 1)."""


class BuildCancelledError(BaseException):
    """SIGINT or SIGTERM during the build; exit code 128 + the signal's number, as shells do.
    A ``BaseException``, as ``KeyboardInterrupt`` is: the handlers that catch a step's own
    failures (``except Exception``, ``except BuildError``: a quantizer's refusal, a failed
    ``auto`` try, a fast exporter's failure) must not take a cancel for one and go on."""

    def __init__(self, signum: int) -> None:
        import signal

        self.message = f"cancelled by {signal.Signals(signum).name}: nothing was written"
        super().__init__(self.message)
        self.exit_code = 128 + signum
