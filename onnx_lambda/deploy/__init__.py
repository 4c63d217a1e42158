"""``onnx-lambda deploy-config``: which built model ``sam build && sam deploy`` ships.
``shipped_model`` reads and sets it in every file that names it; ``commands`` is its CLI."""
