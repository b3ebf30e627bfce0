"""The ``scheduler`` key, ``--scheduler`` and the ``[slurm]`` table; what sbatch is given, the
batch script's command across nodes, and Slurm's answers read (pure: no cluster here; the
cluster's tests are tests/integration/test_slurm.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import config_file

from dflash_tui.core.base.config import ConfigError, load_file, resolve
from dflash_tui.core.base.config_slurm import SlurmConfig
from dflash_tui.core.control.slurm.batch import node_command, sbatch_args, wrapper_text
from dflash_tui.core.control.slurm.findings import SchedulerView, findings, overlay
from dflash_tui.core.control.slurm.query import SlurmJob, exit_code, fields, seconds


def test_defaults_are_direct_and_the_documented_slurm_values(tmp_path: Path) -> None:
    h = load_file(config_file(tmp_path, "[run]\ncommand = 'true'\n")).host
    assert h.scheduler == "direct"
    assert h.slurm == SlurmConfig(nodes=1, gpus_per_node=8, job_name="dflash", node_access="srun")


def test_the_slurm_table_at_the_top_and_a_host_of_its_own(tmp_path: Path) -> None:
    text = """
scheduler = "slurm"
[slurm]
partition = "gpu"
nodes = 2
time = "1-00:00:00"
sbatch_args = ["--exclusive", "--constraint=h100"]

[[hosts]]
address = "login1"

[[hosts]]
address = "box"
scheduler = "direct"

