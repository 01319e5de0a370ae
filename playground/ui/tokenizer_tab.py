"""Tokenizer tab: build a BPE (or character) tokenizer on a corpus, look inside it, compare, save.

Layout and wiring only: every computation is a function in `playground.tokenization` /
`playground.data.corpora`. Per-session state (`gr.State`) is a small dict of identifiers:
``{"scratch": temp folder, "draft": bool, "name": saved name or None}``; an unsaved tokenizer
lives as files in ``<scratch>/draft/`` and the scratch folder is removed when the session ends.
"""
from __future__ import annotations

import contextlib
import functools
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr
import pandas as pd

from playground.charts.tokenizer import (
    comparison_chart,
    compression_chart,
    token_length_chart,
)
from playground.data.corpora import (
    CORPORA,
    Corpus,
    corpus_from_files,
    corpus_from_text,
    load_corpus,
)
from playground.data.policy import check_upload
from playground.errors import DataError
from playground.limits import check_text
from playground.settings import DemoCaps
from playground.tokenization import store
from playground.tokenization.bpe import (
    DEFAULT_SPECIALS,
    MAX_VOCAB_SIZE,
    SPECIAL_CHOICES,
    BuildCancelled,
    BuildProgress,
    TokenizerOptions,
)
from playground.tokenization.stats import (
    compare,
    encode,
    ids_table,
    iter_vocab_sweep,
    tokens_html,
)
from playground.tokenization.vocab import (
    TokenizerInfo,
    merges_table,
    readable,
    token_length_table,
    vocabulary_table,
)
from playground.tokenization.walk import walk, walk_table
from playground.ui.components import Chart, Slider
from playground.ui.context import AppContext, choices_update, text_hint, user_errors
from playground.ui.tables import Table
from playground.ui.updates import Updates
from playground.workspace import Workspace

SOURCE_CHOICES = [
    ("Python help topics (built in)", "python-docs"),
    ("Python stdlib source (built in)", "python-code"),
    ("Tiny Shakespeare (built in)", "tinyshakespeare"),
    ("Upload .txt files", "upload"),
    ("Paste text", "paste"),
]
PRE_TOKENIZER_CHOICES = [
    ("byte-level (GPT-2)", "byte-level"),
    ("whitespace + punctuation (</w> word ends)", "whitespace"),
    ("Metaspace ▁ (SentencePiece)", "metaspace"),
    ("none (lines; merges cross spaces)", "none"),
]
NORMALIZER_CHOICES = [("none", "none"), ("NFC", "nfc"), ("NFKC", "nfkc"), ("lowercase", "lowercase")]
FALLBACK_CHOICES = [("byte fallback <0xNN>", "bytes"), ("<unk> token", "unk")]
SAMPLE_TEXT = "The quick brown fox can't stop — naïve café!\ndef tokenize(text):\n    return text.split()  # 日本語 🙂"
MAX_TABLE_ROWS = 1000  # rows sent to the browser (filters and the CSVs reach all); every event re-reads them there
INTRO = (
    "Build a **BPE** tokenizer: it starts from bytes (or characters) and repeatedly merges the most frequent "
    "adjacent pair into a new token. Pick a corpus and options, build, then look inside: the vocabulary, "
    "the merges in the order they were learned, how a text is cut into tokens, and the merge-by-merge walk "
    "of one word. Save it to use it in **Train**."
)


# -- state helpers ------------------------------------------------------------------------------

def _remove_scratch(state: Any) -> None:
    """gr.State delete_callback: drop the session's temp folder."""
    if isinstance(state, dict) and state.get("scratch"):
        shutil.rmtree(state["scratch"], ignore_errors=True)


def _scratch(state: dict | None, workspace: Workspace) -> Path:
    if state and state.get("scratch") and Path(state["scratch"]).is_dir():
        return Path(state["scratch"])
    return workspace.scratch_dir("playground-tok-")


def current_tokenizer(workspace: Workspace, state: dict | None) -> store.LoadedTokenizer:
    """The tokenizer this session is looking at: an unsaved draft or a saved one."""
    if not state or not (state.get("draft") or state.get("name")):
        raise DataError("Build a tokenizer or load a saved one first.")
    if state.get("draft"):
        return store.read_folder(Path(state["scratch"]) / "draft", state.get("name"))
    return store.load(workspace, state["name"])


