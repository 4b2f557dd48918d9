"""Small services the rest of the core shares.

- :mod:`harness.util.atomic`       files written whole or not at all
- :mod:`harness.util.cache`        where caches live (``$HARNESS_CACHE_DIR``)
- :mod:`harness.util.paths`        default locations of results and the leaderboard
- :mod:`harness.util.progress`     progress bars that can be switched off
- :mod:`harness.util.environment`  versions and machine facts recorded in results
- :mod:`harness.util.jsonio`       JSON from user files: every failure one line naming file and line
- :mod:`harness.util.models`       where a model comes from (hub id and revision, or a directory)
- :mod:`harness.util.resources`    peak memory over a span of work, the bytes a folder holds
"""
