"""Hypothesis strategies over DyCL's fuzz generators (the generators are seeded; hypothesis
draws the seeds and sizes, `dycl.fuzz.shrink` does the structural shrinking)."""

from hypothesis import strategies as st

from dycl.fuzz.generate import generate


def programs(max_conditions: int = 5):
    return st.builds(generate, st.integers(0, 2**31 - 1), st.just(max_conditions))


def mutation_cases(seed_texts):
    """(seed file name, mutant text, pipeline) drawn from `seed_texts` [(name, text)]."""
    from dycl.fuzz.ir_campaign import MutationCase

    return st.builds(lambda s, i: MutationCase.make(s, i, seed_texts), st.integers(0, 2**31 - 1), st.integers(0, 10**6))