def corpus_from_widgets(workspace: Workspace, caps: DemoCaps, source: str, files: Any, paste: str | None) -> Corpus:
    """The corpus the widgets describe."""
    if source == "upload":
        paths = [f if isinstance(f, str) else getattr(f, "name", f) for f in (files or [])]
        if not paths:
            raise DataError("Upload one or more UTF-8 .txt files first (or pick another corpus).")
        return corpus_from_files([check_upload(p) for p in paths], caps)  # plain files only, no symlinks
    if source == "paste":
        return corpus_from_text(paste, caps)
    if source in CORPORA:
        return load_corpus(source, workspace, caps)
    raise DataError(f"Unknown corpus {source!r}.")


def options_from_widgets(kind: str, vocab_size: float | None, min_frequency: float | None, normalizer: str,
                         pre_tokenizer: str, specials: list[str] | None, fallback: str) -> TokenizerOptions:
    """TokenizerOptions from widget values (numbers arrive as floats)."""
    def whole(value: float | None, what: str) -> int:
        if value is None or float(value) != int(value):
            raise DataError(f"{what} must be a whole number.")
        return int(value)

    ordered = tuple(s for s in SPECIAL_CHOICES if s in (specials or []))
    return TokenizerOptions(kind=kind or "bpe", vocab_size=whole(vocab_size, "Vocabulary size"),
                            min_frequency=whole(min_frequency, "Minimum frequency"), normalizer=normalizer or "none",
                            pre_tokenizer=pre_tokenizer or "byte-level", special_tokens=ordered,
                            fallback=fallback or "bytes")


def _progress_markdown(event: BuildProgress) -> str:
    bar = ""
    if event.fraction is not None:
        filled = round(20 * event.fraction)
        bar = f" `{'█' * filled}{'░' * (20 - filled)}` {100 * event.fraction:.0f}%"
    return f"{event.message}{bar}"


# -- handlers ----------------------------------------------------------------------------------

@user_errors
def build_handler(workspace: Workspace, caps: DemoCaps, source: str, files: Any, paste: str | None, kind: str,
                  vocab_size: float, min_frequency: float, normalizer: str, pre_tokenizer: str,
                  specials: list[str] | None, fallback: str, state: dict | None,
                  progress=gr.Progress()):  # noqa: B008 - gradio finds its tracker by this default
    """Build on the chosen corpus, streaming progress; yields (status markdown, state)."""
    options = options_from_widgets(kind, vocab_size, min_frequency, normalizer, pre_tokenizer, specials, fallback)
    options = options.checked(caps)
    yield "Loading the corpus…", state
    corpus = corpus_from_widgets(workspace, caps, source, files, paste)
    gen = store.iter_train(corpus, options, caps, in_child=True)  # Stop closes gen: the child is terminated
    try:
        while True:
            try:
                event = next(gen)
            except StopIteration as stop:
                built: store.BuiltTokenizer = stop.value
                break
            progress(event.fraction, desc=event.message)
            yield _progress_markdown(event), state
    except BuildCancelled as exc:
        raise DataError(str(exc)) from None
    finally:
        gen.close()
    scratch = _scratch(state, workspace)
    draft = scratch / "draft"
    shutil.rmtree(draft, ignore_errors=True)
    store.write_folder(draft, built)
    new_state = {"scratch": str(scratch), "draft": True, "name": None}
    comp = built.compression
    status = (f"Built {built.options.describe()} on {corpus.description} in {built.seconds:.1f} s: "
              f"vocabulary {built.tokenizer.get_vocab_size():,}, {comp.chars_per_token:.2f} characters/token "
              f"on {'held-out' if built.held_out else 'training'} text. Not saved yet.")
    yield status, new_state


@dataclass(frozen=True)
class TokenizerViews(Updates):
    """Everything shown about the current tokenizer."""

    summary: Any
    vocab: Any  # vocabulary table (first MAX_TABLE_ROWS rows)
    merges: Any  # merges table, in learned order
    lengths_plot: Any  # token lengths chart
    lengths_csv: Any  # downloads: token lengths, vocabulary, merges, tokenizer.json
    vocab_csv: Any
    merges_csv: Any
    tokenizer_json: Any


