"""Start the Transformer Playground app: parse flags, build settings, build the app, launch.

This file is also the Hugging Face Spaces entry point (`app_file: launch.py` in README.md):
with SPACE_ID set it binds 0.0.0.0 and turns on demo mode.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from playground.persistence import WORKSPACE_ENV, workspace_setting
from playground.settings import DEFAULT_WORKSPACE, DEVICE_CHOICES

EPILOG = """\
workshop use:
  python launch.py --host 0.0.0.0 --demo --auth-file users.txt --library ~/workshop
      serve the room: capped jobs, a login per participant, and the instructor's prepared
      tokenizers/checkpoints (DIR/tokenizers/<name>/, DIR/models/<name>/) read-only to everyone.
  users.txt holds one "user:password" per line ("#" comments and blank lines allowed); a
  password may be given as sha256:<hex>, the SHA-256 of the password:
      python -c "import hashlib; print('sha256:' + hashlib.sha256(b'secret').hexdigest())"
  After 5 wrong passwords for one user from one address within 5 minutes, that user is refused
  at that address for 5 minutes; more than 30 failed logins a minute from one address refuse
  that address for the minute; more than 100 a minute in all slow every login by a second
  (a guesser never locks anyone else out).

deep links (hand out an exercise as a URL):
  http://HOST:7860/?tab=train&preset=nanogpt-cpu-tiny&set=train.max_steps=300&set=model.n_layer=2
      tab: tokenizer, train, generate or analyze; preset: a name from presets/; set: a
      section.key=value of the preset (repeatable). Unknown or bad values are skipped with a notice.
