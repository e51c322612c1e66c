"""The one error host code generation raises (below both the emitter and its driver)."""


class CodegenError(ValueError):
    """A host op that has no Python/numpy translation."""
