"""Run a long job's event generator in a child process and relay its events.

A training in a worker thread of the server shares the server's GIL and heap with everyone:
next to two trainings a 60 ms generation took seconds, and the memory a run touched stayed
with the server after it ended. In a child process the run has its own interpreter and heap,
the operating system takes all of it back when the run ends, and an out-of-memory kill ends
the run, not the server.

    for event in iter_in_child("playground.training.engine:train", {...}, stop_kw="stop"):
        ...                                   # the same events the generator yields in-process

Closing the relaying generator (a UI's Stop) asks the child to stop through `stop_kw` (the
job saves and returns) and returns at once; a reaper thread gives the child up to `grace_s`,
then terminates it. A `stop_requested` callable is watched by a thread of its own, so a user's
Stop reaches the child even while nobody pulls the relay (a cancelled request).

Children come from a fork server (never a fork of the server itself, which has threads): a
small single-threaded process started once, which has imported torch and the training engine
(PRELOAD) and forks a child per job, so a job starts without 3–10 s of imports. Where there is
no fork server (Windows) or on a ZeroGPU Space (whose `spaces` package manages CUDA at import)
children are spawned, importing everything themselves. Events and errors travel over a pipe
between our own two processes; nothing is read back from disk or from a user.
"""
from __future__ import annotations

import importlib
import multiprocessing
import os
import threading
import time
from collections.abc import Callable, Generator
from multiprocessing.connection import Connection
from typing import Any

from playground.errors import PlaygroundError, TooBigError

POLL_S = 0.1
# What the fork server imports once for every child: torch, torch._dynamo (any optimizer's
# constructor imports it: ~1.8 s) and the engines the heavy jobs run.
PRELOAD = ["playground.child_preload"]
KILL_WAIT_S = 2.0
JOB_NICENESS = 10  # heavy jobs yield the CPU to the server's interactive work


def _resolve(target: str) -> Any:
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def _child_main(conn: Connection, target: str, kwargs: dict[str, Any], stop: Any, stop_kw: str | None,
                threads: int | None, niceness: int) -> None:
    """Child body: run the generator, sending ("event", e) ... then ("done", return value)."""
    try:
        if niceness and hasattr(os, "nice"):
            os.nice(max(0, niceness - os.nice(0)))  # to `niceness` (a fork server's child starts there already)
        if threads:
            import torch  # function-level: torch takes ~1.5 s to import and tokenizer-build children never need it

            torch.set_num_threads(threads)
        if stop_kw:
            kwargs = {**kwargs, stop_kw: stop.is_set}
        gen = _resolve(target)(**kwargs)
        while True:
            try:
                event = next(gen)
            except StopIteration as done:
                conn.send(("done", done.value))
                return
            conn.send(("event", event))
    except PlaygroundError as exc:
        conn.send(("user-error", (type(exc).__module__, type(exc).__qualname__, str(exc))))
    except MemoryError:
        conn.send(("user-error", ("playground.errors", "TooBigError",
                                  "This job ran out of memory on this server; make it smaller (model, batch, data).")))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, which raises
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


def _user_error(module: str, qualname: str, message: str) -> PlaygroundError:
    """The PlaygroundError subclass the child raised (anything else becomes a PlaygroundError)."""
    try:
        cls = getattr(importlib.import_module(module), qualname)
    except (ImportError, AttributeError):
        cls = PlaygroundError
    if not (isinstance(cls, type) and issubclass(cls, PlaygroundError)):
        cls = PlaygroundError
    return cls(message)


def job_context() -> Any:
    """The multiprocessing context children start from: the preloaded fork server, else spawn."""
    if "forkserver" not in multiprocessing.get_all_start_methods() or os.environ.get("SPACES_ZERO_GPU"):
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)  # takes effect when the fork server starts (the first job)
    return ctx


def warm_up() -> None:
    """Start the fork server now (in the background), so that the first job does not wait for
    its imports; a no-op where children are spawned."""
    ctx = job_context()
    if ctx.get_start_method() == "forkserver":
        # function-level: the module exists on POSIX only
        from multiprocessing import forkserver

        threading.Thread(target=forkserver.ensure_running, daemon=True, name="playground-forkserver").start()


def _watch_stop(stop_requested: Callable[[], bool], stop: Any, proc: Any) -> None:
    """Forward a stop request to the child as soon as it is made (while the child lives)."""
    while proc.is_alive() and not stop.is_set():
        if stop_requested():
            stop.set()
            return
        time.sleep(POLL_S)


class JobCancelled(PlaygroundError):
    """`should_stop` said stop before the job finished (its child was ended)."""


