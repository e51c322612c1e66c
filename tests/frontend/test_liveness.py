"""`liveness.live_before` over loops not expanded yet: what a loop needs on entry."""

import ast
import textwrap

from dycl.frontend.liveness import live_before


def live(source: str, after: set[str]) -> set[str]:
    return live_before(ast.parse(textwrap.dedent(source)).body, after)


def test_a_name_the_body_assigns_before_reading_is_not_live_on_entry():
    assert live("""
        while x.max() > 0:
            aux = None
            if c:
                aux = f(x)
            x = g(x, aux)
    """, {"x"}) == {"x", "c", "f", "g"}


def test_a_name_read_before_it_is_assigned_is_live_through_the_back_edge():
    assert "aux" in live("""
        while x.max() > 0:
            x = g(x, aux)
            aux = f(x)
    """, {"x"})


def test_a_name_live_after_the_loop_stays_live_even_if_the_body_assigns_it():
    assert "y" in live("""
        while x.max() > 0:
            y = f(x)
            x = g(x)
    """, {"x", "y"})


def test_break_needs_what_is_live_after_the_loop_and_continue_what_the_header_needs():
    body = """
        for i in range(n):
            if c:
                break
            if d:
                continue
            t = h(i)
            z = t
    """
    assert live(body, {"z"}) == {"n", "range", "c", "d", "h", "z"}
    assert "t" not in live(body, {"z"})


def test_a_for_binds_its_target_before_each_run_of_the_body():
    assert "head" not in live("""
        for head in heads:
            y = head(y)
    """, {"y"})


def test_a_with_runs_its_body_once():
    assert live("""
        while k < 3:
            with torch.no_grad():
                k = k + 1
                tmp = 2
            y = tmp
    """, {"y"}) == {"k", "torch", "y"}


def test_a_body_it_does_not_model_keeps_everything_it_reads_live():
    assert "aux" in live("""
        while k < 3:
            try:
                aux = 1
            except ValueError:
                pass
            k = k + aux
    """, set())