[[hosts]]
address = "login2"
[hosts.slurm]
account = "lab"
node_access = "ssh"
"""
    a, b, c = load_file(config_file(tmp_path, text)).hosts
    assert (a.scheduler, a.slurm.partition, a.slurm.nodes, a.slurm.time) == (
        "slurm", "gpu", 2, "1-00:00:00")  # fmt: skip
    assert a.slurm.sbatch_args == ("--exclusive", "--constraint=h100")
    assert b.scheduler == "direct"
    # A host's own [slurm] replaces the top-level one as a whole, as [run] and [restart] do.
    assert (c.slurm.account, c.slurm.node_access, c.slurm.partition) == ("lab", "ssh", None)


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ('[slurm]\npartiton = "gpu"', "partition"),
        ('scheduler = "pbs"', "scheduler must be one of direct, slurm"),
        ('[slurm]\ntime = "soon"', "Slurm's time format"),
        ('[slurm]\npartition = "--uid=0"', "must be a Slurm name"),
        ('[slurm]\njob_name = "a b"', "must be a Slurm name"),
        ("[slurm]\nnodes = 0", "whole number from 1"),
        ("[slurm]\ngpus_per_node = true", "whole number"),
        ('[slurm]\nsbatch_args = "--exclusive"', "list of strings"),
        ('[slurm]\nsbatch_args = ["a\\nb"]', "newline"),
        ('[slurm]\nnode_access = "rsh"', "node_access must be one of srun, ssh"),
        ('scheduler = "slurm"\n[[hosts]]\naddress = "a"\njob = "j"', "under Slurm one host"),
    ],
)
def test_bad_values_are_errors_naming_the_key(tmp_path: Path, body: str, words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        load_file(config_file(tmp_path, body + "\n"))


def test_the_flag_overrides_the_config(tmp_path: Path) -> None:
    cfg = config_file(tmp_path, 'scheduler = "direct"\n')
    assert resolve({"config": str(cfg), "scheduler": "slurm"}).host.scheduler == "slurm"
    with pytest.raises(ConfigError, match="--scheduler"):
        resolve({"config": str(cfg), "scheduler": "lsf"})


def test_sbatch_gets_one_argument_per_setting() -> None:
    from dflash_tui.core.base.config_types import HostConfig

    s = SlurmConfig(partition="gpu", nodes=2, gpus_per_node=4, account="lab", qos="high",
                    time="30", job_name="j", sbatch_args=("--comment", "a b; c"))  # fmt: skip
    assert sbatch_args(HostConfig(slurm=s)) == [
        "--job-name=j", "--nodes=2", "--ntasks-per-node=1", "--requeue", "--gres=gpu:4",
        "--partition=gpu", "--account=lab", "--qos=high", "--time=30", "--comment", "a b; c",
    ]  # fmt: skip
    assert "--gres" not in " ".join(sbatch_args(HostConfig(slurm=SlurmConfig(gpus_per_node=0))))


def test_across_nodes_the_bundled_pipeline_becomes_torchrun_under_srun() -> None:
    cmd = "python3 -m dflash_train.train --preset tiny --device cpu"
    assert node_command(cmd, 1) == cmd
    two = node_command(cmd, 2)
    assert two.startswith("srun --nodes=2 --ntasks-per-node=1 --kill-on-bad-exit=1 sh -c ")
    assert "-m torch.distributed.run --nnodes" in two and two.count("dflash_train.train") == 1
    # A command that is torchrun already is left as it is, its {node_rank} filled per node.
    own = node_command("torchrun --node-rank {node_rank} x.py", 2)
    assert "torch.distributed.run" not in own and '--node-rank "$NODE_RANK"' in own


def test_the_batch_script_runs_the_direct_launchs_wrapper() -> None:
    text = wrapper_text()
    assert 'put pid "$$ $3 ${20}"' in text and 'put exit "$rc $(now)"' in text


def test_slurm_times_and_exit_codes() -> None:
    assert seconds("1-02:03:04") == 93784 and seconds("05:00") == 300
    assert seconds("UNLIMITED") is None and seconds("INVALID") is None
    assert exit_code("3:0") == 3 and exit_code("0:9") == 137 and exit_code("x") is None
    f = fields("JobId=7 JobName=a JobState=FAILED Reason=NonZeroExitCode ExitCode=3:0 Requeue=1")
    assert (f["JobId"], f["JobState"], f["ExitCode"], f["Requeue"]) == ("7", "FAILED", "3:0", "1")


def test_states_map_to_ours_and_findings_name_the_next_step() -> None:
    states = {"PENDING": "queued", "RUNNING": "running", "COMPLETED": "exited",
              "FAILED": "exited", "CANCELLED": "killed", "TIMEOUT": "killed",
              "NODE_FAIL": "killed", "UNKNOWN": "unknown"}  # fmt: skip
    for slurm, ours in states.items():
        assert SlurmJob("1", slurm).run_state == ours
    queued = findings(SchedulerView(job=SlurmJob("4", "PENDING", reason="Priority",
                                                 start="2026-01-01T00:00:00")))  # fmt: skip
    assert [f.code for f in queued] == ["queued"]
    assert "Priority" in queued[0].message and "2026-01-01T00:00:00" in queued[0].message
    for state in ("NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY", "TIMEOUT"):
        (f,) = findings(SchedulerView(job=SlurmJob("4", state, nodes=("n1",))))
        assert f.code == "scheduler-ended-job" and state in f.message and f.action == "restart"
    held = SchedulerView(job=SlurmJob("4", "RUNNING", nodes=("n1", "n2")),
                         nodes={"n1": ("drained", "bad fan"), "n2": ("down*", None)})  # fmt: skip
    drained, down = findings(held)
    assert (drained.code, down.code) == ("node-drained", "node-down")
    assert "node n1 that job 4 holds is drained (bad fan)" in drained.message
    (gone,) = findings(SchedulerView(error="squeue is not on PATH on local"))
    assert gone.code == "scheduler-unavailable" and "squeue is not on PATH" in gone.message


def test_overlay_puts_slurm_s_word_over_the_login_node_s_reading() -> None:
    doc = {"run": {"state": "launch-failed", "id": "x"},
           "findings": [{"code": "launch-failed"}, {"code": "disk-low"}]}  # fmt: skip
    from dflash_tui.core.control.slurm.runs import SlurmRun

    run = SlurmRun("20260101-000000-0001", "/r/20260101-000000-0001", "9")
    overlay(doc, SchedulerView(run, SlurmJob("9", "FAILED", nodes=("n1",), exit_code=3)))
    assert doc["run"] == {"state": "exited", "id": run.run_id, "exit_code": 3}
    assert doc["scheduler"] == {"kind": "slurm", "job_id": "9", "state": "FAILED",
                                "reason": None, "nodes": ["n1"], "time_left_s": None,
                                "exit_code": 3}  # fmt: skip
    assert [f["code"] for f in doc["findings"]] == ["disk-low"]


def test_the_supervisor_alerts_on_no_login_node_reading_of_the_run() -> None:
    from dflash_tui.core.base.config_types import HostConfig
    from dflash_tui.core.control.scheduled import trusted
    from dflash_tui.core.diagnosis.finding import Finding

    seen = [Finding(code, "error", (), code) for code in ("launch-failed", "run-exited",
                                                          "disk-low", "no-progress")]  # fmt: skip
    assert [f.code for f in trusted(HostConfig(scheduler="slurm"), seen)] == ["disk-low"]
    assert trusted(HostConfig(), seen) == seen  # a direct run: its own reading is the word


def test_a_kill_confirmation_names_the_job_and_its_nodes() -> None:
    from dflash_tui.core.control.slurm.actions import kill_confirm
    from dflash_tui.core.control.slurm.runs import SlurmRun

    run = SlurmRun("20260101-000000-0001", "/r/20260101-000000-0001", "12")
    text = kill_confirm(run, SlurmJob("12", "RUNNING", nodes=("gpu1", "gpu2")))
    assert text == ("cancel run 20260101-000000-0001: scancel Slurm job 12 (RUNNING) on gpu1, gpu2")
    assert "queued: no node yet" in kill_confirm(run, SlurmJob("12", "PENDING"))


def test_config_shows_what_sbatch_is_given(tmp_path: Path) -> None:
    from dflash_tui.cli.config_cmd import summary

    cfg = load_file(config_file(tmp_path, 'scheduler = "slurm"\n[slurm]\npartition = "gpu"\n'))
    lines = summary(cfg)
    assert any("scheduler slurm: sbatch --job-name=dflash" in ln and "--partition=gpu" in ln
               for ln in lines), lines  # fmt: skip
    assert not any("scheduler" in ln for ln in summary(load_file(config_file(tmp_path, ""))))


def test_an_exit_record_that_is_not_code_and_time_is_an_unknown_end() -> None:
    # The batch script writes ``CODE TIME`` on the job's machine: anything else is unknown,
    # never a ValueError out of the supervisor's cycle (supervise.job_report reads the end time
    # through rundir.parse_exit, as the run directory's reader does).
    from dflash_tui.core.base.rundir import parse_exit

    assert parse_exit("0 1764669600.5") == (0, 1764669600.5)
    assert parse_exit("0 x") == (0, None)
    assert parse_exit("0 nan") == (0, None)
    assert parse_exit("3") == (3, None)


def test_one_rule_says_the_run_state_and_the_findings_slurm_replaces() -> None:
    from dflash_tui.core.control.scheduled import REPLACED
    from dflash_tui.core.control.slurm.findings import replaced, slurm_job_text, slurm_run_state
    from dflash_tui.core.control.slurm.runs import SlurmRun

    run = SlurmRun("20260101-000000-0001", "/r/20260101-000000-0001", "9")
    pending = SlurmJob("9", "PENDING", reason="Resources", start="2026-01-01T00:10:00")
    assert slurm_run_state(SchedulerView(run, pending), "exited") == "queued"
    assert slurm_run_state(SchedulerView(run, SlurmJob("9", "UNKNOWN")), "exited") == "exited"
    assert slurm_run_state(SchedulerView(error="no slurmctld"), "running") == "unknown"
    assert replaced(SchedulerView(run, pending)) == REPLACED
    assert replaced(SchedulerView(run, SlurmJob("", "UNKNOWN"))) == frozenset()  # sbatch refused
    assert slurm_job_text(pending) == "Slurm job 9 PENDING (Resources)"
    assert slurm_job_text(pending, start=True).endswith(", expected start 2026-01-01T00:10:00")


def test_slurm_is_asked_again_only_when_its_kept_word_is_old(tmp_path: Path) -> None:
    """A sample every second must not send Slurm's commands every second (a shared
    slurmctld): the kept view is read again after SLURM_REFRESH_S, or when asked afresh."""
    import asyncio

    from dflash_tui.core.base.config_types import HostConfig
    from dflash_tui.core.control.slurm.findings import SLURM_REFRESH_S, KeptView
    from dflash_tui.core.link.transport import CommandResult, LocalTransport

    class Counted(LocalTransport):
        sent = 0

        async def run(
            self, cmd: str, stdin: bytes | None = None, timeout: float = 30.0
        ) -> CommandResult:
            self.sent += 1
            return await super().run(cmd, stdin, timeout)

    transport = Counted()
    kept = KeptView(transport, HostConfig(run_root=str(tmp_path), scheduler="slurm"))

    async def reads() -> list[int]:
        out = []
        for fresh in (False, False, True, False):
            await kept.read(fresh)
            out.append(transport.sent)
        kept.read_at -= SLURM_REFRESH_S  # as old as the refresh allows
        await kept.read()
        return [*out, transport.sent]

    one, again, fresh, kept_again, old = asyncio.run(reads())
    assert one > 0 and again == one and fresh > again and kept_again == fresh and old > fresh
