"""``dflash-tui completion bash|zsh|fish``: scripts the shells accept, generated from the
parsers, that complete subcommands, choices and flags (bash run for real with the script
sourced and its completion function called as bash's own completion would)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest


def completion(shell: str) -> str:
    res = subprocess.run(
        [sys.executable, "-m", "dflash_tui.cli.main", "completion", shell],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    return res.stdout


def need(shell: str) -> str:
    path = shutil.which(shell)
    if path is None:
        if os.environ.get("CI"):
            pytest.fail(f"CI must test {shell} completion: .ci/run installs {shell}")
        pytest.skip(f"{shell} is not installed")
    return path


def bash_complete(script: str, words: list[str]) -> list[str]:
    """COMPREPLY for the line ``words`` (the last word being completed)."""
    quoted = " ".join(f"'{w}'" for w in words)
    program = (
        f"source /dev/stdin <<'EOF'\n{script}\nEOF\n"
        f"COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}\n"
        'COMP_LINE="${COMP_WORDS[*]}"; COMP_POINT=${#COMP_LINE}\n'
        "_shtab_dflash_tui\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    res = subprocess.run(["bash", "-c", program], capture_output=True, text=True, timeout=30)
    assert res.returncode == 0, res.stderr
    return [w.strip() for w in res.stdout.splitlines() if w.strip()]


def test_bash_script_parses_and_completes_subcommands_choices_and_flags() -> None:
    script = completion("bash")
    res = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert "complete -o bashdefault -F _shtab_dflash_tui dflash-tui" in script
    assert bash_complete(script, ["dflash-tui", "st"]) == ["status"]
    assert set(bash_complete(script, ["dflash-tui", "co"])) == {"config", "completion"}
    assert bash_complete(script, ["dflash-tui", "status", "--fail-on", ""]) == ["warning", "error"]
    assert "--watch" in bash_complete(script, ["dflash-tui", "status", "--w"])
    assert bash_complete(script, ["dflash-tui", "replay", "--demo", ""]) == ["seed"]


def test_path_flags_complete_files(tmp_path: os.PathLike[str]) -> None:
    script = completion("bash")
    # --config FILE completes paths (shtab's file completion), --host does not
    assert "_shtab_dflash_tui_status___config_COMPGEN=_shtab_compgen_files" in script
    assert "_shtab_dflash_tui_status___run_root_COMPGEN=_shtab_compgen_dirs" in script
    assert "___host_COMPGEN" not in script


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_zsh_and_fish_scripts_parse(shell: str) -> None:
    path = need(shell)
    script = completion(shell)
    res = subprocess.run([path, "-n"], input=script, capture_output=True, text=True, timeout=30)
    assert res.returncode == 0, res.stderr
    assert "status" in script and "completion" in script


def test_fish_completes_the_subcommand() -> None:
    fish = need("fish")
    script = completion("fish")
    res = subprocess.run(
        [fish, "-c", "source; complete -C 'dflash-tui st'"],
        input=script, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert [ln.split("\t")[0] for ln in res.stdout.splitlines()] == ["status"]