@user_errors
def show_handler(workspace: Workspace, state: dict | None) -> TokenizerViews:
    """Everything shown about the current tokenizer: summary, tables, length chart, downloads."""
    loaded = current_tokenizer(workspace, state)
    info = TokenizerInfo.from_tokenizer(loaded.tokenizer)
    vocab = vocabulary_table(loaded.tokenizer, loaded.counts, info=info)
    merges = merges_table(loaded.tokenizer, info=info)
    lengths = token_length_table(vocab)
    export = _scratch(state, workspace) / "export"
    export.mkdir(parents=True, exist_ok=True)
    vocab_csv, merges_csv, lengths_csv = export / "vocabulary.csv", export / "merges.csv", export / "token_lengths.csv"
    vocab.to_csv(vocab_csv, index=False)
    merges.to_csv(merges_csv, index=False)
    lengths.to_csv(lengths_csv, index=False)
    tok_json = export / "tokenizer.json"
    shutil.copyfile(loaded.folder / "tokenizer.json", tok_json)
    summary = _summary(loaded)
    return TokenizerViews(summary, vocab.head(MAX_TABLE_ROWS), merges.head(MAX_TABLE_ROWS), token_length_chart(lengths),
                          str(lengths_csv), str(vocab_csv), str(merges_csv), str(tok_json))


def _summary(loaded: store.LoadedTokenizer) -> str:
    summary = store.summary_markdown(loaded)
    if loaded.tokenizer.get_vocab_size() > MAX_TABLE_ROWS:
        summary += f"  \nTables show the first {MAX_TABLE_ROWS:,} rows; filter or download the CSV for all."
    return summary


@user_errors
def summary_handler(workspace: Workspace, state: dict | None) -> str:
    """The summary of the current tokenizer alone (after a Save: its name changed, its tables did not)."""
    return _summary(current_tokenizer(workspace, state))


@user_errors
def vocab_filter_handler(workspace: Workspace, state: dict | None, query: str | None) -> pd.DataFrame:
    """Vocabulary rows whose token contains `query`."""
    loaded = current_tokenizer(workspace, state)
    return vocabulary_table(loaded.tokenizer, loaded.counts, query or "", limit=MAX_TABLE_ROWS)


@user_errors
def merges_filter_handler(workspace: Workspace, state: dict | None, query: str | None) -> pd.DataFrame:
    """Merges (in learned order) where the left, right or merged token contains `query`."""
    loaded = current_tokenizer(workspace, state)
    return merges_table(loaded.tokenizer, query or "", limit=MAX_TABLE_ROWS)


@user_errors
def encode_handler(workspace: Workspace, state: dict | None, text: str | None, caps: DemoCaps | None = None):
    """Text -> coloured token spans (HTML), a stats line, and the ids table."""
    loaded = current_tokenizer(workspace, state)
    if not text:
        raise DataError("Type some text to encode.")
    info = TokenizerInfo.from_tokenizer(loaded.tokenizer)
    enc = encode(loaded.tokenizer, text, caps)
    words = len(text.split())
    stats = (f"**{enc.n_tokens}** tokens for {len(text):,} characters: **{enc.chars_per_token:.2f}** characters/token"
             + (f", {enc.n_tokens / words:.2f} tokens/word" if words else "")
             + f". Decodes back to the same text: "
               f"**{'yes' if loaded.tokenizer.decode(enc.ids, skip_special_tokens=False) == text else 'no'}**.")
    return tokens_html(enc, info), stats, ids_table(enc, info)


@user_errors
def walk_handler(workspace: Workspace, state: dict | None, text: str | None):
    """A word or line -> the merges BPE applies, lowest rank first, one row per merge."""
    loaded = current_tokenizer(workspace, state)
    info = TokenizerInfo.from_tokenizer(loaded.tokenizer)
    result = walk(loaded.tokenizer, text or "", info)
    final = " ".join(f"`{readable(t, info)}`" for t in result.tokens)
    if result.model_type != "BPE":
        head = "A character-level tokenizer has no merges: each character is a token."
    else:
        head = (f"**{result.n_merges}** merges fired in {len(result.words)} word(s). At each step the adjacent pair "
                "with the lowest rank (learned earliest) is merged.")
    same = result.tokens == loaded.tokenizer.encode(text, add_special_tokens=False).tokens
    return f"{head}  \nTokens: {final}  \nSame as `encode`: **{'yes' if same else 'no'}**", walk_table(result, loaded.tokenizer, info)


