"""Issue 25 items 10, 21, 23: a host list is read by one parser (``plan.hosts.parse_host``), bounded by counting
before anything is built per slot, and decides the worker count when ``--gpus`` does not.

- item 21: ``doctor --hosts [2001:db8::1]:2`` (or a bare IPv6 address) reaches ssh as the whole address, not cut at
  its first colon; the predictor, the host watch and the worker count read the same entries the same way.
- item 10: slot counts near 2^20 are refused by ``validate`` (a host holds at most a run's most workers, and the
  list's slots are added up arithmetically), and the predictor refuses a layout beyond its bound before building
  one (it built 2 x 2^20 layouts for 16 s and 1.6 GB before refusing).
- item 23: ``--hosts a:1,b:1`` without ``--gpus`` runs 2 workers, one per slot, as mpiexec places them, and the plan
  says so; a project's ``multi_gpu.workers`` (other than its default 1) that contradicts the slots is refused.
"""
from __future__ import annotations

import time
import tracemalloc

import pytest
import yaml

from nnconsole.engine.plan.hosts import (HostEntry, HostsError, MAX_SLOTS, check_hosts, host_name, parse_host,
                                         slot_total, workers_for_hosts)
from nnconsole.engine.plan.timing_inputs import PredictionError, host_slots, layouts_for
from tests.support.timing import budget


@pytest.mark.parametrize("entry,name,slots", [
    ("node1", "node1", None), ("node1:4", "node1", 4), ("10.0.0.2:8", "10.0.0.2", 8), ("2001:db8::1", "2001:db8::1", None),
    ("[2001:db8::1]:2", "2001:db8::1", 2), ("[fe80::1]", "fe80::1", None), ("::1", "::1", None)])
def test_one_parser_reads_every_form(entry, name, slots):
    assert parse_host(entry) == HostEntry(name, slots)
    assert host_name(entry) == name
    assert host_slots(entry) == (slots or 1)


def test_doctor_hands_ssh_the_whole_ipv6_address(monkeypatch):
    from nnconsole.engine.doctor import checks

    ran = []

    class Done:
        returncode, stderr = 0, ""

    monkeypatch.setattr(checks.subprocess, "run", lambda cmd, **kw: ran.append(cmd) or Done())
    monkeypatch.delenv("PRTE_MCA_plm_ssh_agent", raising=False)
    monkeypatch.delenv("OMPI_MCA_plm_rsh_agent", raising=False)
    found = checks._hosts(["[2001:db8::1]:2", "2001:db8::2", "node1:3"])
    targets = [cmd[-2] for cmd in ran]
    assert targets == ["2001:db8::1", "2001:db8::2", "node1"], ran
    assert [c.name for c in found] == ["ssh 2001:db8::1", "ssh 2001:db8::2", "ssh node1"]


def test_the_host_watch_reads_the_same_names():
    from nnconsole.engine.launch.host_watch import host_names
    assert host_names(["[2001:db8::1]:2", "2001:db8::2", "a:2"]) == ["2001:db8::1", "2001:db8::2", "a"]


# ---- item 10: counted before built ------------------------------------------------------------------------------
@pytest.mark.parametrize("hosts", [["a:1048576", "b:1048576"], ["a:1048575"], [f"h{i}:60000" for i in range(3)]])
def test_absurd_slot_counts_are_refused_by_the_check(hosts):
    problems = check_hosts(hosts)
    assert problems, hosts
    assert all("slot" in why for _, why in problems)


def test_a_list_whose_slots_exceed_a_run_is_refused_as_a_whole():
    assert check_hosts(["a:40000", "b:40000"]) == [(-1, "the hosts' slots add up to 80,000 workers, more than the "
                                                        "65,536 a run may have")]
    assert slot_total(["a:2", "[fe80::1]:3", "b"]) == 6 and MAX_SLOTS == 65_536


def test_the_predictor_refuses_before_building_a_layout():
    tracemalloc.start()
    start = time.monotonic()
    with pytest.raises(PredictionError, match=r"2 hosts x 30000 workers = 60,000 workers"):
        layouts_for(["a:30000", "b:30000"])
    with pytest.raises(PredictionError, match="2,000 workers"):
        layouts_for([], [2000])
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert time.monotonic() - start < budget(0.5) and peak < 1 << 20


def test_validate_reports_huge_slot_counts_quickly(tmp_path):
    from nnconsole.engine.check.project_file import load_valid_project
    from nnconsole.engine.project.errors import ProjectError
    from tests.support.projects import tabular_project
    path = tabular_project(str(tmp_path / "p"))
    data = yaml.safe_load(open(path))
    data["multi_gpu"].update(hosts=["a:1048576", "b:1048576"], link="1gbit")
    yaml.safe_dump(data, open(path, "w"))
    start = time.monotonic()
    with pytest.raises(ProjectError, match=r"multi_gpu\.hosts\[0\]: 'a:1048576': the slot count"):
        load_valid_project(path)
    assert time.monotonic() - start < budget(5)


# ---- item 23: the hosts' slots decide the worker count -----------------------------------------------------------
def test_without_gpus_the_slots_decide_and_it_is_said():
    workers, note = workers_for_hosts(None, 1, ["a:1", "b:1"])
    assert workers == 2 and "one per slot of the hosts a:1,b:1 (--hosts)" in note and "--gpus" in note
    assert workers_for_hosts(None, 1, ["a", "b", "c:2"])[0] == 4  # an entry without a count is one slot
    assert workers_for_hosts(3, 1, ["a:1", "b:1"]) == (3, "")  # --gpus decides
    assert workers_for_hosts(None, 4, []) == (4, "")  # no hosts: the project's count
    assert workers_for_hosts(None, 4, ["a:2", "b:2"])[0] == 4  # the project agrees with the slots


def test_a_contradicting_project_count_is_refused():
    with pytest.raises(HostsError, match=r"multi_gpu.workers is 3 but the hosts a:1,b:1 \(--hosts\) have 2 slots"):
        workers_for_hosts(None, 3, ["a:1", "b:1"])


def test_train_starts_one_worker_per_slot(tmp_path, monkeypatch):
    """The launcher asks mpiexec for 2 workers for ``--hosts a:1,b:1`` without ``--gpus`` (stopped before start)."""
    from nnconsole.engine.launch import launcher
    from tests.support.projects import tabular_project
    asked = []

    def refuse(run_dir, workers, *args, **kwargs):
        asked.append(workers)
        raise launcher.LaunchError("stop here")

    monkeypatch.setattr(launcher, "worker_command", refuse)
    path = tabular_project(str(tmp_path / "p"))
    with pytest.raises(launcher.LaunchError):
        launcher.launch(launcher.LaunchRequest(project_path=path, hosts=["a:1", "b:1"]))
    assert asked == [2]


def test_plan_says_the_hosts_decided(tmp_path):
    from tests.support.cli import nnconsole
    from tests.support.projects import tabular_project
    path = tabular_project(str(tmp_path / "p"))
    out = nnconsole(["plan", path, "--hosts", "a:1,b:1"]).stdout
    assert "N=2" in out and "2 workers: one per slot of the hosts a:1,b:1 (--hosts)" in out
    assert "N=3" in nnconsole(["plan", path, "--hosts", "a:1,b:1", "--gpus", "3"]).stdout
