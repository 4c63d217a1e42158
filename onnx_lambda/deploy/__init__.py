"""``onnx-lambda deploy-config``: which built model ``sam build && sam deploy`` ships.
``shipped_model`` reads and sets its one home (template.yaml); ``commands`` is its
CLI; ``regions`` is ``deploy-regions``."""
