"""``python -m benchmarks.corpus``: the corpus built and served (``bench``)."""

import sys

from benchmarks.corpus.bench import main

sys.exit(main())