"""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Transformer Playground: tokenizers, training, generation and attention analysis.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default=None, help="address to bind (default 127.0.0.1; 0.0.0.0 when SPACE_ID is set, as on Hugging Face Spaces)")
    parser.add_argument("--port", type=int, default=7860, help="port to serve on (default 7860)")
    parser.add_argument("--share", action="store_true", help="also create a public gradio.live link; offline, a one-line notice and local serving")
    parser.add_argument("--auth", action="append", default=[], metavar="USER:PASS", help="require a login; repeat for several users (PASS may be sha256:<hex>)")
    parser.add_argument("--auth-file", action="append", default=[], metavar="FILE", help="require a login: one user:password per line (see below)")
    parser.add_argument("--library", action="append", default=[], metavar="DIR", help="an instructor's folder of prepared tokenizers/ and models/, read-only to users; repeatable")
    parser.add_argument("--device", choices=DEVICE_CHOICES, default="auto", help="where models run: auto picks cuda, then mps, then cpu")
    parser.add_argument("--workspace", default=None, help=f"folder for tokenizers and models (default ${WORKSPACE_ENV}, "
                        f"else {DEFAULT_WORKSPACE}); on a Space, a mounted Storage Bucket keeps work across restarts")
    parser.add_argument("--demo", action="store_true", help="conservative caps for public servers (also on when SPACE_ID is set)")
    parser.add_argument("--analytics", action="store_true", help="let gradio send its usage analytics (off by default: "
                        "nothing is sent home)")
    return parser.parse_args(argv)


def parse_auth(items: list[str]) -> list[tuple[str, str]] | None:
    """`["alice:pw"]` -> `[("alice", "pw")]`; exits with a message on a malformed item."""
    from playground.auth import AuthConfigError, parse_credential

    pairs = []
    for i, item in enumerate(items, 1):
        try:
            pairs.append(parse_credential(item, f"--auth (#{i})"))
        except AuthConfigError as exc:
            sys.exit(str(exc))
    return pairs or None


def build_auth(auth: list[str], auth_files: list[str]):
    """The rate-limited login check for gradio, or None when no login is asked for; exits on bad input."""
    from playground.auth import (
        AuthConfigError,
        LoginGuard,
        merge_credentials,
        read_auth_file,
    )

    try:
        sources = [parse_auth(auth) or []] + [read_auth_file(path) for path in auth_files]
        credentials = merge_credentials(*sources)
    except AuthConfigError as exc:
        sys.exit(str(exc))
    return LoginGuard(credentials) if credentials else None


def check_libraries(folders: list[str]) -> list[Path]:
    """The --library folders as paths; exits naming the first one that is not a folder."""
    out = []
    for folder in folders:
        path = Path(folder).expanduser()
        if not path.is_dir():
            sys.exit(f"--library {folder}: no such folder (expected one with tokenizers/ and/or models/ in it)")
        if not (path / "tokenizers").is_dir() and not (path / "models").is_dir():
            print(f"Note: --library {folder} has neither tokenizers/ nor models/; nothing will show from it.", file=sys.stderr)
        out.append(path)
    return out


def _max_file_size(settings) -> int | None:
    """The upload cap in bytes (gradio refuses bigger uploads before they reach a handler)."""
    mb = settings.caps.max_upload_mb
    return int(mb * 1024 * 1024) if mb else None


def main(argv: list[str] | None = None) -> None:
    # Before torch loads: idle OpenMP threads sleep instead of spinning, so trainings (each in its
    # own process) and generations sharing a few cores do not burn them waiting on each other.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    # gradio switches matplotlib to "agg" around every event; with the backend left to be
    # guessed, the first event of a server imports pyplot to guess it (0.6 s for the first click).
    # A server never opens a window: say "agg" up front.
    os.environ.setdefault("MPLBACKEND", "agg")
    args = parse_args(argv)
    # Before gradio is imported (it reads these once): no usage analytics, no hub telemetry,
    # unless --analytics asks for them.
    os.environ["GRADIO_ANALYTICS_ENABLED"] = "True" if args.analytics else "False"
    if not args.analytics:
        os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
    from playground.errors import PlaygroundError
    from playground.settings import make_settings, on_zerogpu

    if on_zerogpu():  # a GPU exists only inside a decorated call: generation runs per request there, unbatched
        os.environ.setdefault("PLAYGROUND_GENERATE_BATCHING", "0")
        from playground.zerogpu import spaces_module

        spaces_module()  # `spaces` before anything could initialise CUDA (it refuses to start after)

    on_spaces = bool(os.environ.get("SPACE_ID"))
    host = args.host or ("0.0.0.0" if on_spaces else "127.0.0.1")
    auth = build_auth(args.auth, args.auth_file)
    library = check_libraries(args.library)
    try:
        settings = make_settings(workspace_setting(args.workspace), args.device, args.demo, library=library, app=True,
                                 analytics=args.analytics)
        _ = settings.resolved_device  # fail early on an unavailable --device
    except PlaygroundError as exc:
        sys.exit(str(exc))
    from playground.ui.app import build_app, prepare_server

    try:
        prepare_server(settings)
    except PlaygroundError as exc:  # e.g. a workspace this server may not write to
        sys.exit(str(exc))
    app = build_app(settings)
    # gradio awaits an async auth callable: a flood of failed logins slows logins without blocking the server.
    serve(app, host, args.port, args.share, auth.login if auth is not None else None, _max_file_size(settings))


def serve(app, host: str, port: int, share: bool, auth, max_file_size: int | None) -> None:
    """Launch and block. A share link that cannot be made (offline) costs one line, not the server."""
    import contextlib
    import io

    # Here, not at the top: --help does not pay for them (build_app has imported launch_options already).
    from playground.gc_pauses import freeze_startup_heap
    from playground.ui.app import launch_options

    captured = io.StringIO()
    with contextlib.redirect_stdout(captured) if share else contextlib.nullcontext():
        app.launch(server_name=host, server_port=port, share=share, auth=auth, max_file_size=max_file_size,
                   prevent_thread_lock=True, **launch_options())
    if share:
        for line in captured.getvalue().splitlines():
            if line.startswith("* Running on"):
                print(line)
        if app.share_url is None:
            print(f"No public share link could be made (offline?); serving locally at {app.local_url}", flush=True)
    freeze_startup_heap()  # what start-up built lives as long as the server: no collection walks it again
    app.block_thread()


if __name__ == "__main__":
    main()
