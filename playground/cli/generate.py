"""`python -m playground generate CHECKPOINT ...`: sample text, translate, or classify an image.

GPT: `--prompt TEXT` with the sampling knobs; the text streams to stdout as it is generated.
`--context extend` generates past block_size without sliding the window (positions that allow it).
Seq2seq: `--prompt SOURCE`, greedy or `--beam-width W` (+ `--length-penalty A`).
ViT: `--image PATH` prints the class probabilities.
ImageGPT: `--prompt INDEX` completes validation digit INDEX's lower half (`--num-samples N`);
the digits print as text art, and `--save-image PNG` writes the original, given half and completions.
Run facts (tokens/s, the seed to repeat a run) go to stderr.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from PIL import Image

from playground.bundle import Bundle, load_bundle
from playground.cli import workspace_from
from playground.errors import ConfigError
from playground.generation.api import GenerateRequest, generator_of, stream
from playground.generation.batching import close_workers
from playground.generation.events import Done, StepEvent
from playground.generation.family import FamilyGenerator
from playground.generation.filters import SamplingConfig
from playground.generation.lm import CONTEXT_MODES
from playground.settings import resolve_device


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "generate", help="generate text from a checkpoint (GPT, seq2seq) or classify an image (ViT)",
        description="Generate from a checkpoint: a model name in the workspace or a bundle folder.",
    )
    parser.add_argument("checkpoint", help="model name in the workspace, or a folder with config.json")
    parser.add_argument("--prompt", default=None,
                        help="GPT: the prompt; seq2seq: the source text; BERT (bert_mlm): a text with [MASK] to fill")
    parser.add_argument("--image", default=None, help="ViT: an image file to classify")
    parser.add_argument("--invert", action="store_true", help="ViT: invert the image (dark ink on light paper)")
    parser.add_argument("--max-new-tokens", type=int, default=200, help="tokens to generate (default 200)")
    parser.add_argument("--temperature", type=float, default=1.0, help="0 = greedy (default 1.0)")
    parser.add_argument("--top-k", type=int, default=0, help="keep the k most likely tokens (0 = off)")
    parser.add_argument("--top-p", type=float, default=1.0, help="nucleus: smallest set reaching p (1 = off)")
    parser.add_argument("--min-p", type=float, default=0.0, help="drop tokens below min-p x the top probability (0 = off)")
    parser.add_argument("--repetition-penalty", type=float, default=1.0, help="CTRL penalty on seen tokens (1 = off)")
    parser.add_argument("--frequency-penalty", type=float, default=0.0, help="OpenAI frequency penalty (0 = off)")
    parser.add_argument("--presence-penalty", type=float, default=0.0, help="OpenAI presence penalty (0 = off)")
    parser.add_argument("--seed", type=int, default=None, help="seed for sampling (default: random, printed)")
    parser.add_argument("--num-samples", type=int, default=1, help="samples drawn at once (default 1)")
    parser.add_argument("--stop", action="append", default=[], help="stop string (repeatable)")
    parser.add_argument("--beam-width", type=int, default=1, help="seq2seq: beam width (1 = greedy)")
    parser.add_argument("--length-penalty", type=float, default=0.0, help="seq2seq beam: GNMT alpha (0 = off)")
    parser.add_argument("--no-cache", action="store_true", help="GPT: recompute the whole window every token")
    parser.add_argument("--context", choices=CONTEXT_MODES, default="window",
                        help="GPT past block_size: 'window' slides the context (any model), 'extend' keeps every "
                             "token and counts positions on (sinusoidal, RoPE, ALiBi or no positions; default window)")
    parser.add_argument("--device", default="auto", help="auto | cpu | cuda | mps (default auto)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON instead of streaming text")
    parser.add_argument("--save-image", default=None, metavar="PNG",
                        help="ImageGPT: save the original, its given half and the completions as one PNG")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    bundle = load_bundle(args.checkpoint, workspace_from(args), device=resolve_device(args.device))
    generator = generator_of(bundle)
    if args.save_image and not generator.controls.shows_image:
        raise ConfigError(f"{bundle.name!r} is a {generator.what}: its output is not a picture, so --save-image does not apply.")
    if generator.controls.reads_image:
        return _classify(bundle, generator, args)
    if args.image is not None:
        generator.check_input(bundle, args.image)
    if args.prompt is None:
        if generator.controls.prompt_required:
            raise ConfigError(f"{bundle.name!r} is a {generator.what}: pass --prompt "
                              f"{generator.controls.input_label.upper()}.")
        args.prompt = ""
    sampling = SamplingConfig(
        temperature=args.temperature, top_k=args.top_k, top_p=args.top_p, min_p=args.min_p,
        repetition_penalty=args.repetition_penalty, frequency_penalty=args.frequency_penalty,
        presence_penalty=args.presence_penalty,
    )
    request = GenerateRequest(
        prompt=args.prompt, max_new_tokens=args.max_new_tokens, sampling=sampling, seed=args.seed,
        num_samples=args.num_samples, stop=tuple(args.stop), beam_width=args.beam_width,
        length_penalty=args.length_penalty, use_cache=not args.no_cache, context=args.context,
    )
    live = not args.json and generator.streams_live(request)
    out = sys.stdout
    if live and generator.controls.echo_prompt:
        out.write(args.prompt)
        out.flush()
    done: Done | None = None
    try:
        for event in stream(bundle, request):
            if isinstance(event, Done):
                done = event
            elif live and isinstance(event, StepEvent):
                out.write(event.text)
                out.flush()
    finally:
        close_workers()  # the process ends soon: no batch worker may be left inside a torch op
    assert done is not None
    if args.save_image:
        Image.fromarray(generator.final_image(done)).save(Path(args.save_image))
        print(f"[saved {args.save_image}]", file=sys.stderr)
    if args.json:
        print(json.dumps(_as_json(done), indent=2, ensure_ascii=False))
        return 0
    out.write("\n" if live else generator.console_result(done))
    out.flush()
    seed = f", seed {done.seed}" if done.seed is not None else ""
    reasons = ", ".join(sorted({s.stop_reason for s in done.samples}))
    extra = generator.summary(done)
    extra = f"; {extra}" if extra else ""
    print(f"[{done.new_tokens} tokens in {done.elapsed_s:.2f} s, {done.tokens_per_s:.0f} tok/s{seed}; stopped: {reasons}{extra}]",
          file=sys.stderr)
    return 0


def _classify(bundle: Bundle, generator: FamilyGenerator, args: argparse.Namespace) -> int:
    """Print the class probabilities of --image (a table, or JSON)."""
    if args.prompt is not None and args.image is None:
        generator.classify(bundle, args.prompt)  # raises the clear "give an image" error
    if args.image is None:
        raise ConfigError(f"{bundle.name!r} is an {generator.what}: pass --image PATH.")
    result = generator.classify(bundle, args.image, invert=args.invert)
    if args.json:
        print(json.dumps(result.rows(), indent=2))
    else:
        for row in result.rows():
            print(f"{row['rank']:>3}  {row['class']:<24} {row['probability']:.4f}")
    return 0


def _as_json(done: Done) -> dict:
    samples = []
    for s in done.samples:
        item = {"prompt": s.prompt, "text": s.text, "stop_reason": s.stop_reason, "ids": s.ids,
                "tokens": [{"id": e.token_id, "text": e.text, "prob": e.prob,
                            "alternatives": [{"id": a[0], "text": a[1], "prob": a[2]} for a in e.alternatives]}
                           for e in s.events]}
        if s.alignment is not None:
            item["alignment"] = s.alignment.tolist()
            item["source_tokens"] = s.source_tokens
            item["target_tokens"] = s.target_tokens
            item["score"] = s.score
        samples.append(item)
    return {"seed": done.seed, "new_tokens": done.new_tokens, "elapsed_s": done.elapsed_s, "samples": samples,
            **{k: v for k, v in done.info.items() if k != "hypotheses"}}
