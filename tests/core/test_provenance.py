"""Where a number came from (fibook.provenance): the checkout's commit (marked dirty by modified tracked files only),
the CPU's and a device's names, and the record every results line carries, checked against a throwaway git
repository and stand-ins for /proc/cpuinfo and the GPU."""

import datetime as dt
import io
import json
import platform
import subprocess

import pytest
import torch

import fibook
from fibook import provenance

CPUINFO = ("processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Test CPU 9000 @ 3.00GHz\nflags\t\t: fpu\n\n"
           "processor\t: 1\nmodel name\t: Another CPU\n")


def git(repo, *args):
    """Run git in ``repo`` with a fixed identity; its stdout, stripped."""
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args], cwd=repo,
                          capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A git repository of one commit (a tracked file), standing in for the checkout."""
    git(tmp_path, "init", "-q")
    (tmp_path / "tracked.txt").write_text("one\n")
    git(tmp_path, "add", "tracked.txt")
    git(tmp_path, "commit", "-q", "-m", "first")
    monkeypatch.setattr(provenance, "PROJECT_ROOT", tmp_path)
    return tmp_path


def test_the_commit_is_the_checkouts_head_and_dirty_only_when_a_tracked_file_changed(repo):
    head = git(repo, "rev-parse", "HEAD")
    assert len(head) == 40 and provenance.git_commit() == head
    (repo / "untracked.txt").write_text("not part of the code\n")
    assert provenance.git_commit() == head  # an untracked file leaves the commit clean
    (repo / "tracked.txt").write_text("two\n")
    assert provenance.git_commit() == head + "+dirty"
    git(repo, "commit", "-q", "-am", "second")
    assert provenance.git_commit() == git(repo, "rev-parse", "HEAD") != head


def test_outside_git_or_without_git_the_commit_is_unknown(tmp_path, monkeypatch):
    monkeypatch.setattr(provenance, "PROJECT_ROOT", tmp_path)  # a folder that is no repository
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    assert provenance.git_commit() == "unknown"

    def missing(*args, **kwargs):
        raise FileNotFoundError("git")

    monkeypatch.setattr(provenance.subprocess, "run", missing)
    assert provenance.git_commit() == "unknown"

    def hangs(*args, **kwargs):
        raise subprocess.TimeoutExpired("git", 10)

    monkeypatch.setattr(provenance.subprocess, "run", hangs)
    assert provenance.git_commit() == "unknown"


def test_the_cpu_is_the_first_model_name_of_cpuinfo_else_what_platform_knows(monkeypatch):
    monkeypatch.setattr(provenance, "open", lambda path: io.StringIO(CPUINFO), raising=False)
    assert provenance.cpu_model() == "Test CPU 9000 @ 3.00GHz"

    def unreadable(path):
        raise PermissionError(path)

    monkeypatch.setattr(provenance, "open", unreadable, raising=False)
    monkeypatch.setattr(platform, "processor", lambda: "x86_64 processor")
    assert provenance.cpu_model() == "x86_64 processor"
    monkeypatch.setattr(platform, "processor", lambda: "")
    monkeypatch.setattr(platform, "machine", lambda: "aarch64")
    assert provenance.cpu_model() == "aarch64"


def test_a_device_is_named_by_its_gpu_model_on_cuda_and_by_the_cpu_otherwise(monkeypatch):
    monkeypatch.setattr(provenance, "cpu_model", lambda: "Test CPU")
    asked = []
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device: asked.append(device) or "Test GPU")
    assert provenance.device_name("cpu") == provenance.device_name(torch.device("cpu")) == "Test CPU"
    assert provenance.device_name("cuda:1") == "Test GPU" and asked == [torch.device("cuda:1")]


def test_the_provenance_record_holds_versions_commit_device_threads_and_the_utc_time(monkeypatch):
    monkeypatch.setattr(provenance, "git_commit", lambda: "abc123+dirty")
    monkeypatch.setattr(provenance, "cpu_model", lambda: "Test CPU")
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device: "Test GPU")
    before = dt.datetime.now(dt.UTC).replace(microsecond=0)
    cpu, cuda = provenance.provenance(), provenance.provenance("cuda:0")
    after = dt.datetime.now(dt.UTC)
    assert set(cpu) == {"fibook_version", "git_commit", "python", "torch", "device", "device_name", "cpu", "threads",
                        "date"}
    assert cpu["fibook_version"] == fibook.__version__ and cpu["git_commit"] == "abc123+dirty"
    assert cpu["python"] == platform.python_version() and cpu["torch"] == torch.__version__
    assert (cpu["device"], cpu["device_name"], cpu["cpu"]) == ("cpu", "Test CPU", "Test CPU")
    assert (cuda["device"], cuda["device_name"], cuda["cpu"]) == ("cuda:0", "Test GPU", "Test CPU")
    assert cpu["threads"] == torch.get_num_threads()
    for record in (cpu, cuda):
        date = dt.datetime.fromisoformat(record["date"])
        assert date.utcoffset() == dt.timedelta(0) and before <= date <= after and date.microsecond == 0
        assert json.loads(json.dumps(record)) == record  # a results line stores it as JSON
