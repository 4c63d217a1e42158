"""The protocols the handler speaks, one module or folder each (filled in by the next commit)."""
