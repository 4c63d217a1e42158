"""onnx-lambda developer tooling: local emulator, model build, benchmarks (never deployed)."""
