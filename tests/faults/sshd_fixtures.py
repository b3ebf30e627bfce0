"""The loopback sshd of tests/integration, for the fault tests that cut a real SSH link.

tests/integration/conftest.py is loaded here by path under its own module name (a second
``conftest`` module would clash with pytest's), so its ``make_sshd`` and ``local_view`` are
reused as they are: they skip cleanly without /usr/sbin/sshd or root, and fail under CI.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

INTEGRATION = Path(__file__).resolve().parents[1] / "integration"


def _load() -> ModuleType:
    if str(INTEGRATION) not in sys.path:  # its `from loopback_sshd import ...`
        sys.path.insert(0, str(INTEGRATION))
    name = "integration_conftest_for_faults"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, INTEGRATION / "conftest.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


_conftest = _load()
make_sshd = _conftest.make_sshd
local_view = _conftest.local_view
cli = _conftest.cli

from loopback_sshd import ALIAS, LoopbackSshd  # noqa: E402

__all__ = ["ALIAS", "LoopbackSshd", "cli", "local_view", "make_sshd"]