def iter_in_child(target: str, kwargs: dict[str, Any], *, stop_kw: str | None = "stop", grace_s: float = 30.0,
                  threads: int | None = None, niceness: int = JOB_NICENESS,
                  should_stop: Callable[[], bool] | None = None,
                  stop_requested: Callable[[], bool] | None = None,
                  max_s: float | None = None) -> Generator[Any, None, Any]:
    """Yield the events of `target(**kwargs)` ("module:function", a generator function) run in a
    child process, and return its return value; its PlaygroundErrors are raised here as they were.

    The child runs at a lower CPU priority (`niceness`): a training uses every core it is given,
    and the server's own threads (generation, analysis, the web server) must still answer at once.
    A job without a graceful stop (`stop_kw=None`) is terminated at once when closed; a true
    `should_stop()` (checked every POLL_S, also between events) ends it and raises JobCancelled.
    A true `stop_requested()` (checked likewise) asks for the graceful stop, as closing does,
    and the events go on to the job's own end (its "stopped" event, its return value); so does
    running past `max_s` seconds (a shared server's time cap). A child that has not ended
    `grace_s` after a graceful stop was asked for (stuck where it never looks) is ended, and
    JobCancelled raised: no job outlives its stop.
    """
    ctx = job_context()
    receive, send = ctx.Pipe(duplex=False)
    stop = ctx.Event()
    proc = ctx.Process(target=_child_main, args=(send, target, kwargs, stop, stop_kw, threads, niceness), daemon=True,
                       name=f"playground-job-{target.rsplit(':', 1)[-1]}")
    proc.start()
    send.close()
    if stop_kw and stop_requested is not None:
        threading.Thread(target=_watch_stop, args=(stop_requested, stop, proc), daemon=True,
                         name="playground-job-stop").start()
    finished = False
    started = time.monotonic()
    asked_at: float | None = None  # when a graceful stop was asked for
    try:
        while True:
            if should_stop is not None and should_stop():
                raise JobCancelled("Stopped before it finished; nothing was kept.")
            now = time.monotonic()
            if asked_at is None and ((stop_requested is not None and stop_requested())
                                     or (max_s is not None and now - started > max_s)):
                if not stop_kw:
                    raise JobCancelled(f"Stopped after {now - started:.0f} s, this server's limit for one job.")
                stop.set()
                asked_at = now
            if asked_at is not None and now - asked_at > grace_s:
                _end(proc, wait_s=0.0)
                raise JobCancelled("The job did not stop within its grace period and was ended; what it saved before "
                                   "stays.")
            if not receive.poll(POLL_S):
                if proc.is_alive():
                    continue
                if not receive.poll(0):
                    raise _died(proc.exitcode)
            try:
                kind, payload = receive.recv()
            except EOFError:
                proc.join(KILL_WAIT_S)
                raise _died(proc.exitcode) from None
            if kind == "event":
                yield payload
            elif kind == "done":
                finished = True
                return payload
            elif kind == "user-error":
                finished = True
                raise _user_error(*payload)
            else:
                finished = True
                raise PlaygroundError(f"The job failed on the server ({payload.split(':', 1)[0]}); nothing of "
                                      "yours was lost. Try again, or with smaller settings.")
    finally:
        if not finished and stop_kw:
            # A graceful stop: the job saves and returns. gradio closes a stopped handler on its
            # event loop, so the wait for the save happens in a reaper thread, never here.
            stop.set()
            threading.Thread(target=_reap, args=(receive, proc, grace_s), daemon=True,
                             name="playground-job-reaper").start()
        else:
            _end(proc, wait_s=KILL_WAIT_S if finished else 0.0)
            receive.close()


def _reap(receive: Connection, proc: Any, grace_s: float) -> None:
    """Let a stopping child finish (up to `grace_s`), then end it and close the pipe."""
    try:
        _drain(receive, proc, grace_s)
        _end(proc)
    finally:
        receive.close()


def _drain(receive: Connection, proc: Any, grace_s: float) -> None:
    """Read (and drop) what the stopping child still sends, until it exits or `grace_s` passes."""
    deadline = time.monotonic() + grace_s
    while proc.is_alive() and time.monotonic() < deadline:
        try:
            if receive.poll(POLL_S):
                receive.recv()
        except (EOFError, OSError):
            break


def _end(proc: Any, wait_s: float = KILL_WAIT_S) -> None:
    """Reap the child: wait `wait_s` for it to exit, then SIGTERM, then SIGKILL."""
    proc.join(wait_s)
    if proc.is_alive():
        proc.terminate()
        proc.join(KILL_WAIT_S)
    if proc.is_alive():
        proc.kill()
        proc.join(KILL_WAIT_S)


def _died(exitcode: int | None) -> PlaygroundError:
    if exitcode is not None and exitcode < 0 and -exitcode == 9:
        return TooBigError("The job was killed by the operating system, most likely for running out of memory; "
                           "make it smaller (model, batch, data).")
    return PlaygroundError(f"The job's process ended unexpectedly (exit code {exitcode}); nothing of yours was "
                           "lost. Try again.")
