"""DPR's answer matcher, under the name earlier releases used: see :mod:`harness.scoring.matching`.

``from harness.matching import has_answer`` keeps working.
"""

from harness.scoring.matching import *  # noqa: F401,F403
from harness.scoring.matching import __all__  # noqa: F401
