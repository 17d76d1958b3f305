"""``python -m lipgan.testing REQUEST``: the replica probe's child process
(:func:`lipgan.testing.replicas._probe`), one per replica count; prints its results as one JSON line.
"""

import json
import sys

from lipgan.testing.replicas import _probe

if __name__ == "__main__":
    print(json.dumps({"results": _probe(json.loads(sys.argv[1]))}))
