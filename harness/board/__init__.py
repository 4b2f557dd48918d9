"""The board: the leaderboard built from result files, a layer above :mod:`harness.analysis`.

- :mod:`harness.board.sections`  the section model: sections, rows and cells, computed once
- :mod:`harness.board.markdown`  the markdown leaderboard
- :mod:`harness.board.html`      the HTML board from Jinja2 templates (``templates/``, ``assets/``)
- :mod:`harness.board.cells`     texts of the HTML cells (percentages, cost)
- :mod:`harness.board.build`     :func:`build_board`: a board's markdown, plots and pages, checked or written

``harness leaderboard`` is a thin command over :func:`build_board`.
"""

from harness.board.build import Board, build_board

__all__ = ["Board", "build_board"]
