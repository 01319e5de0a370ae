"""Start the Transformer Playground app: parse flags, build settings, build the app, launch."""
from __future__ import annotations

import argparse
import os
import sys

from playground.settings import DEFAULT_WORKSPACE, DEVICE_CHOICES


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Transformer Playground: tokenizers, training, generation and attention analysis.")
    parser.add_argument("--host", default=None, help="address to bind (default 127.0.0.1; 0.0.0.0 when SPACE_ID is set, as on Hugging Face Spaces)")
    parser.add_argument("--port", type=int, default=7860, help="port to serve on (default 7860)")
    parser.add_argument("--share", action="store_true", help="also create a public gradio.live link; offline, a one-line notice and local serving")
    parser.add_argument("--auth", action="append", default=[], metavar="USER:PASS", help="require a login; repeat for several users")
    parser.add_argument("--device", choices=DEVICE_CHOICES, default="auto", help="where models run: auto picks cuda, then mps, then cpu")
    parser.add_argument("--workspace", default=None, help=f"folder for tokenizers and models (default {DEFAULT_WORKSPACE})")
    parser.add_argument("--demo", action="store_true", help="conservative caps for public servers (also on when SPACE_ID is set)")
    return parser.parse_args(argv)


def parse_auth(items: list[str]) -> list[tuple[str, str]] | None:
    """`["alice:pw"]` -> `[("alice", "pw")]`; exits with a message on a malformed item."""
    pairs = []
    for item in items:
        user, sep, password = item.partition(":")
        if not sep or not user or not password:
            sys.exit(f"--auth expects USER:PASS, got {item!r}")
        pairs.append((user, password))
    return pairs or None


def _max_file_size(settings) -> int | None:
    """The upload cap in bytes (gradio refuses bigger uploads before they reach a handler)."""
    mb = settings.caps.max_upload_mb
    return int(mb * 1024 * 1024) if mb else None


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    from playground.errors import PlaygroundError
    from playground.settings import make_settings
    from playground.ui.app import build_app

    on_spaces = bool(os.environ.get("SPACE_ID"))
    host = args.host or ("0.0.0.0" if on_spaces else "127.0.0.1")
    try:
        settings = make_settings(args.workspace, args.device, args.demo)
        settings.resolved_device  # fail early on an unavailable --device
    except PlaygroundError as exc:
        sys.exit(str(exc))
    app = build_app(settings)
    auth = parse_auth(args.auth)
    serve(app, host, args.port, args.share, auth, _max_file_size(settings))


def serve(app, host: str, port: int, share: bool, auth, max_file_size: int | None) -> None:
    """Launch and block. A share link that cannot be made (offline) costs one line, not the server."""
    import contextlib
    import io

    captured = io.StringIO()
    with contextlib.redirect_stdout(captured) if share else contextlib.nullcontext():
        app.launch(server_name=host, server_port=port, share=share, auth=auth,
                   max_file_size=max_file_size, prevent_thread_lock=True)
    if share:
        for line in captured.getvalue().splitlines():
            if line.startswith("* Running on"):
                print(line)
        if app.share_url is None:
            print(f"No public share link could be made (offline?); serving locally at {app.local_url}", flush=True)
    app.block_thread()


if __name__ == "__main__":
    main()
