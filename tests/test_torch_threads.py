"""playground.torch_threads: one thread's intra-op count changes, nobody else's."""
from __future__ import annotations

import threading

import pytest
import torch

from playground.torch_threads import process_default, set_here, threads_here


def _in_new_thread(fn):
    box = []
    t = threading.Thread(target=lambda: box.append(fn()))
    t.start()
    t.join()
    return box[0]


def test_set_here_changes_the_calling_thread_only():
    default, mine = process_default(), torch.get_num_threads()
    other = default + 1  # differs from the default whatever this machine's is

    def worker():
        before = set_here(other)
        return before, torch.get_num_threads(), process_default()

    before, inside, default_meanwhile = _in_new_thread(worker)
    assert before == default  # a new thread starts on the process's count
    assert inside == other
    assert default_meanwhile == default  # a thread started while it ran was not affected
    assert torch.get_num_threads() == mine and process_default() == default


def test_threads_here_restores_the_thread_and_leaves_the_default():
    default = process_default()

    def worker():
        start = torch.get_num_threads()
        with threads_here(default + 1):
            during = torch.get_num_threads()
        return start, during, torch.get_num_threads()

    start, during, after = _in_new_thread(worker)
    assert (during, after) == (default + 1, start)
    assert process_default() == default


def test_concurrent_setters_never_leave_their_count_as_the_default():
    default = process_default()
    barrier = threading.Barrier(4)

    def worker(n):
        barrier.wait()
        set_here(n)
        return torch.get_num_threads()

    seen: list[int] = []
    threads = [threading.Thread(target=lambda n=n: seen.append(worker(n))) for n in (1, 3, 1, 3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(seen) == [1, 1, 3, 3]
    assert process_default() == default


def test_a_count_below_one_is_refused():
    with pytest.raises(ValueError, match="at least 1"):
        set_here(0)
