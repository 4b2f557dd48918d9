"""The records and protocols of :mod:`harness.api`, under the name earlier releases used.

``from harness.types import RetrieverSpec`` keeps working; new code imports from :mod:`harness.api`.
"""

from harness.api import *  # noqa: F401,F403
from harness.api import __all__  # noqa: F401
