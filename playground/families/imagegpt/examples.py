"""ImageGPT's validation examples: the validation digits, picked by index."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tokenizers import Tokenizer
from torch import Generator

from playground.data.examples import AnalysisExample, Example, FamilyExamples
from playground.data.policy import DataPolicy
from playground.errors import DataError
from playground.families.imagegpt.pixels import data_config, split
from playground.workspace import Workspace

if TYPE_CHECKING:  # bundle imports the family registry, which imports this module
    from playground.bundle import Bundle


class DigitExamples(FamilyExamples):
    """The first validation digits; the Generate input is the digit's index."""

    def for_generate(self, data: dict[str, Any], n: int, model: dict[str, Any], workspace: Workspace | None,
                     policy: DataPolicy) -> list[Example]:
        val = split(data_config(data))[1]
        return [Example(f"#{i}: a {val.class_names[int(val.labels[i])]}", str(i), val.class_names[int(val.labels[i])])
                for i in range(min(n, val.n))]

    def for_analysis(self, data: dict[str, Any], n: int) -> list[AnalysisExample]:
        """None: the Analyze tab takes a level string for a pixel model, as for any language model."""
        return []

    def held_out(self, bundle: Bundle, prepared: Any, tokenizer: Tokenizer | None, n: int, gen: Generator) -> Any:
        """Not offered: the experiments explain text models and classifiers."""
        raise DataError("The experiments do not take a pixel model (ImageGPT) yet.")
