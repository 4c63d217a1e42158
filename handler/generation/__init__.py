"""Text generation for decoder-only models (the ``generate`` pipeline)."""
