"""What a result records of its environment: versions of harness, its plugins and key packages."""

from __future__ import annotations

import subprocess
import sys

import harness
from harness.plugins import PluginInfo
from harness.util.environment import KEY_PACKAGES, package_version, versions


def test_versions_records_the_plugins_it_is_given():
    plugins = [
        PluginInfo(name="a", distribution="dist-a", version="1.2", module="a", hooks=("register_retrievers",)),
        PluginInfo(name="b", distribution="dist-b", version="0.0.1", module="b", hooks=()),
    ]
    found = versions(plugins)
    assert found["harness"] == harness.__version__
    assert found["plugins"] == {"a": {"distribution": "dist-a", "version": "1.2"},
                                "b": {"distribution": "dist-b", "version": "0.0.1"}}
    assert found["packages"] == {n: package_version(n) for n in KEY_PACKAGES if package_version(n) is not None}
    assert versions([])["plugins"] == {}


def test_environment_facts_load_no_plugin():
    """Reading the environment imports neither the plugin machinery nor any plugin."""
    code = (
        "import sys\n"
        "from harness.util.environment import machine, versions\n"
        "versions([]); machine()\n"
        "print(sorted(m for m in sys.modules if m == 'harness.plugins' or m.startswith('harness_builtins')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
