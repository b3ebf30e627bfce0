"""``[[hosts]]`` sharing ``job = "NAME"`` form one job: checked once, with clear messages;
a member's launch gets the rendezvous environment and its rank in the command."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from support import config_file

from dflash_tui.core.base.config import ConfigError, load_file, resolve
from dflash_tui.core.base.config_job import elastic_warning, member_host, resumed

TWO = """
[[hosts]]
label = "a"
job = "pair"
[hosts.run]
command = "torchrun --node-rank {node_rank} train.py"
[[hosts]]
label = "b"
address = "me@gpu-b:2222"
job = "pair"
[hosts.run]
command = "torchrun --node-rank {node_rank} train.py"
[[hosts]]
label = "solo"
"""


def test_members_form_one_job_in_config_order(tmp_path: Path) -> None:
    cfg = load_file(config_file(tmp_path, TWO))
    (job,) = cfg.jobs
    assert (job.name, job.members, job.nnodes, job.master_port) == ("pair", ("a", "b"), 2, 29500)
    assert job.master_addr == socket.gethostname()  # member 0 is this machine
    sel = resolve({"config": str(config_file(tmp_path, TWO)), "host": "pair"})
    assert [h.label for h in sel.hosts] == ["a", "b"] and sel.job == job
    assert resolve({"config": str(config_file(tmp_path, TWO)), "host": "solo"}).job is None
    alone = resolve({"config": str(config_file(tmp_path, TWO)), "host": "b"})
    assert alone.job is None and "--host pair acts on the whole job" in alone.notes[-1]


def test_member_host_sets_the_rendezvous_and_the_rank(tmp_path: Path) -> None:
    text = TWO.replace('label = "a"\n', 'label = "a"\naddress = "root@10.0.0.5"\n')
    text += "[jobs.pair]\nmaster_port = 29611\n"
    cfg = load_file(config_file(tmp_path, text))
    job = cfg.jobs[0]
    b = member_host(job, cfg.hosts[1])
    env = dict(b.env)
    assert env["MASTER_ADDR"] == "10.0.0.5" and env["MASTER_PORT"] == "29611"
    assert (env["NNODES"], env["NODE_RANK"], env["DFLASH_JOB"]) == ("2", "1", "pair")
    assert b.command == "torchrun --node-rank 1 train.py"
    again = member_host(job, cfg.hosts[0], resume=True)
    assert again.command == "torchrun --node-rank 0 train.py --resume auto"
    assert resumed("x --resume /ckpt") == "x --resume /ckpt"


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (
            ('command = "torchrun --node-rank {node_rank} train.py"', 'command = "other"', 1),
            "every member runs the same command",
        ),
        (('[[hosts]]\nlabel = "solo"', '[[hosts]]\nlabel = "pair"', 1), "also a host's label"),
        (('job = "pair"', 'job = "-bad"', 1), r"hosts\[0\]\.job '-bad'"),
    ],
)
def test_bad_jobs_are_errors_that_say_why(
    tmp_path: Path, change: tuple[str, str, int], words: str
) -> None:
    with pytest.raises(ConfigError, match=f".*{words}"):
        load_file(config_file(tmp_path, TWO.replace(*change)))


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        ('[jobs.pair]\nmaster_adr = "x"\n', "unknown key 'jobs.pair.master_adr'"),
        ("[jobs.trio]\nmaster_port = 1\n", r"\[jobs.trio\]: no \[\[hosts\]\] entry"),
        ("[jobs.pair]\nmaster_port = 70000\n", "master_port must be a port"),
        ('[jobs.pair]\nmaster_addr = "a;b"\n', "not an ssh-config alias"),
    ],
)
def test_jobs_tables_are_checked(tmp_path: Path, extra: str, words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        load_file(config_file(tmp_path, TWO + extra))


def test_a_job_needs_hosts_not_host(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not \\[host\\]"):
        load_file(config_file(tmp_path, '[host]\njob = "x"\n'))


def test_elastic_restarts_are_warned_about() -> None:
    assert elastic_warning("torchrun --max-restarts 3 -m dflash.train") is not None
    assert elastic_warning("torchrun --max_restarts=2 x") is not None
    assert elastic_warning("torchrun --max-restarts 0 x") is None
    assert elastic_warning("python train.py") is None
