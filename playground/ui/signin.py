"""Sign in with Hugging Face on a Space (`hf_oauth: true`): a signed-in visitor's space follows them.

gradio injects a `gr.OAuthProfile` into a handler whose signature asks for one, read from the
session cookie gradio's OAuth routes set; the page-load handler turns it into the `user` state as
`hf:<username>`, which `AppContext.space_for` keys through `user_key` (a `u-…` space, never swept
as idle). A `gr.State` is the server's, so no client can claim a name. Without a login the state
holds the browser's random token (a temporary `b-…` space) as before.

The button appears only where the Space provides OAuth (OAUTH_CLIENT_ID is set with `hf_oauth`):
elsewhere gradio would mock the login with the machine's own Hugging Face token, and refuse to
start without one. It needs gradio's `oauth` extra (authlib, itsdangerous): `gradio[oauth]` in
the requirements.
"""
from __future__ import annotations

import os

import gradio as gr

from playground.spaces import IDLE_BROWSER_SPACE_S, TOKEN_PATTERN, new_browser_token

HF_PREFIX = "hf:"  # the user state of a signed-in visitor: "hf:<username>" (":" never occurs in a token)


def enabled() -> bool:
    """Whether this server offers "Sign in with Hugging Face": a Space (gradio's own test: SYSTEM is
    "spaces", so it adds the real OAuth routes, never its local mock) with hf_oauth (OAUTH_CLIENT_ID)."""
    return bool(os.environ.get("SYSTEM") == "spaces" and os.environ.get("SPACE_ID")
                and os.environ.get("OAUTH_CLIENT_ID"))


def identity(token: str | None, profile: gr.OAuthProfile | None) -> tuple[str, str]:
    """On page load: (browser token to keep in localStorage, user state). A signed-in visitor's
    state is their Hugging Face name; anyone else's is their browser's random token."""
    if not (isinstance(token, str) and TOKEN_PATTERN.match(token)):
        token = new_browser_token()
    name = getattr(profile, "username", None) if profile is not None else None
    return token, (HF_PREFIX + name if isinstance(name, str) and name else token)


def username_of(state: object) -> str | None:
    """The user name a user state stands for (`hf:<name>`), else None (a browser token)."""
    return state if isinstance(state, str) and state.startswith(HF_PREFIX) and len(state) > len(HF_PREFIX) else None


def space_note(signin: bool) -> str:
    """What the header says about how long an anonymous visitor's space lives."""
    days = IDLE_BROWSER_SPACE_S // 86400
    note = (f"Without a login your space belongs to this browser and is temporary (removed after {days} days "
            "unused, lost if the browser's storage is cleared)")
    return note + ("; sign in with Hugging Face to keep it." if signin else ".")


def login_button() -> gr.LoginButton | None:
    """The "Sign in with Hugging Face" button where the Space offers it."""
    return gr.LoginButton(size="sm", elem_id="hf-login") if enabled() else None


__all__ = ["HF_PREFIX", "enabled", "identity", "login_button", "space_note", "username_of"]
