"""Files harness writes follow the umask, so others can read them.
"""

from __future__ import annotations

import os
import stat

from harness.results.schema import write_result
from helpers.result_docs import make_result

# --- 6. files others can read -----------------------------------------------------------------


def test_written_files_follow_the_umask(tmp_path):
    from harness.util.atomic import atomic_dir, write_text_atomic

    old = os.umask(0o022)
    try:
        import harness.util.atomic as atomic

        atomic._umask = None
        path = write_result(make_result(), tmp_path / "results")
        assert stat.S_IMODE(path.stat().st_mode) == 0o644
        assert stat.S_IMODE(write_text_atomic(tmp_path / "t.txt", "x").stat().st_mode) == 0o644
        with atomic_dir(tmp_path / "d"):
            pass
        assert stat.S_IMODE((tmp_path / "d").stat().st_mode) == 0o755
    finally:
        os.umask(old)
        atomic._umask = None


