"""The tests' own helpers: a missing busybox skips its tests, except under CI."""

from __future__ import annotations

import pytest
from support import require_busybox


def test_a_missing_busybox_skips_outside_ci_and_fails_under_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("support.shutil.which", lambda name: None)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="busybox is not installed"):
        require_busybox()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI must run the busybox tests"):
        require_busybox()
