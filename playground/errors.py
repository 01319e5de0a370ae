"""User-facing errors. Every message says what went wrong and what to do about it."""


class PlaygroundError(ValueError):
    """A problem the user can fix; the UI shows its message as is (no stack trace)."""


class InvalidNameError(PlaygroundError):
    """A workspace name with characters or a length we do not accept."""


class NotFoundError(PlaygroundError):
    """A tokenizer, model, preset or corpus that does not exist."""


class ConfigError(PlaygroundError):
    """A preset or override with an unknown key or a value of the wrong type."""


class DataError(PlaygroundError):
    """A corpus, image set or pair file that cannot be used as given."""


class OfflineError(PlaygroundError):
    """Something needed the network and there is none."""


class TrainingError(PlaygroundError):
    """Training cannot go on (NaN loss, out of memory, ...)."""


class TooBigError(PlaygroundError):
    """A size above what this server allows (model, batch, text, steps ...); the message says the cap."""