@user_errors
def sweep_handler(workspace: Workspace, caps: DemoCaps, source: str, files: Any, paste: str | None, kind: str,
                  min_frequency: float, normalizer: str, pre_tokenizer: str, specials: list[str] | None,
                  fallback: str, largest: float, state: dict | None,
                  progress=gr.Progress()):  # noqa: B008 - gradio finds its tracker by this default
    """Compression on held-out text for vocabulary sizes up to `largest` (one training run); yields (status, plot, csv)."""
    options = options_from_widgets(kind, largest, min_frequency, normalizer, pre_tokenizer, specials, fallback)
    corpus = corpus_from_widgets(workspace, caps, source, files, paste)
    gen = iter_vocab_sweep(corpus.text, options, int(largest), caps, in_child=True)  # Stop ends the child
    try:
        while True:
            try:
                event = next(gen)
            except StopIteration as stop:
                table: pd.DataFrame = stop.value
                break
            progress(event.fraction, desc=event.message)
            yield _progress_markdown(event), gr.update(), gr.update()
    except BuildCancelled as exc:
        raise DataError(str(exc)) from None
    finally:
        gen.close()
    current = None
    try:
        current = current_tokenizer(workspace, state).tokenizer.get_vocab_size()
    except DataError:
        pass
    export = _scratch(state, workspace) / "export"
    export.mkdir(parents=True, exist_ok=True)
    csv = export / "vocab_sweep.csv"
    table.to_csv(csv, index=False)
    yield (f"Swept {len(table)} vocabulary sizes on {corpus.description}; measured on held-out text.",
           compression_chart(table, current), str(csv))


@user_errors
def compare_handler(workspace: Workspace, name_a: str | None, name_b: str | None, text: str | None,
                    caps: DemoCaps | None = None):
    """Two saved tokenizers on the same text: summary, chart, words split differently, both span views."""
    if not name_a or not name_b:
        raise DataError("Pick two saved tokenizers to compare (build one above and Save it to have a second).")
    if name_a == name_b:
        raise DataError(f"A and B are both {name_a!r}: pick two different tokenizers to compare.")
    check_text(text or "", "max_encode_chars", caps, "The text to compare")
    a, b = store.load(workspace, name_a), store.load(workspace, name_b)
    result = compare(a.tokenizer, b.tokenizer, text or "", (name_a, name_b))
    info_a, info_b = TokenizerInfo.from_tokenizer(a.tokenizer), TokenizerInfo.from_tokenizer(b.tokenizer)
    return (result.summary, comparison_chart(result.summary), result.differences,
            tokens_html(result.encoded[0], info_a), tokens_html(result.encoded[1], info_b))


@user_errors
def save_handler(workspace: Workspace, state: dict | None, name: str | None, overwrite: bool, version: int):
    """Save the current tokenizer under `name`; returns (status, state, workspace version + 1)."""
    loaded = current_tokenizer(workspace, state)
    path = store.save_folder(workspace, name or "", loaded.folder, overwrite=bool(overwrite))
    new_state = {"scratch": str(_scratch(state, workspace)), "draft": False, "name": path.name}
    return f"Saved as **{path.name}**; it is now listed in Train.", new_state, (version or 0) + 1


@user_errors
def load_handler(workspace: Workspace, name: str | None, state: dict | None) -> dict:
    """Make a saved tokenizer the current one."""
    if not name:
        raise DataError("Pick a saved tokenizer to load.")
    workspace.get("tokenizers", name)  # NotFoundError listing what there is
    return {"scratch": str(_scratch(state, workspace)), "draft": False, "name": name}


def refresh_saved(workspace: Workspace, current: str | None, a: str | None, b: str | None):
    """Saved tokenizer choices for the load and compare dropdowns (keeping current values)."""
    names = workspace.names("tokenizers")
    first = a if a in names else (names[0] if names else None)
    # B starts on another tokenizer than A; with one saved there is none to compare with yet.
    second = b if b in names and b != first else next((n for n in names if n != first), None)
    return choices_update(names, current), choices_update(names, a), gr.update(choices=names, value=second)


