"""Build a BPE tokenizer in a child process, so Stop can end it at any moment.

`tokenizers` learns merges in one Rust call that cannot be interrupted from Python; in a child
process it can: closing the generator (a UI's Stop), setting `cancel`, or any error in the caller
ends the child at once. The child runs through `playground.child.iter_in_child` (the "spawn"
context, a lower CPU priority) and sends back progress and, at the end, the tokenizer as its JSON
string (never a pickled tokenizer or a file).

    gen = iter_build_in_child(text, options, caps)   # same events and result as bpe.iter_build
"""
from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Generator
from typing import Any

from tokenizers import Tokenizer

from playground.child import JobCancelled, iter_in_child
from playground.settings import DemoCaps
from playground.tokenization.bpe import BuildCancelled, BuildProgress, TokenizerOptions, check_build_cost, check_corpus, iter_build

BUILD_TARGET = "playground.tokenization.build_process:iter_build_json"


def iter_build_json(text: str, options: TokenizerOptions, caps: DemoCaps | None) -> Generator[BuildProgress, None, str]:
    """`bpe.iter_build` returning the tokenizer as its JSON string (what the child sends back)."""
    tokenizer = yield from iter_build(text, options, caps)
    return tokenizer.to_str()


def iter_build_in_child(text: str, options: TokenizerOptions, caps: DemoCaps | None = None,
                        cancel: threading.Event | None = None) -> Generator[BuildProgress, None, Tokenizer]:
    """Like `bpe.iter_build` (same progress events and result), with the work in a child process.

    The sizes are checked here first, so an oversized build never starts. Closing the generator or
    setting `cancel` ends the child within a fraction of a second.
    """
    options = options.checked(caps)
    check_corpus(text)
    check_build_cost(text, options, caps)
    start = time.perf_counter()
    yield BuildProgress("checking", f"Starting the build on {len(text):,} characters", 0.0, 0.0)
    relay = iter_in_child(BUILD_TARGET, dict(text=text, options=options, caps=caps), stop_kw=None,
                          should_stop=cancel.is_set if cancel is not None else None)
    try:
        while True:
            try:
                event = next(relay)
            except StopIteration as done:
                return Tokenizer.from_str(done.value)
            yield dataclasses.replace(event, elapsed=time.perf_counter() - start)
    except JobCancelled:
        raise BuildCancelled("The build was stopped before it finished; nothing was kept.") from None
    finally:
        relay.close()


def run_build_in_child(text: str, options: TokenizerOptions, caps: DemoCaps | None = None, **kwargs: Any) -> Tokenizer:
    """Blocking `iter_build_in_child`."""
    gen = iter_build_in_child(text, options, caps, **kwargs)
    while True:
        try:
            next(gen)
        except StopIteration as stop:
            return stop.value
