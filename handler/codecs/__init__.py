"""Wire formats, one module per family: ``simple`` JSON, Open Inference Protocol ``v2`` (JSON
and binary-tensor extension), raw ``npy``."""