def _source_visibility(source: str):
    return gr.update(visible=source == "upload"), gr.update(visible=source == "paste")


def _kind_interactive(kind: str):
    bpe = kind == "bpe"
    return (gr.update(interactive=bpe),) * 5


# -- layout ------------------------------------------------------------------------------------

def one_build_per_user(ctx: AppContext, handler: Any) -> Any:
    """`handler` (a generator) run under the user's claim on the build lane: one build or sweep
    per user at a time, so nobody queues many builds ahead of everyone else."""
    def run(workspace: Any, *args: Any):
        key = getattr(workspace, "key", None)
        claim = ctx.jobs.claim(key, "build", "tokenizer build", 1, "tokenizer build") if key else contextlib.nullcontext()
        with claim:
            yield from handler(workspace, *args)

    run.__name__ = handler.__name__
    return run


def build(ctx: AppContext) -> None:
    """Lay out the Tokenizer tab."""
    caps, U = ctx.settings.caps, ctx.per_user
    max_vocab = min(caps.max_vocab_size or MAX_VOCAB_SIZE, MAX_VOCAB_SIZE)
    state = gr.State(None, time_to_live=12 * 3600, delete_callback=_remove_scratch)

    gr.Markdown(INTRO)
    with gr.Row(equal_height=False):
        with gr.Column(scale=1, min_width=320):
            # Compact enough that Build sits inside a laptop's window (1366x768) without scrolling.
            source = gr.Dropdown(SOURCE_CHOICES, value="python-docs", label="1 · Corpus: the text to learn from",
                                 elem_id="tok-source")
            files = gr.File(file_count="multiple", file_types=[".txt"], label="UTF-8 .txt files", visible=False,
                            elem_id="tok-files")
            paste = gr.Textbox(lines=6, label="Text", visible=False, elem_id="tok-paste",
                               placeholder="Paste a few paragraphs (or more) here.")
            kind = gr.Radio([("BPE", "bpe"), ("characters", "char")], value="bpe", label="2 · Tokenizer",
                            elem_id="tok-kind")
            vocab_size = Slider(32, max_vocab, value=min(8192, max_vocab), step=1, label="Vocabulary size",
                                   info="includes special tokens and the base alphabet (256 bytes for byte-level)",
                                   elem_id="tok-vocab-size")
            with gr.Row():
                build_btn = gr.Button("Build tokenizer", variant="primary", elem_id="tok-build")
                stop_btn = gr.Button("Stop", variant="stop", elem_id="tok-stop")
            status = gr.Markdown(elem_id="tok-status")
            with gr.Accordion("More options", open=False):
                pre_tokenizer = gr.Dropdown(PRE_TOKENIZER_CHOICES, value="byte-level", label="Pre-tokenizer",
                                            elem_id="tok-pre")
                normalizer = gr.Dropdown(NORMALIZER_CHOICES, value="none", label="Normalizer", elem_id="tok-norm")
                min_frequency = gr.Number(2, precision=0, minimum=1, label="Minimum pair frequency to merge",
                                          elem_id="tok-min-freq")
                specials = gr.CheckboxGroup(list(SPECIAL_CHOICES), value=list(DEFAULT_SPECIALS), label="Special tokens",
                                            info="<bos>/<eos> for seq2seq; ids follow this order", elem_id="tok-specials")
                fallback = gr.Radio(FALLBACK_CHOICES, value="bytes", label="Unseen characters (not byte-level)",
                                    elem_id="tok-fallback")

        with gr.Column(scale=2):
            summary = gr.Markdown("Build a tokenizer or load a saved one to look inside it.", elem_id="tok-summary")
            with gr.Row(equal_height=True):
                saved = gr.Dropdown(label="Saved tokenizers", choices=[], interactive=True, elem_id="tokenizer-saved",
                                    scale=3)
                load_btn = gr.Button("Load", elem_id="tok-load", scale=1)
            with gr.Row(equal_height=True):
                name = gr.Textbox(label="Save as", placeholder="letters, digits, - _ .", elem_id="tok-name", scale=3)
                overwrite = gr.Checkbox(False, label="Overwrite", elem_id="tok-overwrite", scale=1)
                save_btn = gr.Button("Save", variant="primary", elem_id="tok-save", scale=1)
                download = gr.DownloadButton("tokenizer.json", value=None, elem_id="tok-download", scale=1)
            save_status = gr.Markdown(elem_id="tok-save-status")

            with gr.Tabs():
                with gr.Tab("Encode", id="tok-encode"):
                    enc_text = gr.Textbox(SAMPLE_TEXT, lines=4, label="Text", elem_id="tok-encode-text",
                                          info=text_hint(ctx, "max_encode_chars"))
                    enc_btn = gr.Button("Encode", elem_id="tok-encode-btn")
                    enc_html = gr.HTML(elem_id="tok-encode-html")
                    enc_stats = gr.Markdown()
                    enc_ids = Table(pd.DataFrame(columns=["position", "id", "token", "text"]), label="Tokens and ids",
                                           interactive=False, max_height=320)
                with gr.Tab("Merge walk", id="tok-walk"):
                    walk_text = gr.Textbox(" tokenization", label="A word or a line", elem_id="tok-walk-text",
                                           info=text_hint(ctx, "max_walk_chars"))
                    walk_btn = gr.Button("Walk through the merges", elem_id="tok-walk-btn")
                    walk_md = gr.Markdown()
                    walk_df = Table(pd.DataFrame(columns=["word", "text", "step", "rank", "merge", "symbols"]),
                                           label="Merges in the order they fire", interactive=False, max_height=420,
                                           column_widths=["8%", "16%", "7%", "9%", "25%", "35%"], wrap=True)
                with gr.Tab("Vocabulary", id="tok-vocab"):
                    with gr.Row(equal_height=True):
                        vocab_query = gr.Textbox(label="Find tokens containing", scale=4, elem_id="tok-vocab-query")
                        vocab_csv = gr.DownloadButton("CSV", value=None, scale=1)
                    vocab_df = Table(interactive=False, max_height=420, elem_id="tok-vocab-table",
                                            column_widths=["8%", "24%", "20%", "9%", "14%", "12%", "13%"])
                with gr.Tab("Merges", id="tok-merges"):
                    with gr.Row(equal_height=True):
                        merges_query = gr.Textbox(label="Find merges containing", scale=4, elem_id="tok-merges-query")
                        merges_csv = gr.DownloadButton("CSV", value=None, scale=1)
                    merges_df = Table(interactive=False, max_height=420, elem_id="tok-merges-table",
                                             column_widths=["12%", "22%", "22%", "30%", "14%"])
                with gr.Tab("Charts", id="tok-charts"):
                    length_plot = Chart(label="Token lengths")
                    lengths_csv = gr.DownloadButton("Token lengths CSV", value=None)
                    gr.Markdown("**Vocabulary sweep**: one training run at the largest size gives every smaller "
                                "vocabulary (BPE's merges are a prefix of a bigger run's), measured on held-out text "
                                "of the corpus and options on the left.")
                    with gr.Row(equal_height=True):
                        largest = Slider(256, max_vocab, value=min(32768, max_vocab), step=1,
                                            label="Largest vocabulary", scale=3)
                        sweep_btn = gr.Button("Run sweep", scale=1, elem_id="tok-sweep")
                    sweep_status = gr.Markdown()
                    sweep_plot = Chart(label="Compression vs vocabulary size")
                    sweep_csv = gr.DownloadButton("Sweep CSV", value=None)
                with gr.Tab("Compare", id="tok-compare"):
                    with gr.Row():
                        cmp_a = gr.Dropdown(label="Tokenizer A", choices=[], interactive=True, elem_id="tok-cmp-a")
                        cmp_b = gr.Dropdown(label="Tokenizer B", choices=[], interactive=True, elem_id="tok-cmp-b")
                    cmp_text = gr.Textbox(SAMPLE_TEXT, lines=4, label="Text", elem_id="tok-cmp-text")
                    cmp_btn = gr.Button("Compare", elem_id="tok-cmp-btn")
                    cmp_summary = Table(interactive=False)
                    cmp_plot = Chart(label="Token counts")
                    cmp_diff = Table(label="Words split differently", interactive=False, max_height=360)
                    with gr.Row():
                        cmp_html_a = gr.HTML()
                        cmp_html_b = gr.HTML()

    # -- wiring --------------------------------------------------------------------------------
    private = {"api_visibility": "undocumented"}
    source.change(_source_visibility, source, [files, paste], api_name="tokenizer_source", queue=False, **private)
    kind.change(_kind_interactive, kind, [vocab_size, pre_tokenizer, normalizer, min_frequency, fallback],
                api_name="tokenizer_kind", queue=False, **private)

    show_outputs = TokenizerViews.wire(summary=summary, vocab=vocab_df, merges=merges_df, lengths_plot=length_plot,
                                       lengths_csv=lengths_csv, vocab_csv=vocab_csv, merges_csv=merges_csv,
                                       tokenizer_json=download)
    option_inputs = [kind, vocab_size, min_frequency, normalizer, pre_tokenizer, specials, fallback]
    build_event = build_btn.click(ctx.notice("Build"), None, [status], queue=False, show_progress="hidden").then(
        U(one_build_per_user(ctx, build_handler), caps), [ctx.user, source, files, paste, *option_inputs, state], [status, state],
        api_name="tokenizer_build", **ctx.heavy())
    build_event.success(U(show_handler), [ctx.user, state], show_outputs, api_name="tokenizer_show")

    load_btn.click(U(load_handler), [ctx.user, saved, state], [state], api_name="tokenizer_load").success(
        U(show_handler), [ctx.user, state], show_outputs, api_name="tokenizer_show_loaded", **private)
    save_btn.click(U(save_handler), [ctx.user, state, name, overwrite, ctx.workspace_version],
                   [save_status, state, ctx.workspace_version], api_name="tokenizer_save").success(
        U(summary_handler), [ctx.user, state], [summary], api_name="tokenizer_show_saved", **private)

    encode_io = (U(functools.partial(encode_handler, caps=caps)), [ctx.user, state, enc_text], [enc_html, enc_stats, enc_ids])
    enc_btn.click(*encode_io, api_name="tokenizer_encode", **ctx.light())
    enc_text.submit(*encode_io, api_name="tokenizer_encode_submit", **private, **ctx.light())
    walk_io = (U(walk_handler), [ctx.user, state, walk_text], [walk_md, walk_df])
    walk_btn.click(*walk_io, api_name="tokenizer_walk", **ctx.light())
    walk_text.submit(*walk_io, api_name="tokenizer_walk_submit", **private, **ctx.light())
    vocab_query.change(U(vocab_filter_handler), [ctx.user, state, vocab_query], [vocab_df],
                       api_name="tokenizer_vocab_filter", trigger_mode="always_last")
    merges_query.change(U(merges_filter_handler), [ctx.user, state, merges_query], [merges_df],
                        api_name="tokenizer_merges_filter", trigger_mode="always_last")
    sweep_event = sweep_btn.click(ctx.notice("Sweep"), None, [sweep_status], queue=False, show_progress="hidden").then(
        U(one_build_per_user(ctx, sweep_handler), caps),
        [ctx.user, source, files, paste, kind, min_frequency, normalizer, pre_tokenizer, specials, fallback, largest, state],
        [sweep_status, sweep_plot, sweep_csv], api_name="tokenizer_sweep", **ctx.heavy())
    ctx.reset_on_failure(build_event, status, "Not built: see the message above.")
    ctx.reset_on_failure(sweep_event, sweep_status, "Not run: see the message above.")
    stop_btn.click(None, None, None, cancels=[build_event, sweep_event], api_name="tokenizer_stop", queue=False,
                   **private)
    cmp_btn.click(U(functools.partial(compare_handler, caps=caps)), [ctx.user, cmp_a, cmp_b, cmp_text],
                  [cmp_summary, cmp_plot, cmp_diff, cmp_html_a, cmp_html_b], api_name="tokenizer_compare")

    ctx.on_workspace_change(refresh_saved, [saved, cmp_a, cmp_b], [saved, cmp_a, cmp_b],
                            api_name="tokenizer_saved")
