"""A tokenizer that records what it is fed, for checking UPR's prompts and the in-loop ART scorer."""

from __future__ import annotations


class Recording:
    """A tokenizer that records the texts it is given, then tokenises them as the real one."""

    def __init__(self, inner):
        self.inner, self.texts = inner, []

    def __call__(self, text, **options):
        self.texts.extend([text] if isinstance(text, str) else text)
        return self.inner(text, **options)

    def __getattr__(self, name):
        return getattr(self.inner, name)

